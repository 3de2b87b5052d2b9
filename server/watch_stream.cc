#include "server/watch_stream.h"

#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "server/convert.h"
#include "server/grpc_status.h"
#include "server/reactor_alarm.h"

namespace leasekeeper::server {
namespace {

namespace pb = ::leasekeeper::v1;

class WatchStream final : public grpc::ServerWriteReactor<pb::WatchResponse>,
                          public WatchSink,
                          public std::enable_shared_from_this<WatchStream> {
 public:
  static WatchStream* Start(CoreOwner& owner,
                            grpc::CallbackServerContext* context,
                            absl::StatusOr<WatchTarget> target) {
    std::shared_ptr<WatchStream> stream(new WatchStream(owner, context));
    stream->self_ = stream;
    if (!target.ok()) {
      stream->FinishOnce(target.status());
    } else {
      stream->Begin(*target);
    }
    return stream.get();
  }

  void OnWriteDone(bool ok) override {
    {
      absl::MutexLock lock(&mu_);
      writing_ = false;
      if (!ok) {
        // The stream broke or was cancelled: OnCancel follows, or came.
        FinishLocked(absl::CancelledError("watch stream broken"));
        return;
      }
      if (pending_finish_.has_value()) {
        FinishLocked(*pending_finish_);
        return;
      }
      if (!NextWriteLocked()) return;
    }
    StartWrite(&current_);
  }

  void OnCancel() override {
    FinishOnce(absl::CancelledError("watch cancelled"));
  }

  void OnDone() override {
    cut_alarm_.Cancel();
    WatchHub::WatcherId id = 0;
    {
      absl::MutexLock lock(&mu_);
      id = id_;
    }
    if (id != 0) owner_.watch_hub().Unsubscribe(id);
    std::shared_ptr<WatchStream> keep = std::move(self_);
  }

  void Wake() override {
    {
      absl::MutexLock lock(&mu_);
      if (writing_) {
        // The hub wakes a busy stream only when it was cut or ended: if the
        // write in flight never completes, the client does not read at all.
        ArmCutAlarmLocked();
        return;
      }
      if (!NextWriteLocked()) return;
    }
    StartWrite(&current_);
  }

 private:
  WatchStream(CoreOwner& owner, grpc::CallbackServerContext* context)
      : owner_(owner), context_(context) {}

  void Begin(const WatchTarget& target) {
    absl::StatusOr<WatchStart> start = owner_.Watch(target, shared_from_this());
    if (!start.ok()) {
      FinishOnce(start.status());
      return;
    }
    {
      absl::MutexLock lock(&mu_);
      id_ = start->id;
      const absl::Time wall_now = absl::Now();
      pb::WatchResponse message;
      for (const WatchStart::Lock& locked : start->locks) {
        message.Clear();
        ToWatchedLock(locked.name, locked.holders, locked.queue, wall_now,
                      message.mutable_current());
        outbox_.push_back(message.SerializeAsString());
      }
      message.Clear();
      message.mutable_synced()->set_sequence(start->sequence);
      message.mutable_synced()->set_locks(
          static_cast<int64_t>(start->locks.size()));
      outbox_.push_back(message.SerializeAsString());
    }
    // The snapshot, like any answer, is shown only once durable.
    owner_.durability().WhenAllDurable(
        [self = shared_from_this()](absl::Status durable) {
          {
            absl::MutexLock lock(&self->mu_);
            if (!durable.ok()) {
              self->FinishLocked(durable);
              return;
            }
            self->snapshot_durable_ = true;
            if (!self->NextWriteLocked()) return;
          }
          self->StartWrite(&self->current_);
        });
  }

  void ArmCutAlarmLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (cut_alarm_armed_) return;
    cut_alarm_armed_ = true;
    cut_alarm_.Set(std::chrono::system_clock::now() +
                       absl::ToChronoMilliseconds(kWatchCutGrace),
                   weak_from_this(), &WatchStream::CutGraceOver);
  }

  // Unless a write is in flight: puts the next message in current_ and
  // marks a write in flight (true: the caller calls StartWrite(&current_)
  // once it has released mu_), or finishes with the hub's end. False when
  // nothing is to be written now (the hub wakes the stream).
  bool NextWriteLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (writing_ || finish_called_ || !snapshot_durable_) return false;
    if (!outbox_.empty()) {
      // Serialized by Begin, so it cannot fail to parse.
      (void)current_.ParseFromString(outbox_.front());
      outbox_.pop_front();
      writing_ = true;
      return true;
    }
    WatchHub::Next next = owner_.watch_hub().Take(id_);
    if (next.event.has_value()) {
      current_.Clear();
      ToProto(*next.event, current_.mutable_event());
      writing_ = true;
      return true;
    }
    if (next.end.has_value()) FinishLocked(*next.end);
    return false;
  }

  void CutGraceOver() {
    {
      absl::MutexLock lock(&mu_);
      if (!writing_) return;  // the write completed after all
    }
    context_->TryCancel();
  }

  void FinishOnce(const absl::Status& status) {
    absl::MutexLock lock(&mu_);
    FinishLocked(status);
  }

  // Finishes once; after the write in flight, if any (gRPC allows no
  // Finish while a write is outstanding).
  void FinishLocked(const absl::Status& status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finish_called_) return;
    if (!pending_finish_.has_value()) pending_finish_ = status;
    if (writing_) return;
    finish_called_ = true;
    Finish(PrepareFinish(context_, *pending_finish_));
  }

  CoreOwner& owner_;
  grpc::CallbackServerContext* const context_;
  std::shared_ptr<WatchStream> self_;
  ReactorAlarm<WatchStream> cut_alarm_;

  absl::Mutex mu_;
  WatchHub::WatcherId id_ ABSL_GUARDED_BY(mu_) = 0;
  // The snapshot's messages, serialized: a message object costs several
  // times its bytes, and a snapshot of every lock is as long as the table.
  std::deque<std::string> outbox_ ABSL_GUARDED_BY(mu_);
  // The message being written: filled under mu_ while writing_ is false,
  // then gRPC's until the write's OnWriteDone.
  pb::WatchResponse current_;
  bool snapshot_durable_ ABSL_GUARDED_BY(mu_) = false;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finish_called_ ABSL_GUARDED_BY(mu_) = false;
  bool cut_alarm_armed_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<absl::Status> pending_finish_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

grpc::ServerWriteReactor<v1::WatchResponse>* StartWatchStream(
    CoreOwner& owner, grpc::CallbackServerContext* context,
    absl::StatusOr<WatchTarget> target) {
  return WatchStream::Start(owner, context, std::move(target));
}

}  // namespace leasekeeper::server
