// ClusterPeerService: the internal leasekeeper.v1.ClusterPeer service
// (proto/leasekeeper/v1/cluster_peer.proto) every cluster node serves on
// its --listen port, next to LockService.
//
// FetchSnapshot sends this node's newest local snapshot file (its
// --data-dir: the follower's replica snapshots, or the leader's own, one
// directory) to a member whose log position was trimmed from etcd. Any
// node may answer: a local snapshot holds only records committed in etcd
// (a follower applies only committed batches; a leader snapshots only
// durable records), so a member that installs it and follows the log from
// its position never holds what the log does not. Followers ask the leader
// (cluster/peer_snapshot_source.h): its snapshot is never behind the trim
// point, since the leader trims only what every live member's snapshot,
// its own included, covers.
//
// Checks, in this order, before anything is read: the authorizer's
// transport rule (security/authorizer.h, CheckTransportOnly: under TLS a
// plaintext call, or no client certificate under mutual TLS, is
// UNAUTHENTICATED); the peer secret (cluster/etcd_peer_secret.h) in call
// metadata: none is UNAUTHENTICATED, another value PERMISSION_DENIED
// (NotClusterMember, reason NOT_CLUSTER_MEMBER), not yet known to this node
// UNAVAILABLE; the request's cluster name (another: PERMISSION_DENIED).
//
// The file is read whole (ReadNewestSnapshotBytes: header, size and
// payload checksum checked) and sent in chunks of kSnapshotChunkBytes.
// Cost per call: O(snapshot size) in memory and time.
//
// Thread-safety: gRPC calls the handler from its threads; the service
// holds only constants and the secret getter, which must be thread-safe.
#ifndef LEASEKEEPER_SERVER_CLUSTER_PEER_SERVICE_H_
#define LEASEKEEPER_SERVER_CLUSTER_PEER_SERVICE_H_

#include <cstddef>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "leasekeeper/v1/cluster_peer.grpc.pb.h"
#include "security/authorizer.h"

namespace leasekeeper::server {

inline constexpr size_t kSnapshotChunkBytes = size_t{1} << 20;

class ClusterPeerService final : public v1::ClusterPeer::Service {
 public:
  // `peer_secret`: the cluster's secret, or Unavailable while this node has
  // not read it from etcd. `authorizer` must outlive the service.
  ClusterPeerService(std::string cluster, std::string data_dir,
                     const security::Authorizer& authorizer,
                     std::function<absl::StatusOr<std::string>()> peer_secret);

  grpc::Status FetchSnapshot(
      grpc::ServerContext* context, const v1::FetchSnapshotRequest* request,
      grpc::ServerWriter<v1::SnapshotChunk>* writer) override;

 private:
  // OK if the caller proved it is a member (see above).
  absl::Status CheckCaller(grpc::ServerContext* context,
                           const v1::FetchSnapshotRequest& request) const;

  const std::string cluster_;
  const std::string data_dir_;
  const security::Authorizer& authorizer_;
  const std::function<absl::StatusOr<std::string>()> peer_secret_;
};

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_CLUSTER_PEER_SERVICE_H_
