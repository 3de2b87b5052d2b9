#include "server/watch_stream.h"

#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "grpcpp/alarm.h"
#include "server/convert.h"
#include "server/grpc_status.h"

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
    PumpLocked();
  }

  void OnCancel() override {
    FinishOnce(absl::CancelledError("watch cancelled"));
  }

  void OnDone() override {
    cut_alarm_.Cancel();  // drops the alarm's reference to this stream
    WatchHub::WatcherId id = 0;
    {
      absl::MutexLock lock(&mu_);
      id = id_;
    }
    if (id != 0) owner_.watch_hub().Unsubscribe(id);
    std::shared_ptr<WatchStream> keep = std::move(self_);
  }

  void Wake() override {
    absl::MutexLock lock(&mu_);
    if (!writing_) {
      PumpLocked();
      return;
    }
    // The hub wakes a busy stream only when it was cut or ended: if the
    // write in flight never completes, the client does not read at all.
    if (cut_alarm_armed_) return;
    cut_alarm_armed_ = true;
    cut_alarm_.Set(std::chrono::system_clock::now() +
                       absl::ToChronoMilliseconds(kWatchCutGrace),
                   [self = shared_from_this()](bool fired) {
                     if (fired) self->CutGraceOver();
                   });
  }

 private:
  WatchStream(CoreOwner& owner, grpc::CallbackServerContext* context)
      : owner_(owner), context_(context) {}

  void Begin(const WatchTarget& target) {
    absl::StatusOr<CoreOwner::WatchStart> start =
        owner_.Watch(target, shared_from_this());
    if (!start.ok()) {
      FinishOnce(start.status());
      return;
    }
    {
      absl::MutexLock lock(&mu_);
      id_ = start->id;
      const absl::Time wall_now = absl::Now();
      for (const CoreOwner::WatchStart::Lock& locked : start->locks) {
        pb::WatchResponse message;
        ToWatchedLock(locked.name, locked.holders, locked.queue, wall_now,
                      message.mutable_current());
        outbox_.push_back(std::move(message));
      }
      pb::WatchResponse synced;
      synced.mutable_synced()->set_sequence(start->sequence);
      synced.mutable_synced()->set_locks(
          static_cast<int64_t>(start->locks.size()));
      outbox_.push_back(std::move(synced));
    }
    // The snapshot, like any answer, is shown only once durable.
    owner_.AfterDurable([self = shared_from_this()](absl::Status durable) {
      absl::MutexLock lock(&self->mu_);
      if (!durable.ok()) {
        self->FinishLocked(durable);
        return;
      }
      self->snapshot_durable_ = true;
      self->PumpLocked();
    });
  }

  // Starts the next write, or finishes, unless a write is in flight.
  void PumpLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (writing_ || finish_called_ || !snapshot_durable_) return;
    if (!outbox_.empty()) {
      current_ = std::move(outbox_.front());
      outbox_.pop_front();
      StartWriteLocked();
      return;
    }
    WatchHub::Next next = owner_.watch_hub().Take(id_);
    if (next.event.has_value()) {
      current_.Clear();
      ToProto(*next.event, current_.mutable_event());
      StartWriteLocked();
    } else if (next.end.has_value()) {
      FinishLocked(*next.end);
    }
    // Otherwise nothing to send: the hub wakes the stream.
  }

  void StartWriteLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    writing_ = true;
    StartWrite(&current_);
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
  grpc::Alarm cut_alarm_;

  absl::Mutex mu_;
  WatchHub::WatcherId id_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<pb::WatchResponse> outbox_ ABSL_GUARDED_BY(mu_);  // snapshot
  pb::WatchResponse current_ ABSL_GUARDED_BY(mu_);  // being written
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
