// PeerSnapshotSource: the daemon's SnapshotSource (snapshot_source.h). It
// asks the leader the node last knew (its --advertise address) for its
// newest snapshot over the internal ClusterPeer service
// (server/cluster_peer_service.h), presenting the cluster's peer secret,
// with the node's own TLS files (read at each Fetch). It checks the chunks
// as they arrive (SnapshotChunks, cluster/snapshot_chunks.h) and abandons
// a transfer that made no progress for `stall_timeout`. ClusterNode owns it. docs/design/cluster.md ("Snapshot transfer between nodes").
//
// Thread-safety: Fetch from one thread at a time; Cancel and Resume from
// any thread.
#ifndef LEASEKEEPER_CLUSTER_PEER_SNAPSHOT_SOURCE_H_
#define LEASEKEEPER_CLUSTER_PEER_SNAPSHOT_SOURCE_H_

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "cluster/etcd_election.h"
#include "cluster/snapshot_source.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"
#include "security/tls_config.h"

namespace leasekeeper::storage {

class PeerSnapshotSource final : public SnapshotSource {
 public:
  // `node_id`: this node's (a leader naming it is not asked). `leader`:
  // the leader as the node knows it (nullopt: none known). `peer_secret`:
  // the cluster's secret, or Unavailable while the node has not read it
  // (as ClusterPeerService's). `stall_timeout`: the longest a transfer
  // may go without a chunk (see Time above).
  PeerSnapshotSource(
      std::string cluster, std::string node_id,
      security::TlsFiles tls_files,
      std::function<std::optional<LeaderView>()> leader,
      std::function<absl::StatusOr<std::string>()> peer_secret,
      std::chrono::milliseconds stall_timeout);
  PeerSnapshotSource(const PeerSnapshotSource&) = delete;
  PeerSnapshotSource& operator=(const PeerSnapshotSource&) = delete;

  // Outcomes: those of SnapshotSource::Fetch; Unavailable "leader unknown"
  // when no leader is known, or peer_secret's error; FailedPrecondition
  // when the leader is this node;
  // the TLS files' errors; DataLoss for chunks out of order or a size
  // other than announced; DeadlineExceeded "no chunk from the leader for
  // N ms" when the transfer stalled; Cancelled after Cancel; the leader's
  // status otherwise (code and message as it answered).
  absl::StatusOr<FetchedSnapshot> Fetch(
      LogPosition min_covered) override;
  void Cancel() override;
  void Resume() override;

 private:
  const std::string cluster_;
  const std::string node_id_;
  const security::TlsFiles tls_files_;
  const std::function<std::optional<LeaderView>()> leader_;
  const std::function<absl::StatusOr<std::string>()> peer_secret_;
  const std::chrono::milliseconds stall_timeout_;

  // The leader's channel and the secret to present to it.
  struct LeaderCall {
    std::shared_ptr<grpc::Channel> channel;
    std::string secret;
  };
  // Outcomes: the call; Unavailable "leader unknown"; FailedPrecondition
  // when the leader is this node; peer_secret's error; the TLS files'.
  absl::StatusOr<LeaderCall> CallLeader() const;
  // Registers `context` as the transfer in progress (for Cancel and the
  // watchdog). Outcomes: OK; Cancelled after Cancel.
  absl::Status BeginTransfer(grpc::ClientContext& context)
      ABSL_LOCKS_EXCLUDED(mu_);

  // The watchdog's loop: until the transfer is done, cancels `context` once
  // no chunk arrived for stall_timeout_ and records that it stalled.
  void CancelWhenStalled(grpc::ClientContext& context);

  absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;
  // The transfer in progress (Fetch's): when the last chunk arrived (or the
  // call started), whether it ended, whether the watchdog cut it.
  std::chrono::steady_clock::time_point last_progress_ ABSL_GUARDED_BY(mu_);
  bool transfer_done_ ABSL_GUARDED_BY(mu_) = false;
  bool stalled_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace leasekeeper::storage

#endif  // LEASEKEEPER_CLUSTER_PEER_SNAPSHOT_SOURCE_H_
