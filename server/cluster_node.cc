#include "server/cluster_node.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cluster/etcd_peer_secret.h"
#include "cluster/peer_snapshot_source.h"
#include "server/core_owner.h"
#include "server/server_errors.h"
#include "spdlog/spdlog.h"
#include "storage/restart_grace.h"

namespace leasekeeper::server {
namespace {

constexpr auto kStepPeriod = std::chrono::milliseconds(50);
constexpr auto kReportPeriod = std::chrono::milliseconds(200);
constexpr auto kMembersPeriod = std::chrono::milliseconds(1000);
// Covers the leader's reading of its whole snapshot file before the first
// chunk as well as a gap between chunks (PeerSnapshotSource: "Time").
constexpr auto kSnapshotStallTimeout = std::chrono::milliseconds(60'000);
// How often, at least, the leader logs its clock while a lease is held: a
// failover gives held leases back at most this much time
// (docs/design/cluster.md, "Time across a failover").
constexpr int64_t kClockRecordEveryMs = 250;

}  // namespace

ClusterNode::ClusterNode(const ServerConfig& config)
    : config_(config), keys_(config.cluster.name) {}

ClusterNode::~ClusterNode() { Stop(); }

absl::Status ClusterNode::Start(std::string advertise, Hooks hooks) {
  advertise_ = std::move(advertise);
  hooks_ = std::move(hooks);
  storage::EtcdClientOptions options;
  options.endpoints = config_.cluster.etcd_endpoints;
  options.ca_file = config_.cluster.etcd_ca_file;
  options.cert_file = config_.cluster.etcd_cert_file;
  options.key_file = config_.cluster.etcd_key_file;
  options.call_timeout = std::chrono::milliseconds(
      std::max<int64_t>(100, config_.cluster.lease_ttl_ms / 2));
  absl::StatusOr<std::unique_ptr<storage::EtcdClient>> client =
      storage::EtcdClient::Connect(options);
  if (!client.ok()) return client.status();
  client_ = *std::move(client);
  absl::StatusOr<std::unique_ptr<storage::LogReplica>> replica =
      storage::LogReplica::Open(config_.durability.data_dir,
                                CoreConfigOf(config_),
                                config_.retry_cache.ttl_ms);
  if (!replica.ok()) return replica.status();
  replica_ = *std::move(replica);
  spdlog::info(
      "event=cluster_replica_opened cluster={} node={} data_dir={} "
      "snapshot_position={}",
      config_.cluster.name, config_.cluster.node_id,
      config_.durability.data_dir, replica_->applied());
  snapshot_source_ = std::make_unique<storage::PeerSnapshotSource>(
      config_.cluster.name, config_.cluster.node_id,
      security::TlsFiles{.cert_file = config_.security.tls_cert_file,
                         .key_file = config_.security.tls_key_file,
                         .client_ca_file = config_.security.client_ca_file},
      [this] { return KnownLeader(); }, [this] { return PeerSecret(); },
      kSnapshotStallTimeout);
  follower_ = std::make_unique<storage::EtcdLogFollower>(
      *client_, keys_, *replica_, config_.durability.snapshot_every_records,
      snapshot_source_.get());
  follower_->Start();
  SetHealth(false);
  thread_ = std::thread([this] { Run(); });
  return absl::OkStatus();
}

void ClusterNode::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
  if (follower_ != nullptr) follower_->Stop();
}

void ClusterNode::Resign() {
  int64_t epoch = 0;
  {
    absl::MutexLock lock(&mu_);
    if (role_ == v1::LEADER && !deposed_ && leader_.has_value()) {
      epoch = leader_->epoch;
    }
    role_ = v1::FOLLOWER;
    leader_.reset();
  }
  if (epoch != 0 && client_ != nullptr) {
    storage::Resign(*client_, keys_, epoch).IgnoreError();
    spdlog::info("event=cluster_resigned node={} epoch={}",
                 config_.cluster.node_id, epoch);
  }
}

bool ClusterNode::stopping() const {
  absl::MutexLock lock(&mu_);
  return stopping_;
}

void ClusterNode::Run() {
  while (!stopping()) {
    Step();
    absl::MutexLock lock(&mu_);
    mu_.AwaitWithTimeout(absl::Condition(&stopping_),
                         absl::FromChrono(kStepPeriod));
  }
}

void ClusterNode::SetHealth(bool serving) {
  {
    absl::MutexLock lock(&mu_);
    if (health_.has_value() && *health_ == serving) return;
    health_ = serving;
  }
  if (hooks_.set_health) hooks_.set_health(serving);
}

std::optional<storage::LeaderView> ClusterNode::KnownLeader() const {
  absl::MutexLock lock(&mu_);
  return leader_;
}

absl::StatusOr<std::string> ClusterNode::PeerSecret() const {
  absl::MutexLock lock(&mu_);
  if (peer_secret_.empty()) {
    return absl::UnavailableError(
        "this node has not read the cluster's peer secret from etcd yet");
  }
  return peer_secret_;
}

void ClusterNode::LoadPeerSecret(SteadyClock::time_point now) {
  {
    absl::MutexLock lock(&mu_);
    if (!peer_secret_.empty()) return;
  }
  // At most once per kMembersPeriod: while etcd is unreachable each try
  // waits for its call timeout, and the step has other work.
  if (now < next_secret_try_) return;
  next_secret_try_ = now + kMembersPeriod;
  absl::StatusOr<std::string> secret =
      storage::EnsurePeerSecret(*client_, keys_);
  if (!secret.ok()) return;  // etcd unreachable: the next step tries again
  absl::MutexLock lock(&mu_);
  peer_secret_ = *std::move(secret);
}

void ClusterNode::NoteFollowerSnapshots() {
  const uint64_t installed = follower_->snapshots_installed();
  if (installed != installed_seen_) {
    installed_seen_ = installed;
    spdlog::info(
        "event=cluster_snapshot_installed node={} position={} (the log in "
        "etcd was trimmed past this replica)",
        config_.cluster.node_id, follower_->snapshot_position());
  }
  absl::Status snapshots = follower_->snapshot_status();
  if (snapshots != snapshot_status_seen_) {
    if (!snapshots.ok()) {
      spdlog::warn("event=cluster_snapshot_problem node={} error=\"{}\"",
                   config_.cluster.node_id, std::string(snapshots.message()));
    }
    snapshot_status_seen_ = std::move(snapshots);
  }
}

void ClusterNode::NoteEtcdHealth() {
  std::optional<storage::EtcdHealthReporter::Notice> notice =
      client_->PollHealth();
  if (!notice.has_value()) return;
  const std::string endpoints =
      absl::StrJoin(config_.cluster.etcd_endpoints, ",");
  if (notice->kind == storage::EtcdHealthReporter::Notice::Kind::kTrouble) {
    spdlog::warn(
        "event=etcd_unreachable node={} endpoints={} failing_for_ms={} "
        "error=\"{}\" (lock calls are refused while etcd fails; "
        "docs/errors.md, \"A node cannot reach etcd\")",
        config_.cluster.node_id, endpoints, notice->failing_for.count(),
        notice->error);
  } else {
    spdlog::info("event=etcd_reachable node={} endpoints={} after_ms={}",
                 config_.cluster.node_id, endpoints,
                 notice->failing_for.count());
  }
}

void ClusterNode::Step() {
  const SteadyClock::time_point now = SteadyClock::now();
  NoteEtcdHealth();
  LoadPeerSecret(now);
  bool deposed = false;
  bool leading = false;
  {
    absl::MutexLock lock(&mu_);
    deposed = deposed_;
    leading = role_ == v1::LEADER;
  }
  if (deposed) {
    // Keep redirecting to whoever leads now, until it is time to go.
    absl::StatusOr<std::optional<storage::LeaderView>> view =
        storage::ReadLeader(*client_, keys_);
    bool exit = false;
    bool known = false;
    {
      absl::MutexLock lock(&mu_);
      if (view.ok()) leader_ = *view;
      known = leader_.has_value();
      if (!exit_called_ && now >= exit_at_) {
        exit_called_ = true;
        exit = true;
      }
    }
    SetHealth(known);
    if (exit && hooks_.deposed_exit) hooks_.deposed_exit();
    return;
  }
  if (leading) {
    StepAsLeader(now);
  } else {
    NoteFollowerSnapshots();
    StepAsCandidate(now);
  }
}

void ClusterNode::StepAsLeader(SteadyClock::time_point now) {
  absl::Status health;
  {
    absl::MutexLock lock(&mu_);
    if (!lease_->Valid()) {
      health = absl::UnavailableError(
          "not leader: this node's etcd lease may have expired");
    } else if (log_ != nullptr) {
      health = log_->health();
    }
  }
  if (!health.ok()) {
    Depose(health);
    return;
  }
  Report(now);
  if (now >= next_members_) {
    next_members_ = now + kMembersPeriod;
    RefreshMembers();
    Trim();
  }
}

void ClusterNode::StepAsCandidate(SteadyClock::time_point now) {
  std::shared_ptr<storage::EtcdLease> lease = ValidLease();
  if (lease == nullptr) return;
  Report(now);
  if (now >= next_members_) {
    next_members_ = now + kMembersPeriod;
    RefreshMembers();
  }
  absl::StatusOr<storage::CampaignResult> result = CampaignOrObserve(*lease);
  if (!result.ok()) {
    {
      absl::MutexLock lock(&mu_);
      role_ = v1::DISCONNECTED;
      leader_.reset();
    }
    SetHealth(false);
    return;
  }
  if (result->won) {
    TakeOver(result->view);
    return;
  }
  bool known = false;
  {
    absl::MutexLock lock(&mu_);
    role_ = v1::FOLLOWER;
    known = result->view.epoch != 0;
    if (known) {
      leader_ = result->view;
    } else {
      leader_.reset();
    }
  }
  SetHealth(known);
}

std::shared_ptr<storage::EtcdLease> ClusterNode::ValidLease() {
  std::shared_ptr<storage::EtcdLease> lease;
  {
    absl::MutexLock lock(&mu_);
    lease = lease_;
  }
  if (lease != nullptr && lease->Valid()) return lease;
  {
    absl::MutexLock lock(&mu_);
    lease_.reset();
  }
  lease.reset();  // revokes the lapsed one (best effort)
  storage::EtcdLeaseOptions options;
  options.ttl = std::chrono::seconds(
      std::max<int64_t>(1, config_.cluster.lease_ttl_ms / 1000));
  options.margin = std::chrono::milliseconds(
      std::max<int64_t>(100, config_.cluster.lease_ttl_ms / 4));
  absl::StatusOr<std::unique_ptr<storage::EtcdLease>> granted =
      storage::EtcdLease::Grant(*client_, options);
  if (!granted.ok()) {
    {
      absl::MutexLock lock(&mu_);
      if (role_ != v1::DISCONNECTED) {
        spdlog::warn("event=cluster_disconnected node={} error=\"{}\"",
                     config_.cluster.node_id,
                     std::string(granted.status().message()));
      }
      role_ = v1::DISCONNECTED;
      leader_.reset();
    }
    SetHealth(false);
    return nullptr;
  }
  lease = std::shared_ptr<storage::EtcdLease>(std::move(*granted));
  absl::MutexLock lock(&mu_);
  lease_ = lease;
  return lease;
}

absl::StatusOr<storage::CampaignResult> ClusterNode::CampaignOrObserve(
    const storage::EtcdLease& lease) {
  // A replica that cannot follow (trimmed past it, damaged), or has not
  // read the log yet, must not lead.
  const absl::Status following = follower_->status();
  const bool can_lead =
      following.ok() || absl::IsUnavailable(following);
  if (can_lead) {
    return storage::Campaign(
        *client_, keys_, lease.id(),
        storage::LeaderRecord{.node_id = config_.cluster.node_id,
                              .advertise = advertise_});
  }
  absl::StatusOr<std::optional<storage::LeaderView>> view =
      storage::ReadLeader(*client_, keys_);
  if (!view.ok()) return view.status();
  storage::CampaignResult lost;
  if (view->has_value()) lost.view = **view;
  return lost;
}

void ClusterNode::TakeOver(const storage::LeaderView& view) {
  const SteadyClock::time_point start = SteadyClock::now();
  {
    absl::MutexLock lock(&mu_);
    role_ = v1::CATCHING_UP;
    leader_ = view;
  }
  spdlog::info("event=cluster_elected node={} epoch={} applied={}",
               config_.cluster.node_id, view.epoch, follower_->applied());
  absl::Status taken = hooks_.take_over ? hooks_.take_over()
                                        : absl::InternalError("no hook");
  if (!taken.ok()) {
    spdlog::error("event=cluster_take_over_failed node={} epoch={} error=\"{}\"",
                  config_.cluster.node_id, view.epoch,
                  std::string(taken.message()));
    storage::Resign(*client_, keys_, view.epoch).IgnoreError();
    Depose(taken);
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    role_ = v1::LEADER;
  }
  SetHealth(true);
  spdlog::info(
      "event=cluster_leading node={} epoch={} take_over_ms={}",
      config_.cluster.node_id, view.epoch,
      std::chrono::duration_cast<std::chrono::milliseconds>(
          SteadyClock::now() - start)
          .count());
  Report(SteadyClock::time_point{});
}

absl::StatusOr<DurabilityConfig::OpenedLog> ClusterNode::OpenLeaderLog(
    StateMachine& machine, storage::ServerState& server) {
  const SteadyClock::time_point start = SteadyClock::now();
  std::shared_ptr<storage::EtcdLease> lease;
  int64_t epoch = 0;
  {
    absl::MutexLock lock(&mu_);
    lease = lease_;
    if (leader_.has_value()) epoch = leader_->epoch;
  }
  if (lease == nullptr || epoch == 0) {
    return absl::FailedPreconditionError("this node has not won an election");
  }
  follower_->Stop();
  // To the end of the log: every batch any earlier leader committed is
  // visible now (etcd reads are linearizable, and this leadership's key
  // was created after them).
  if (absl::Status s =
          storage::EtcdLogFollower::CatchUp(*client_, keys_, *replica_);
      !s.ok()) {
    return s;
  }
  storage::RecoveryReport report;
  report.snapshot_position = replica_->snapshot_position();
  if (absl::Status s = replica_->CopyTo(machine, server); !s.ok()) {
    return absl::DataLossError(
        absl::StrCat("the replica does not restore: ", s.message()));
  }
  storage::EtcdLogOptions options;
  options.cluster = config_.cluster.name;
  options.epoch = epoch;
  options.next_position = replica_->applied() + 1;
  options.txn_timeout = std::chrono::milliseconds(
      std::max<int64_t>(100, config_.cluster.lease_ttl_ms / 2));
  options.snapshot_every_records = config_.durability.snapshot_every_records;
  options.snapshot_dir = config_.durability.data_dir;
  options.snapshot_position = replica_->snapshot_position();
  absl::StatusOr<std::unique_ptr<storage::EtcdLog>> log =
      storage::EtcdLog::Open(*client_, *lease, options);
  if (!log.ok()) return log.status();

  // The failover grace, logged before anything can depend on it.
  const Tick last_tick = machine.table().now();
  const int64_t grace_ms = config_.durability.restart_grace_ms;
  if (grace_ms > 0 && machine.table().held_lease_count() > 0) {
    const storage::RestartGrace grace{last_tick, grace_ms};
    absl::StatusOr<storage::LogPosition> position = (*log)->Append(grace);
    if (!position.ok()) return position.status();
    if (absl::Status s = (*log)->WaitDurable(*position); !s.ok()) return s;
    absl::StatusOr<size_t> raised = storage::ApplyRestartGrace(grace, machine);
    if (!raised.ok()) return raised.status();
    report.leases_graced = *raised;
  }
  (void)machine.TakeEvents();
  report.fresh = replica_->applied() == 0;
  report.last_position = (*log)->last_position();
  report.CountRecovered(machine, server);
  report.elapsed_us = std::chrono::duration_cast<std::chrono::microseconds>(
                          SteadyClock::now() - start)
                          .count();
  {
    absl::MutexLock lock(&mu_);
    log_ = log->get();
  }
  return DurabilityConfig::OpenedLog{
      .log = *std::move(log),
      .recovery = std::move(report),
      .clock_record_every_ms = kClockRecordEveryMs};
}

void ClusterNode::LogFailed(const absl::Status& status) {
  bool leading = false;
  {
    absl::MutexLock lock(&mu_);
    leading = role_ == v1::LEADER || role_ == v1::CATCHING_UP;
  }
  // On the calling thread (a gRPC or log thread): only mark; the control
  // loop runs the hooks on its next step (at most 50 ms later).
  if (leading) {
    spdlog::warn("event=cluster_log_failed node={} error=\"{}\"",
                 config_.cluster.node_id, std::string(status.message()));
  }
}

void ClusterNode::Depose(const absl::Status& why) {
  {
    absl::MutexLock lock(&mu_);
    if (deposed_) return;
    deposed_ = true;
    role_ = v1::FOLLOWER;
    leader_.reset();
    exit_at_ = SteadyClock::now() +
               std::chrono::milliseconds(config_.cluster.deposed_exit_after_ms);
  }
  spdlog::error(
      "event=cluster_deposed node={} error=\"{}\" (answers NOT_LEADER, exits "
      "in {} ms for its supervisor to restart it as a follower)",
      config_.cluster.node_id, std::string(why.message()),
      config_.cluster.deposed_exit_after_ms);
  if (hooks_.step_down) hooks_.step_down();
  SetHealth(false);
}

void ClusterNode::Report(SteadyClock::time_point now) {
  if (now < next_report_) return;
  next_report_ = now + kReportPeriod;
  storage::MemberReport report;
  report.node_id = config_.cluster.node_id;
  report.advertise = advertise_;
  std::shared_ptr<storage::EtcdLease> lease;
  {
    absl::MutexLock lock(&mu_);
    lease = lease_;
    report.role = role_;
    if (log_ != nullptr) {
      const storage::EtcdLogStats stats = log_->stats();
      report.applied = stats.durable_position;
      report.snapshot = stats.snapshot_position;
    }
  }
  if (lease == nullptr) return;
  if (report.role != v1::LEADER) {
    report.applied = follower_->applied();
    report.snapshot = follower_->snapshot_position();
  }
  etcdserverpb::PutRequest put;
  put.set_key(keys_.member(config_.cluster.node_id));
  put.set_value(storage::EncodeMember(report));
  put.set_lease(lease->id());
  client_->Put(put).status().IgnoreError();
}

void ClusterNode::RefreshMembers() {
  etcdserverpb::RangeRequest range;
  range.set_key(keys_.members_prefix());
  range.set_range_end(storage::PrefixRangeEnd(keys_.members_prefix()));
  absl::StatusOr<etcdserverpb::RangeResponse> got = client_->Range(range);
  if (!got.ok()) return;
  std::vector<storage::MemberReport> members;
  for (const mvccpb::KeyValue& kv : got->kvs()) {
    if (std::optional<storage::MemberReport> member =
            storage::DecodeMember(kv.value())) {
      members.push_back(*std::move(member));
    }
  }
  std::sort(members.begin(), members.end(),
            [](const auto& a, const auto& b) { return a.node_id < b.node_id; });
  absl::MutexLock lock(&mu_);
  members_ = std::move(members);
}

void ClusterNode::Trim() {
  storage::LogPosition covered = 0;
  {
    absl::MutexLock lock(&mu_);
    if (members_.empty()) return;
    covered = members_.front().snapshot;
    for (const storage::MemberReport& member : members_) {
      covered = std::min(covered, member.snapshot);
    }
  }
  if (covered == 0) return;
  // Every batch before the one holding covered + 1 ends at or before
  // `covered`, so every live member's snapshot covers it.
  absl::StatusOr<std::optional<std::string>> holder =
      storage::BatchKeyAtOrBefore(*client_, keys_, covered + 1);
  if (!holder.ok() || !holder->has_value()) return;
  etcdserverpb::DeleteRangeRequest trim;
  trim.set_key(keys_.log_prefix());
  trim.set_range_end(**holder);
  absl::StatusOr<etcdserverpb::DeleteRangeResponse> deleted =
      client_->DeleteRange(trim);
  if (deleted.ok() && deleted->deleted() > 0) {
    spdlog::info("event=cluster_log_trimmed node={} batches={} below={}",
                 config_.cluster.node_id, deleted->deleted(),
                 **holder);
  }
}

absl::Status ClusterNode::CheckServing() const {
  std::shared_ptr<storage::EtcdLease> lease;
  {
    absl::MutexLock lock(&mu_);
    if (role_ != v1::LEADER || deposed_) {
      const bool other = leader_.has_value() &&
                         leader_->leader.node_id != config_.cluster.node_id;
      return NotLeader(other ? leader_->leader.advertise : std::string());
    }
    lease = lease_;
  }
  // The control loop notices a lapsed lease within 50 ms; a call arriving
  // meanwhile is refused here.
  if (lease == nullptr || !lease->Valid()) return NotLeader("");
  return absl::OkStatus();
}

void ClusterNode::FillStatus(v1::ClusterStatusResponse* status) const {
  if (client_ != nullptr) status->set_etcd_error(client_->call_stats().trouble);
  absl::MutexLock lock(&mu_);
  status->set_cluster(config_.cluster.name);
  status->set_node_id(config_.cluster.node_id);
  status->set_role(role_);
  storage::LogPosition last = 0;
  if (leader_.has_value()) {
    status->set_leader_id(leader_->leader.node_id);
    status->set_leader_address(leader_->leader.advertise);
    status->set_epoch(static_cast<uint64_t>(leader_->epoch));
    for (const storage::MemberReport& member : members_) {
      if (member.node_id == leader_->leader.node_id) last = member.applied;
    }
  }
  if (log_ != nullptr && role_ == v1::LEADER) last = log_->last_position();
  status->set_last_position(last);
  for (const storage::MemberReport& member : members_) {
    v1::ClusterMember* out = status->add_members();
    out->set_node_id(member.node_id);
    out->set_advertise(member.advertise);
    out->set_role(static_cast<v1::MemberRole>(member.role));
    out->set_applied_position(member.applied);
    out->set_lag(last > member.applied ? last - member.applied : 0);
  }
}

ClusterNode::Stats ClusterNode::GetStats() const {
  Stats stats;
  if (client_ != nullptr) stats.etcd = client_->call_stats();
  absl::MutexLock lock(&mu_);
  stats.role = role_;
  if (leader_.has_value()) stats.epoch = leader_->epoch;
  if (log_ != nullptr && role_ == v1::LEADER) {
    stats.log = log_->stats();
    stats.applied = stats.log->durable_position;
    stats.leader_position = stats.log->last_position;
  } else {
    stats.applied = follower_ != nullptr ? follower_->applied() : 0;
    for (const storage::MemberReport& member : members_) {
      if (leader_.has_value() && member.node_id == leader_->leader.node_id) {
        stats.leader_position = member.applied;
      }
    }
  }
  return stats;
}

}  // namespace leasekeeper::server
