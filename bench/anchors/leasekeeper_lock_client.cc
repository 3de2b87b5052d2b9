#include "leasekeeper_lock_client.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "grpc_channel.h"

namespace leasekeeper::bench {
namespace {

constexpr absl::Duration kCallTimeout = absl::Seconds(10);

// A call's error as the workloads report errors.
std::string CallErrorText(const v1::SessionCallError& error) {
  return absl::StrCat("leasekeeper ", error.code(), ": ", error.message());
}

}  // namespace

LeasekeeperLockClient::LeasekeeperLockClient(GrpcLoop& loop,
                                             const std::string& target,
                                             std::string client_id)
    : loop_(loop),
      client_id_(std::move(client_id)),
      stub_(v1::LockService::NewStub(OwnConnection(target))),
      stream_(
          loop,
          [this](v1::SessionResponse& message) { OnMessage(message); },
          [this](const grpc::Status& status) { OnStreamFinished(status); }) {}

void LeasekeeperLockClient::Start(Done done) {
  on_opened_ = std::move(done);
  stream_.Start([this](grpc::ClientContext* context, grpc::CompletionQueue* cq) {
    return stub_->PrepareAsyncSession(context, cq);
  });
  v1::SessionRequest open;
  open.mutable_open()->set_client_id(client_id_);
  stream_.Send(std::move(open));
}

void LeasekeeperLockClient::Call(v1::SessionCall call, CallDone done) {
  if (stream_.finished()) {
    v1::SessionCallResult ended;
    ended.mutable_error()->set_code(grpc::StatusCode::UNAVAILABLE);
    ended.mutable_error()->set_message("the session stream has ended");
    done(ended);
    return;
  }
  const uint64_t call_id = next_call_id_++;
  call.set_call_id(call_id);
  calls_.emplace(call_id, std::move(done));
  v1::SessionRequest request;
  *request.mutable_call() = std::move(call);
  stream_.Send(std::move(request));
}

void LeasekeeperLockClient::OnMessage(const v1::SessionResponse& message) {
  if (message.has_opened()) {
    if (on_opened_) std::exchange(on_opened_, nullptr)("");
    return;
  }
  if (!message.has_call_result()) return;  // notices: nothing to do here
  auto it = calls_.find(message.call_result().call_id());
  if (it == calls_.end()) return;
  CallDone done = std::move(it->second);
  calls_.erase(it);
  done(message.call_result());
}

void LeasekeeperLockClient::OnStreamFinished(const grpc::Status& status) {
  if (on_opened_) {
    std::exchange(on_opened_, nullptr)(
        StatusText(status.ok() ? grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                              "the session stream ended "
                                              "unopened")
                               : status));
  }
  v1::SessionCallResult ended;
  ended.mutable_error()->set_code(grpc::StatusCode::UNAVAILABLE);
  ended.mutable_error()->set_message("the session stream ended: " +
                                     StatusText(status));
  auto calls = std::move(calls_);
  calls_.clear();
  for (auto& [call_id, done] : calls) done(ended);
  if (on_stream_finished_) std::exchange(on_stream_finished_, nullptr)();
}

void LeasekeeperLockClient::Stop(absl::AnyInvocable<void()> done) {
  if (!stream_.started() || stream_.finished()) {
    done();
    return;
  }
  on_stream_finished_ = std::move(done);
  v1::SessionRequest close;
  close.mutable_close();
  stream_.Send(std::move(close));
}

void LeasekeeperLockClient::Acquire(const std::string& lock, int64_t ttl_ms,
                                    bool wait,
                                    absl::AnyInvocable<void()> on_waiting,
                                    AcquireDone done) {
  v1::SessionCall call;
  v1::AcquireRequest& request = *call.mutable_acquire();
  request.set_lock(lock);
  request.set_ttl_ms(ttl_ms);
  request.set_wait_timeout_ms(wait ? kWaitTimeoutMs : 0);
  uint64_t seq = ++acquire_seq_;
  int64_t sent_ns = NowNs();
  Call(std::move(call), [this, sent_ns, done = std::move(done)](
                            const v1::SessionCallResult& answer) mutable {
    ++acquires_done_;
    AcquireResult result;
    result.lease_start_ns = sent_ns;
    if (answer.has_error()) {
      result.error = CallErrorText(answer.error());
    } else if (answer.acquire().has_granted()) {
      result.granted = true;
      result.ttl_ms = answer.acquire().granted().ttl_ms();
    } else if (answer.acquire().has_queued()) {
      // Only for wait == false. The request stays queued on the server;
      // the workloads never ask for a busy lock without waiting.
      result.error = "queued without waiting";
    } else {
      result.error = "acquire neither granted nor queued";
    }
    done(std::move(result));
  });
  if (wait && on_waiting) {
    PollQueued(
        lock, seq,
        std::make_shared<absl::AnyInvocable<void()>>(std::move(on_waiting)));
  }
}

void LeasekeeperLockClient::PollQueued(
    const std::string& lock, uint64_t acquire_seq,
    std::shared_ptr<absl::AnyInvocable<void()>> on_waiting) {
  if (acquires_done_ >= acquire_seq) return;  // granted at once
  v1::InspectRequest request;
  request.set_lock(lock);
  StartUnary<v1::InspectResponse>(
      loop_,
      [this](grpc::ClientContext* c, const v1::InspectRequest& r,
             grpc::CompletionQueue* cq) {
        return stub_->PrepareAsyncInspect(c, r, cq);
      },
      request, kCallTimeout,
      [this, lock, acquire_seq, on_waiting](
          const grpc::Status& status, v1::InspectResponse& response) mutable {
        if (acquires_done_ >= acquire_seq) return;
        if (status.ok()) {
          for (const v1::Waiter& waiter : response.queue()) {
            if (waiter.client_id() == client_id_) {
              (*on_waiting)();
              return;
            }
          }
        }
        loop_.After(absl::Microseconds(100),
                    [this, lock, acquire_seq, on_waiting] {
                      PollQueued(lock, acquire_seq, on_waiting);
                    });
      });
}

void LeasekeeperLockClient::Release(const std::string& lock, Done done) {
  v1::SessionCall call;
  call.mutable_release()->set_lock(lock);
  Call(std::move(call), [done = std::move(done)](
                            const v1::SessionCallResult& answer) mutable {
    if (answer.has_error()) {
      done(CallErrorText(answer.error()));
    } else if (answer.release().result() != v1::RELEASE_RESULT_RELEASED) {
      done("release did not release");
    } else {
      done("");
    }
  });
}

}  // namespace leasekeeper::bench
