// LeasekeeperLockClient: leasekeeper's own lock, through the raw
// asynchronous gRPC API (not the client library, so that the figures are
// the server's), the way the client library talks to the server: over the
// client's Session stream.
//
// Method, per call:
//  - Start: opens the client's Session stream (`open`, wait for `opened`).
//    The session also stands in for etcd's session lease: a client that
//    dies loses its locks after the grace.
//  - Acquire: one SessionCall {acquire: lock, ttl_ms} on the stream (client
//    and session filled in by the server); wait == false sends
//    wait_timeout_ms = 0, wait == true sends kWaitTimeoutMs, and the server
//    answers the moment the lock is granted (push, no polling). No
//    request_id: Redis and etcd get no idempotency either.
//  - on_waiting: Inspect RPCs on the same connection, every 100 us, until
//    the client shows in the lock's queue. Outside every measured interval.
//  - Release: one SessionCall {release: lock}.
//  - Stop: `close` (the server finishes the stream).
// One TCP connection per client (grpc_channel.h).

#ifndef LEASEKEEPER_BENCH_ANCHORS_LEASEKEEPER_LOCK_CLIENT_H_
#define LEASEKEEPER_BENCH_ANCHORS_LEASEKEEPER_LOCK_CLIENT_H_

#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "bidi_stream.h"
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
  void Stop(absl::AnyInvocable<void()> done) override;

 private:
  using CallDone = absl::AnyInvocable<void(const v1::SessionCallResult&)>;

  // Sends `call` on the stream; done runs with its result (an UNAVAILABLE
  // error result if the stream ends first).
  void Call(v1::SessionCall call, CallDone done);
  void OnMessage(const v1::SessionResponse& message);
  void OnStreamFinished(const grpc::Status& status);

  // Calls Inspect until client_id_ is in `lock`'s queue or the Acquire with
  // number `acquire_seq` has completed; then on_waiting (in the first case).
  void PollQueued(const std::string& lock, uint64_t acquire_seq,
                  std::shared_ptr<absl::AnyInvocable<void()>> on_waiting);

  GrpcLoop& loop_;
  const std::string client_id_;
  std::unique_ptr<v1::LockService::Stub> stub_;
  uint64_t acquire_seq_ = 0;    // Acquires started
  uint64_t acquires_done_ = 0;  // Acquires completed

  BidiStream<v1::SessionRequest, v1::SessionResponse> stream_;
  Done on_opened_;
  absl::AnyInvocable<void()> on_stream_finished_;
  uint64_t next_call_id_ = 1;
  absl::flat_hash_map<uint64_t, CallDone> calls_;
};

}  // namespace leasekeeper::bench

#endif  // LEASEKEEPER_BENCH_ANCHORS_LEASEKEEPER_LOCK_CLIENT_H_
