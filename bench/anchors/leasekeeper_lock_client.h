// LeasekeeperLockClient: leasekeeper's own lock, through the raw
// asynchronous gRPC API (not the client library, so that the figures are
// the server's).
//
// Method, per call:
//  - Acquire: one Acquire RPC {client_id, lock, ttl_ms}; wait == false
//    sends wait_timeout_ms = 0, wait == true sends kWaitTimeoutMs, and the
//    server answers the moment the lock is granted (push, no polling).
//    No session and no request_id: a lease needs neither, and Redis and
//    etcd get no idempotency either.
//  - on_waiting: Inspect RPCs on the same connection, every 100 us, until
//    the client shows in the lock's queue. Outside every measured interval.
//  - Release: one Release RPC.
// One TCP connection per client (grpc_channel.h).

#ifndef LEASEKEEPER_BENCH_ANCHORS_LEASEKEEPER_LOCK_CLIENT_H_
#define LEASEKEEPER_BENCH_ANCHORS_LEASEKEEPER_LOCK_CLIENT_H_

#include <memory>
#include <string>

#include "grpc_loop.h"
#include "leasekeeper/v1/lock_service.grpc.pb.h"
#include "lock_client.h"

namespace leasekeeper::bench {

class LeasekeeperLockClient final : public LockClient {
 public:
  // How long a waiting Acquire may wait on the server.
  static constexpr int64_t kWaitTimeoutMs = 60'000;

  LeasekeeperLockClient(GrpcLoop& loop, const std::string& target,
                        std::string client_id);

  Loop& loop() override { return loop_; }
  void Start(Done done) override;
  void Acquire(const std::string& lock, int64_t ttl_ms, bool wait,
               absl::AnyInvocable<void()> on_waiting,
               AcquireDone done) override;
  void Release(const std::string& lock, Done done) override;
  void Stop(absl::AnyInvocable<void()> done) override { done(); }

 private:
  // Calls Inspect until client_id_ is in `lock`'s queue or the Acquire with
  // number `acquire_seq` has completed; then on_waiting (in the first case).
  void PollQueued(const std::string& lock, uint64_t acquire_seq,
                  std::shared_ptr<absl::AnyInvocable<void()>> on_waiting);

  GrpcLoop& loop_;
  const std::string client_id_;
  std::unique_ptr<v1::LockService::Stub> stub_;
  uint64_t acquire_seq_ = 0;    // Acquires started
  uint64_t acquires_done_ = 0;  // Acquires completed
};

}  // namespace leasekeeper::bench

#endif  // LEASEKEEPER_BENCH_ANCHORS_LEASEKEEPER_LOCK_CLIENT_H_
