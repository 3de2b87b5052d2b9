// Leader election on etcd: Campaign creates the leader key (etcd_keys.h) on
// the candidate's lease only if it does not exist, in one transaction;
// ReadLeader observes it; Resign deletes it. The key's create revision is
// the leadership's epoch, which EtcdLog compares in every append. The shape
// follows etcd's client/v3/concurrency/election.go without its queue of
// candidates (a loser polls). docs/design/cluster.md ("Election and epoch").
//
// Thread-safety: pure functions over a thread-safe client.
#ifndef LEASEKEEPER_CLUSTER_ETCD_ELECTION_H_
#define LEASEKEEPER_CLUSTER_ETCD_ELECTION_H_

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cluster/etcd_client.h"
#include "cluster/etcd_keys.h"

namespace leasekeeper::storage {

// The leader key as it stands.
struct LeaderView {
  LeaderRecord leader;
  int64_t epoch = 0;  // the key's create revision
  int64_t lease = 0;  // the lease it lives on
};

struct CampaignResult {
  bool won = false;
  // Won: this node's leadership. Lost: the current leader's.
  LeaderView view;
};

// Creates the leader key with `me` on `lease_id` if no key exists: reads
// it, and only when there is none tries the create-if-absent transaction
// (so a candidate polling a living leader writes nothing to etcd's raft
// log). Outcomes: won (view.epoch: the new epoch) or lost (the current
// leader, or none if it vanished between the transaction's compare and its
// read); etcd's error.
absl::StatusOr<CampaignResult> Campaign(EtcdClient& client,
                                        const ClusterKeys& keys,
                                        int64_t lease_id,
                                        const LeaderRecord& me);

// The current leader, or nullopt when there is none. Outcomes: etcd's error.
absl::StatusOr<std::optional<LeaderView>> ReadLeader(EtcdClient& client,
                                                     const ClusterKeys& keys);

// Deletes the leader key if it still has `epoch` (a leader shutting down
// hands over at once instead of a lease's time later). Best effort.
absl::Status Resign(EtcdClient& client, const ClusterKeys& keys,
                    int64_t epoch);

}  // namespace leasekeeper::storage

#endif  // LEASEKEEPER_CLUSTER_ETCD_ELECTION_H_
