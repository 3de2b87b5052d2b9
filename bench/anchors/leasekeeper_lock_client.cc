#include "leasekeeper_lock_client.h"

#include <utility>

#include "grpc_channel.h"

namespace leasekeeper::bench {
namespace {

constexpr absl::Duration kCallTimeout = absl::Seconds(10);

}  // namespace

LeasekeeperLockClient::LeasekeeperLockClient(GrpcLoop& loop,
                                             const std::string& target,
                                             std::string client_id)
    : loop_(loop),
      client_id_(std::move(client_id)),
      stub_(v1::LockService::NewStub(OwnConnection(target))) {}

void LeasekeeperLockClient::Start(Done done) {
  // Any cheap call opens the connection before measuring.
  v1::InspectRequest request;
  request.set_lock("leasekeeper-bench/connect");
  StartUnary<v1::InspectResponse>(
      loop_,
      [this](grpc::ClientContext* c, const v1::InspectRequest& r,
             grpc::CompletionQueue* cq) {
        return stub_->PrepareAsyncInspect(c, r, cq);
      },
      request, kCallTimeout,
      [done = std::move(done)](const grpc::Status& status,
                               v1::InspectResponse&) mutable {
        done(status.ok() ? "" : StatusText(status));
      });
}

void LeasekeeperLockClient::Acquire(const std::string& lock, int64_t ttl_ms,
                                    bool wait,
                                    absl::AnyInvocable<void()> on_waiting,
                                    AcquireDone done) {
  v1::AcquireRequest request;
  request.set_client_id(client_id_);
  request.set_lock(lock);
  request.set_ttl_ms(ttl_ms);
  request.set_wait_timeout_ms(wait ? kWaitTimeoutMs : 0);
  uint64_t seq = ++acquire_seq_;
  int64_t sent_ns = NowNs();
  StartUnary<v1::AcquireResponse>(
      loop_,
      [this](grpc::ClientContext* c, const v1::AcquireRequest& r,
             grpc::CompletionQueue* cq) {
        return stub_->PrepareAsyncAcquire(c, r, cq);
      },
      request,
      wait ? absl::Milliseconds(kWaitTimeoutMs) + kCallTimeout : kCallTimeout,
      [this, sent_ns, done = std::move(done)](
          const grpc::Status& status, v1::AcquireResponse& response) mutable {
        ++acquires_done_;
        AcquireResult result;
        result.lease_start_ns = sent_ns;
        if (!status.ok()) {
          result.error = StatusText(status);
        } else if (response.has_granted()) {
          result.granted = true;
          result.ttl_ms = response.granted().ttl_ms();
        } else if (response.has_queued()) {
          // Only for wait == false. The request stays queued on the server;
          // the workloads never ask for a busy lock without waiting.
          result.error = "queued without waiting";
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
  v1::ReleaseRequest request;
  request.set_client_id(client_id_);
  request.set_lock(lock);
  StartUnary<v1::ReleaseResponse>(
      loop_,
      [this](grpc::ClientContext* c, const v1::ReleaseRequest& r,
             grpc::CompletionQueue* cq) {
        return stub_->PrepareAsyncRelease(c, r, cq);
      },
      request, kCallTimeout,
      [done = std::move(done)](const grpc::Status& status,
                               v1::ReleaseResponse& response) mutable {
        if (!status.ok()) {
          done(StatusText(status));
        } else if (response.result() != v1::RELEASE_RESULT_RELEASED) {
          done("release did not release");
        } else {
          done("");
        }
      });
}

}  // namespace leasekeeper::bench
