// ClusterNode: one leasekeeperd in a cluster (--cluster): its etcd lease,
// its part in the leader election, its replica of the log while it follows
// (FOLLOWER), the hand-over to the core owner when it wins (CATCHING_UP,
// then LEADER), DISCONNECTED while etcd cannot be reached (logged, with
// backoff, as the client's EtcdHealthReporter has it due), and the exit of
// a deposed leader (the deposed_exit hook, after deposed_exit_after_ms).
// The server creates and wires it (server.h). What each role does and why a
// deposed leader exits: docs/design/cluster.md ("A node's roles").
//
// Thread-safety: Start/Stop from the controlling thread; CheckServing,
// FillStatus, GetStats, PeerSecret and KnownLeader from any thread. The
// control loop runs on the node's own thread; the hooks run on it.
#ifndef LEASEKEEPER_SERVER_CLUSTER_NODE_H_
#define LEASEKEEPER_SERVER_CLUSTER_NODE_H_

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "cluster/etcd_client.h"
#include "cluster/etcd_election.h"
#include "cluster/etcd_keys.h"
#include "cluster/etcd_lease.h"
#include "cluster/etcd_log.h"
#include "cluster/etcd_log_follower.h"
#include "cluster/log_replica.h"
#include "server/cluster_role.h"
#include "server/server_config.h"

namespace leasekeeper::server {

class ClusterNode final : public ClusterRole {
 public:
  struct Hooks {
    // Won the election: open the core owner's storage (it calls
    // OpenLeaderLog through DurabilityConfig::open_log), settle the
    // recovered state and start serving. Non-OK: the node steps down.
    std::function<absl::Status()> take_over;
    // Deposed: end parked calls and session streams.
    std::function<void()> step_down;
    std::function<void(bool serving)> set_health;
    // deposed_exit_after_ms after being deposed; may be empty.
    std::function<void()> deposed_exit;
  };

  struct Stats {
    v1::MemberRole role = v1::MEMBER_ROLE_UNSPECIFIED;
    int64_t epoch = 0;            // the leadership this node knows of
    storage::LogPosition applied = 0;
    storage::LogPosition leader_position = 0;  // the leader's last position
    std::optional<storage::EtcdLogStats> log;  // while leading
    storage::EtcdCallStats etcd;               // this node's etcd calls
  };

  // REQUIRES: config.cluster.name non-empty, config.durability.data_dir
  // non-empty (the replica's local snapshots).
  explicit ClusterNode(const ServerConfig& config);
  ~ClusterNode() override;  // Stop()
  ClusterNode(const ClusterNode&) = delete;
  ClusterNode& operator=(const ClusterNode&) = delete;

  // Connects to etcd, opens the replica (its newest local snapshot), starts
  // following and the control loop. `advertise`: the address clients
  // reach this node at. Outcomes: OK; InvalidArgument (endpoints, TLS
  // files); the data dir's error (locked, damaged snapshot). etcd being
  // unreachable is not an error: the node is DISCONNECTED until it is.
  absl::Status Start(std::string advertise, Hooks hooks);

  // Stops the control loop and the follower: no election, take-over or
  // step-down from here on. Idempotent.
  void Stop();
  // After Stop and once the core owner's log is closed (everything
  // appended is committed or failed): a leader deletes its leader key so
  // that another node takes over at once instead of a lease's time later.
  void Resign();

  // DurabilityConfig::open_log while this node takes over (see
  // CATCHING_UP). Outcomes: the log and its report; etcd's error; the
  // replica's DataLoss.
  absl::StatusOr<DurabilityConfig::OpenedLog> OpenLeaderLog(
      StateMachine& machine, storage::ServerState& server);

  // The core owner found the log failed (logged here; the control loop,
  // which watches the same log, steps down within one step).
  void LogFailed(const absl::Status& status);

  // The cluster's peer secret. Outcomes: the secret; Unavailable while
  // this node has not read it from etcd yet.
  absl::StatusOr<std::string> PeerSecret() const;
  // The leader as this node last read the leader key (at most one step
  // old); nullopt while it knows none.
  std::optional<storage::LeaderView> KnownLeader() const;

  absl::Status CheckServing() const override;
  void FillStatus(v1::ClusterStatusResponse* status) const override;
  Stats GetStats() const;

 private:
  using SteadyClock = std::chrono::steady_clock;

  void Run();
  void Step();
  void StepAsLeader(SteadyClock::time_point now);
  void StepAsCandidate(SteadyClock::time_point now);
  // The node's etcd lease, granted anew if there is none or it lapsed.
  // Null (the node marked DISCONNECTED and not serving) if etcd refused.
  std::shared_ptr<storage::EtcdLease> ValidLease();
  // Campaigns on `lease` when the replica can lead; otherwise only reads
  // who leads (a result that did not win). Outcomes: the result; etcd's
  // error.
  absl::StatusOr<storage::CampaignResult> CampaignOrObserve(
      const storage::EtcdLease& lease);
  void TakeOver(const storage::LeaderView& view);
  void Depose(const absl::Status& why);
  void Report(SteadyClock::time_point now);
  void RefreshMembers();
  void Trim();
  void SetHealth(bool serving);
  // Reads the peer secret from etcd until it has it.
  void LoadPeerSecret(SteadyClock::time_point now);
  // Logs the follower's snapshot news: a snapshot installed, a change of
  // its snapshot_status().
  void NoteFollowerSnapshots();
  // Logs etcd's trouble and its end as the client's reporter has them due
  // (cluster/etcd_health_reporter.h).
  void NoteEtcdHealth();
  bool stopping() const;

  const ServerConfig config_;
  const storage::ClusterKeys keys_;
  std::unique_ptr<storage::EtcdClient> client_;
  std::unique_ptr<storage::LogReplica> replica_;
  std::unique_ptr<storage::SnapshotSource> snapshot_source_;
  std::unique_ptr<storage::EtcdLogFollower> follower_;
  std::string advertise_;
  Hooks hooks_;

  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  v1::MemberRole role_ ABSL_GUARDED_BY(mu_) = v1::DISCONNECTED;
  bool deposed_ ABSL_GUARDED_BY(mu_) = false;
  SteadyClock::time_point exit_at_ ABSL_GUARDED_BY(mu_);
  bool exit_called_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<storage::LeaderView> leader_ ABSL_GUARDED_BY(mu_);
  // This node's lease; kept (never replaced) once it led, since the log
  // refers to it.
  std::shared_ptr<storage::EtcdLease> lease_ ABSL_GUARDED_BY(mu_);
  // The leader's log (owned by the core owner, which closes it before
  // Stop); null unless this node leads or led.
  storage::EtcdLog* log_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::vector<storage::MemberReport> members_ ABSL_GUARDED_BY(mu_);
  std::optional<bool> health_ ABSL_GUARDED_BY(mu_);
  std::string peer_secret_ ABSL_GUARDED_BY(mu_);  // empty: not read yet

  SteadyClock::time_point next_report_{};
  SteadyClock::time_point next_members_{};
  SteadyClock::time_point next_secret_try_{};
  // The control thread's: what NoteFollowerSnapshots last logged.
  uint64_t installed_seen_ = 0;
  absl::Status snapshot_status_seen_;
  std::thread thread_;
};

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_CLUSTER_NODE_H_
