// SnapshotSource: where a cluster follower whose log position was trimmed
// from etcd gets a snapshot of another member (EtcdLogFollower). The
// daemon's source asks the leader over the internal ClusterPeer service
// (cluster/peer_snapshot_source.h); tests feed the follower a fake.
//
// Thread-safety: Fetch from one thread at a time (the follower's); Cancel
// and Resume from any thread.
#ifndef LEASEKEEPER_CLUSTER_SNAPSHOT_SOURCE_H_
#define LEASEKEEPER_CLUSTER_SNAPSHOT_SOURCE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "storage/log.h"

namespace leasekeeper::storage {

// A whole snapshot file (snapshot_file.h) as another member sent it, with
// what the sender says about it. Nothing here is trusted before
// LogReplica::InstallSnapshot checked the bytes.
struct FetchedSnapshot {
  LogPosition covered = 0;
  uint32_t payload_crc32c = 0;  // the header's, as the sender read it
  std::string bytes;
};

class SnapshotSource {
 public:
  virtual ~SnapshotSource() = default;

  // A snapshot covering at least 1..min_covered. Outcomes: the snapshot;
  // Unavailable (no leader known, the sender unreachable, the transfer
  // cut); FailedPrecondition (the sender has none that recent); the
  // sender's refusal (PermissionDenied, Unauthenticated); Cancelled after
  // Cancel. Cost: the transfer of one snapshot.
  virtual absl::StatusOr<FetchedSnapshot> Fetch(LogPosition min_covered) = 0;

  // Ends a Fetch in progress and makes later ones fail with Cancelled,
  // until Resume. Idempotent.
  virtual void Cancel() = 0;
  virtual void Resume() = 0;
};

}  // namespace leasekeeper::storage

#endif  // LEASEKEEPER_CLUSTER_SNAPSHOT_SOURCE_H_
