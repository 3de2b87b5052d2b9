#include "cluster/peer_snapshot_source.h"

#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cluster/etcd_peer_secret.h"
#include "cluster/snapshot_chunks.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "leasekeeper/v1/cluster_peer.grpc.pb.h"
#include "security/tls_config.h"

namespace leasekeeper::storage {
namespace {

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> PeerCredentials(
    const security::TlsFiles& files) {
  absl::StatusOr<security::TlsMaterial> material =
      security::LoadTlsMaterial(files);
  if (!material.ok()) return material.status();
  if (material->mode == security::TransportSecurity::kPlaintext) {
    return grpc::InsecureChannelCredentials();
  }
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = material->client_ca_pem;
  if (material->mode == security::TransportSecurity::kMutualTls) {
    options.pem_private_key = material->key_pem;
    options.pem_cert_chain = material->cert_pem;
  }
  return grpc::SslCredentials(options);
}

absl::Status FromGrpc(const grpc::Status& status) {
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      absl::StrCat("snapshot from the leader: ",
                                   status.error_message()));
}

// Reads the stream's chunks into `chunks`, calling `progressed` for each.
// Outcomes: OK at the stream's end; SnapshotChunks::Add's error (and
// reading stops).
absl::Status ReceiveChunks(
    grpc::ClientReaderInterface<v1::SnapshotChunk>& reader,
    const std::function<void()>& progressed, SnapshotChunks& chunks) {
  v1::SnapshotChunk chunk;
  while (reader.Read(&chunk)) {
    progressed();
    if (absl::Status s = chunks.Add(SnapshotChunk{
            .covered_position = chunk.covered_position(),
            .file_bytes = chunk.file_bytes(),
            .payload_crc32c = chunk.payload_crc32c(),
            .offset = chunk.offset(),
            .data = chunk.data()});
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace

PeerSnapshotSource::PeerSnapshotSource(
    std::string cluster, std::string node_id, security::TlsFiles tls_files,
    std::function<std::optional<LeaderView>()> leader,
    std::function<absl::StatusOr<std::string>()> peer_secret,
    std::chrono::milliseconds stall_timeout)
    : cluster_(std::move(cluster)),
      node_id_(std::move(node_id)),
      tls_files_(std::move(tls_files)),
      leader_(std::move(leader)),
      peer_secret_(std::move(peer_secret)),
      stall_timeout_(stall_timeout) {}

void PeerSnapshotSource::Cancel() {
  absl::MutexLock lock(&mu_);
  cancelled_ = true;
  if (context_ != nullptr) context_->TryCancel();
}

void PeerSnapshotSource::Resume() {
  absl::MutexLock lock(&mu_);
  cancelled_ = false;
}

void PeerSnapshotSource::CancelWhenStalled(grpc::ClientContext& context) {
  absl::MutexLock lock(&mu_);
  while (!transfer_done_) {
    const std::chrono::steady_clock::time_point now =
        std::chrono::steady_clock::now();
    const std::chrono::steady_clock::time_point stall_at =
        last_progress_ + stall_timeout_;
    if (now >= stall_at) {
      stalled_ = true;
      context.TryCancel();
      return;
    }
    mu_.AwaitWithTimeout(absl::Condition(&transfer_done_),
                         absl::FromChrono(stall_at - now));
  }
}

absl::StatusOr<FetchedSnapshot> PeerSnapshotSource::Fetch(
    LogPosition min_covered) {
  absl::StatusOr<LeaderCall> call = CallLeader();
  if (!call.ok()) return call.status();
  auto stub = v1::ClusterPeer::NewStub(call->channel);
  grpc::ClientContext context;
  context.AddMetadata(kPeerSecretMetadataKey, call->secret);
  if (absl::Status s = BeginTransfer(context); !s.ok()) return s;
  std::thread watchdog([this, &context] { CancelWhenStalled(context); });
  v1::FetchSnapshotRequest request;
  request.set_cluster(cluster_);
  request.set_min_covered_position(min_covered);
  auto reader = stub->FetchSnapshot(&context, request);
  SnapshotChunks chunks;
  const absl::Status broken = ReceiveChunks(
      *reader,
      [this] {
        absl::MutexLock lock(&mu_);
        last_progress_ = std::chrono::steady_clock::now();
      },
      chunks);
  bool stalled = false;
  {
    absl::MutexLock lock(&mu_);
    transfer_done_ = true;
    stalled = stalled_;
  }
  watchdog.join();
  if (!broken.ok()) context.TryCancel();
  const grpc::Status finished = reader->Finish();
  {
    absl::MutexLock lock(&mu_);
    context_ = nullptr;
  }
  if (!broken.ok()) return broken;
  // A watchdog that fired after the last chunk cut nothing: Finish is OK.
  if (stalled && !finished.ok()) {
    return absl::DeadlineExceededError(
        absl::StrCat("snapshot transfer: no chunk from the leader for ",
                     stall_timeout_.count(), " ms"));
  }
  if (!finished.ok()) return FromGrpc(finished);
  return chunks.Finish();
}

absl::StatusOr<PeerSnapshotSource::LeaderCall>
PeerSnapshotSource::CallLeader() const {
  const std::optional<LeaderView> view = leader_();
  if (!view.has_value()) {
    return absl::UnavailableError("snapshot transfer: leader unknown");
  }
  if (view->leader.node_id == node_id_) {
    return absl::FailedPreconditionError(
        "snapshot transfer: this node is the leader");
  }
  absl::StatusOr<std::string> secret = peer_secret_();
  if (!secret.ok()) return secret.status();
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      PeerCredentials(tls_files_);
  if (!credentials.ok()) return credentials.status();
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(-1);
  return LeaderCall{
      .channel = grpc::CreateCustomChannel(view->leader.advertise,
                                           *credentials, arguments),
      .secret = *std::move(secret)};
}

absl::Status PeerSnapshotSource::BeginTransfer(grpc::ClientContext& context) {
  absl::MutexLock lock(&mu_);
  if (cancelled_) {
    return absl::CancelledError("snapshot transfer: the follower stopped");
  }
  context_ = &context;
  last_progress_ = std::chrono::steady_clock::now();
  transfer_done_ = false;
  stalled_ = false;
  return absl::OkStatus();
}

}  // namespace leasekeeper::storage
