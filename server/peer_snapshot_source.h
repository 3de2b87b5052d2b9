// PeerSnapshotSource: the daemon's storage::SnapshotSource
// (storage/snapshot_source.h). It asks the leader, as the node last read
// the leader key in etcd (ClusterNode's view, at most one step old; its
// --advertise address), for its newest snapshot over the internal
// ClusterPeer service (server/cluster_peer_service.h), presenting the
// cluster's peer secret (storage/etcd_peer_secret.h) as the node read it
// from etcd.
//
// Transport: plaintext when the node runs without TLS. Under TLS it trusts
// --client-ca (or, without it, the system's roots) for the leader's
// certificate and, under mutual TLS, presents its own --tls-cert/--tls-key
// as its client certificate: every node's certificate must then be valid
// for both server and client authentication and be signed by a CA in every
// node's --client-ca. The files are read at each Fetch (a reloaded
// certificate is used at the next transfer).
//
// Checks on what arrives (before any of it is trusted further down):
// chunks in order without gaps, the size the first chunk announced, at
// most kMaxSnapshotTransferBytes. The snapshot's own checksums are
// LogReplica's to check.
//
// Thread-safety: Fetch from one thread at a time; Cancel and Resume from
// any thread.
#ifndef LEASEKEEPER_SERVER_PEER_SNAPSHOT_SOURCE_H_
#define LEASEKEEPER_SERVER_PEER_SNAPSHOT_SOURCE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/client_context.h"
#include "server/server_config.h"
#include "storage/etcd_election.h"
#include "storage/snapshot_source.h"

namespace leasekeeper::server {

inline constexpr uint64_t kMaxSnapshotTransferBytes = uint64_t{4} << 30;

class PeerSnapshotSource final : public storage::SnapshotSource {
 public:
  // `node_id`: this node's (a leader naming it is not asked). `leader`:
  // the leader as the node knows it (nullopt: none known). `peer_secret`:
  // the cluster's secret, or Unavailable while the node has not read it
  // (as ClusterPeerService's). `timeout`: the deadline of one transfer.
  PeerSnapshotSource(
      std::string cluster, std::string node_id,
      SecurityConfig security_config,
      std::function<std::optional<storage::LeaderView>()> leader,
      std::function<absl::StatusOr<std::string>()> peer_secret,
      std::chrono::milliseconds timeout);
  PeerSnapshotSource(const PeerSnapshotSource&) = delete;
  PeerSnapshotSource& operator=(const PeerSnapshotSource&) = delete;

  // Outcomes: those of SnapshotSource::Fetch; Unavailable "leader unknown"
  // when no leader is known, or peer_secret's error; FailedPrecondition
  // when the leader is this node;
  // the TLS files' errors; DataLoss for chunks out of order or a size
  // other than announced; the leader's status otherwise (code and message
  // as it answered; DeadlineExceeded past `timeout`).
  absl::StatusOr<storage::FetchedSnapshot> Fetch(
      storage::LogPosition min_covered) override;
  void Cancel() override;
  void Resume() override;

 private:
  const std::string cluster_;
  const std::string node_id_;
  const SecurityConfig security_;
  const std::function<std::optional<storage::LeaderView>()> leader_;
  const std::function<absl::StatusOr<std::string>()> peer_secret_;
  const std::chrono::milliseconds timeout_;

  absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;
};

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_PEER_SNAPSHOT_SOURCE_H_
