// EtcdLease: an etcd lease kept alive by this process (keepalives every
// ttl / 4 on one stream), and the part of its life this process can be sure
// of: Valid() until valid_until = s + t - margin of the newest answered
// keepalive (sent at local monotonic time s, answered with TTL t), and never
// again once that passed or etcd answered TTL 0. A cluster node's member
// key and leader key live on it. Why that bound is safe, and the fault
// suite's failpoint (Valid() always true): docs/design/cluster.md.
//
// Thread-safety: every method is thread-safe; the keepalive runs on the
// lease's own threads.
#ifndef LEASEKEEPER_CLUSTER_ETCD_LEASE_H_
#define LEASEKEEPER_CLUSTER_ETCD_LEASE_H_

#include <chrono>
#include <deque>
#include <memory>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "cluster/etcd_client.h"

namespace leasekeeper::storage {

struct EtcdLeaseOptions {
  // The lease's TTL. etcd rounds a TTL below 1.5 x its --election-timeout
  // up to that; leasekeeper's tests run etcd with --election-timeout 500.
  std::chrono::seconds ttl{1};
  // valid_until = send time of the newest answered keepalive + ttl - margin.
  std::chrono::milliseconds margin{250};
};

class EtcdLease {
 public:
  using Clock = std::chrono::steady_clock;

  // Grants a lease and starts keeping it alive. Outcomes: the lease;
  // etcd's error (Unavailable without quorum).
  static absl::StatusOr<std::unique_ptr<EtcdLease>> Grant(
      EtcdClient& client, EtcdLeaseOptions options);

  // Stops the keepalive; revokes the lease if it still may be valid (so
  // the keys on it go at once, not a TTL later). Best effort.
  ~EtcdLease();
  EtcdLease(const EtcdLease&) = delete;
  EtcdLease& operator=(const EtcdLease&) = delete;

  int64_t id() const { return id_; }

  // True until the lease is lost (see above); never true again after.
  bool Valid() const;

 private:
  EtcdLease(EtcdClient& client, EtcdLeaseOptions options, int64_t id,
            Clock::time_point valid_until);
  void SendLoop();
  void ReadLoop(
      grpc::ClientReaderWriter<etcdserverpb::LeaseKeepAliveRequest,
                               etcdserverpb::LeaseKeepAliveResponse>* stream);

  EtcdClient& client_;
  const EtcdLeaseOptions options_;
  const int64_t id_;

  mutable absl::Mutex mu_;
  Clock::time_point valid_until_ ABSL_GUARDED_BY(mu_);
  bool lost_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Send times of the keepalives not answered yet, oldest first (etcd
  // answers a stream's keepalives in order).
  std::deque<Clock::time_point> sent_ ABSL_GUARDED_BY(mu_);
  grpc::ClientContext* stream_context_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::thread sender_;
};

}  // namespace leasekeeper::storage

#endif  // LEASEKEEPER_CLUSTER_ETCD_LEASE_H_
