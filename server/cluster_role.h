// ClusterRole: what the gRPC layer asks about this node's place in a
// cluster: may it serve lock calls now, and how does it describe the
// cluster (the ClusterStatus RPC). LockServiceImpl asks it before every
// lock call (Acquire, Renew, Release, Write, Read, Inspect, Status,
// ListLocks, ForceRelease, Session); ServerInfo and ClusterStatus are
// answered whatever the role.
//
// Implementations: SingleNodeRole (below: no --cluster, always the leader)
// and ClusterNode (server/cluster_node.h).
//
// Thread-safety: both methods are called from gRPC threads concurrently;
// implementations are thread-safe.
#ifndef LEASEKEEPER_SERVER_CLUSTER_ROLE_H_
#define LEASEKEEPER_SERVER_CLUSTER_ROLE_H_

#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "leasekeeper/v1/lock_service.pb.h"

namespace leasekeeper::server {

class ClusterRole {
 public:
  virtual ~ClusterRole() = default;
  // OK when this node serves lock calls now; otherwise the refusal to
  // answer with (NotLeader, server_errors.h). Cost: O(1), no I/O.
  virtual absl::Status CheckServing() const = 0;
  // Fills the ClusterStatus answer. Cost: O(members), no I/O.
  virtual void FillStatus(v1::ClusterStatusResponse* status) const = 0;
};

// A node without --cluster: the leader of a cluster of one, at its listen
// address, epoch 0.
class SingleNodeRole final : public ClusterRole {
 public:
  // The bound address, once known (port 0 becomes the real port).
  void SetAddress(std::string address) {
    absl::MutexLock lock(&mu_);
    address_ = std::move(address);
  }
  absl::Status CheckServing() const override { return absl::OkStatus(); }
  void FillStatus(v1::ClusterStatusResponse* status) const override {
    absl::MutexLock lock(&mu_);
    status->set_role(v1::LEADER);
    status->set_leader_address(address_);
    status->set_epoch(0);
  }

 private:
  mutable absl::Mutex mu_;
  std::string address_ ABSL_GUARDED_BY(mu_);
};

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_CLUSTER_ROLE_H_
