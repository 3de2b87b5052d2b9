#include "server/cluster_peer_service.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cluster/etcd_peer_secret.h"
#include "security/peer_identity.h"
#include "server/grpc_status.h"
#include "server/server_errors.h"
#include "spdlog/spdlog.h"
#include "storage/snapshot_file.h"

namespace leasekeeper::server {

ClusterPeerService::ClusterPeerService(
    std::string cluster, std::string data_dir,
    const security::Authorizer& authorizer,
    std::function<absl::StatusOr<std::string>()> peer_secret)
    : cluster_(std::move(cluster)),
      data_dir_(std::move(data_dir)),
      authorizer_(authorizer),
      peer_secret_(std::move(peer_secret)) {}

absl::Status ClusterPeerService::CheckCaller(
    grpc::ServerContext* context,
    const v1::FetchSnapshotRequest& request) const {
  const security::PeerIdentity peer =
      security::PeerIdentityFromAuthContext(context->auth_context().get());
  if (absl::Status s = authorizer_.CheckTransportOnly(peer); !s.ok()) {
    return s;
  }
  const auto& metadata = context->client_metadata();
  auto presented = metadata.find(storage::kPeerSecretMetadataKey);
  if (presented == metadata.end()) return NotClusterMember(false);
  absl::StatusOr<std::string> secret = peer_secret_();
  if (!secret.ok()) return secret.status();
  if (!storage::PeerSecretsEqual(
          absl::string_view(presented->second.data(),
                            presented->second.size()),
          *secret)) {
    return NotClusterMember(true);
  }
  if (request.cluster() != cluster_) {
    return absl::PermissionDeniedError(absl::StrCat(
        "this node is a member of cluster ", cluster_, ", not ",
        request.cluster()));
  }
  return absl::OkStatus();
}

grpc::Status ClusterPeerService::FetchSnapshot(
    grpc::ServerContext* context, const v1::FetchSnapshotRequest* request,
    grpc::ServerWriter<v1::SnapshotChunk>* writer) {
  if (absl::Status denied = CheckCaller(context, *request); !denied.ok()) {
    spdlog::warn("event=cluster_peer_refused peer={} error=\"{}\"",
                 context->peer(), std::string(denied.message()));
    return PrepareFinish(context, denied);
  }
  std::vector<std::string> damaged;
  absl::StatusOr<std::optional<storage::SnapshotFileBytes>> newest =
      storage::ReadNewestSnapshotBytes(data_dir_, &damaged);
  for (const std::string& what : damaged) {
    spdlog::warn("event=cluster_snapshot_damaged error=\"{}\"", what);
  }
  if (!newest.ok()) {
    // A file pruned or replaced while read: the caller asks again.
    return PrepareFinish(
        context, absl::UnavailableError(absl::StrCat(
                     "local snapshot unreadable: ", newest.status().message())));
  }
  if (!newest->has_value() ||
      (*newest)->info.covered < request->min_covered_position()) {
    return PrepareFinish(
        context,
        absl::FailedPreconditionError(absl::StrCat(
            "no snapshot covers position ", request->min_covered_position(),
            " here (newest covers ",
            newest->has_value() ? (*newest)->info.covered : 0, ")")));
  }
  const storage::SnapshotFileBytes& file = **newest;
  size_t offset = 0;
  do {
    v1::SnapshotChunk chunk;
    if (offset == 0) {
      chunk.set_covered_position(file.info.covered);
      chunk.set_file_bytes(file.bytes.size());
      chunk.set_payload_crc32c(file.info.payload_crc32c);
    }
    const size_t length =
        std::min(kSnapshotChunkBytes, file.bytes.size() - offset);
    chunk.set_offset(offset);
    chunk.set_data(file.bytes.substr(offset, length));
    if (!writer->Write(chunk)) {
      return grpc::Status(grpc::StatusCode::CANCELLED,
                          "the caller went away");
    }
    offset += length;
  } while (offset < file.bytes.size());
  spdlog::info("event=cluster_snapshot_sent peer={} covered={} bytes={}",
               context->peer(), file.info.covered, file.bytes.size());
  return grpc::Status::OK;
}

}  // namespace leasekeeper::server
