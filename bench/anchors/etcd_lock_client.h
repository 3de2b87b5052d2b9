// EtcdLockClient: a lock on one etcd key, the way etcd's own docs build one
// from its primitives, through etcd's gRPC API (KV, Lease, Watch) with the
// raw asynchronous gRPC API.
//
// Method, per call:
//  - Start: LeaseGrant of kSessionTtlMs (30 s), the client's session lease
//    (as clientv3/concurrency.NewSession does); acquisitions with that ttl
//    attach to it, so a W1 pair costs two RPCs, as it does on the others.
//    An Acquire with any other ttl (W4's 2 s) first grants a lease of its
//    own, ceil(ttl) seconds, and the lease is timed from that LeaseGrant.
//  - Acquire: one Txn
//      if CreateRevision(lock) == 0 then Put(lock, client_id, lease)
//      else Range(lock)
//    succeeded == true is a grant; the create revision is kept for Release.
//  - wait: before the first attempt, a watch on the key (NOPUT filter) on
//    the client's one Watch stream, created once per key and kept for the
//    run (cheaper for etcd than clientv3's watch per wait, which costs a
//    round trip each time). After a failed Txn at revision R, wait for a
//    DELETE event with revision > R (or one already seen), then Txn again.
//    Every waiter wakes on each delete (etcd's single-key lock has no
//    queue); one wins.
//  - Release: one Txn
//      if CreateRevision(lock) == <ours> then DeleteRange(lock)
//    so a holder whose lease ran out never deletes its successor's key.
//  - Expiry: etcd's lessor revokes expired leases (checked every 500 ms),
//    deleting their keys through raft; the watch then fires.
// One TCP connection per client; etcd's default durability (an fsync of its
// WAL per raft batch).

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
