// ClusterPeerService: the internal leasekeeper.v1.ClusterPeer service every
// cluster node serves on its --listen port, next to LockService: it sends
// this node's newest local snapshot file to a member trimmed past the log.
// Why any node's snapshot is safe to install: docs/design/cluster.md.
//
// Thread-safety: gRPC calls the handler from its threads; the service holds
// only constants and the secret getter, which must be thread-safe.
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

  // Sends the newest local snapshot file (read whole, its header, size and
  // payload checksum checked) in chunks of kSnapshotChunkBytes. Checks, in
  // this order, before anything is read: the authorizer's transport rule
  // (CheckTransportOnly: UNAUTHENTICATED); the peer secret in call metadata
  // (none: UNAUTHENTICATED; another value: PERMISSION_DENIED, reason
  // NOT_CLUSTER_MEMBER; not yet known here: UNAVAILABLE); the request's
  // cluster name (another: PERMISSION_DENIED). Otherwise OK, or the
  // snapshot file's error. Cost: O(snapshot size) in memory and time.
  grpc::Status FetchSnapshot(
      grpc::ServerContext* context, const v1::FetchSnapshotRequest* request,
      grpc::ServerWriter<v1::SnapshotChunk>* writer) override;

 private:
  // OK if the caller proved it is a member (FetchSnapshot's checks).
  absl::Status CheckCaller(grpc::ServerContext* context,
                           const v1::FetchSnapshotRequest& request) const;

  const std::string cluster_;
  const std::string data_dir_;
  const security::Authorizer& authorizer_;
  const std::function<absl::StatusOr<std::string>()> peer_secret_;
};

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_CLUSTER_PEER_SERVICE_H_
