// EtcdLockClient: a lock on one etcd key, the way etcd's own docs build one
// from its primitives, through etcd's gRPC API (KV, Lease, Watch) with the
// raw asynchronous gRPC API: a session lease per client (LeaseGrant at
// Start); Acquire is one Txn "if CreateRevision(lock) == 0 then Put(lock,
// lease) else Range(lock)"; a waiter watches the key (one Watch stream per
// client, a watch per key kept for the run) and tries again after a delete;
// Release is one Txn "if CreateRevision(lock) == ours then DeleteRange", so
// a holder whose lease ran out never deletes its successor's key. One TCP
// connection per client. bench/README.md ("How each system is driven")
// gives the method in full.

#ifndef LEASEKEEPER_BENCH_ANCHORS_ETCD_LOCK_CLIENT_H_
#define LEASEKEEPER_BENCH_ANCHORS_ETCD_LOCK_CLIENT_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "etcd/etcdserver/etcdserverpb/rpc.grpc.pb.h"
#include "bidi_stream.h"
#include "grpc_loop.h"
#include "lock_client.h"

namespace leasekeeper::bench {

class EtcdLockClient final : public LockClient {
 public:
  static constexpr int64_t kSessionTtlMs = 30'000;

  EtcdLockClient(GrpcLoop& loop, const std::string& target,
                 std::string client_id);

  Loop& loop() override { return loop_; }
  void Start(Done done) override;
  void Acquire(const std::string& lock, int64_t ttl_ms, bool wait,
               absl::AnyInvocable<void()> on_waiting,
               AcquireDone done) override;
  void Release(const std::string& lock, Done done) override;
  void Stop(absl::AnyInvocable<void()> done) override;

 private:
  struct KeyWatch {
    bool created = false;
    std::vector<absl::AnyInvocable<void()>> on_created;
    int64_t last_delete_revision = 0;
    // A waiter parked until a delete with revision > park_revision.
    int64_t park_revision = 0;
    absl::AnyInvocable<void()> parked;
  };
  struct Attempt {
    std::string lock;
    int64_t lease_id = 0;
    int64_t lease_start_ns = 0;
    int64_t ttl_ms = 0;
    bool wait = false;
    bool first = true;
    absl::AnyInvocable<void()> on_waiting;
    AcquireDone done;
  };

  void Grant(int64_t ttl_ms,
             absl::AnyInvocable<void(std::string error, int64_t lease_id,
                                     int64_t ttl_ms, int64_t sent_ns)>
                 done);
  void TryTxn(std::unique_ptr<Attempt> attempt);
  // Runs `then` once `lock` is watched.
  void EnsureWatch(const std::string& lock, absl::AnyInvocable<void()> then);
  void OnWatchResponse(const etcdserverpb::WatchResponse& response);

  GrpcLoop& loop_;
  const std::string client_id_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<etcdserverpb::KV::Stub> kv_;
  std::unique_ptr<etcdserverpb::Lease::Stub> lease_;
  std::unique_ptr<etcdserverpb::Watch::Stub> watch_;
  int64_t session_lease_id_ = 0;
  int64_t session_lease_start_ns_ = 0;
  absl::flat_hash_map<std::string, int64_t> held_;  // lock -> create revision

  // The Watch stream, opened at the first wait.
  BidiStream<etcdserverpb::WatchRequest, etcdserverpb::WatchResponse> stream_;
  std::deque<std::string> creating_;  // locks whose create awaits its answer
  absl::flat_hash_map<int64_t, std::string> lock_of_watch_;
  absl::flat_hash_map<std::string, KeyWatch> watches_;
  absl::AnyInvocable<void()> on_stream_finished_;
};

}  // namespace leasekeeper::bench

#endif  // LEASEKEEPER_BENCH_ANCHORS_ETCD_LOCK_CLIENT_H_
