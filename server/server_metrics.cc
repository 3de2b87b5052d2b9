#include "server/server_metrics.h"

#include <chrono>
#include <cstdint>
#include <optional>
#include <utility>

#include "metrics/families.h"
#include "version/version.h"
#include "storage/durable_store.h"

namespace leasekeeper::server {
namespace {

using prometheus::MetricFamily;
using prometheus::MetricType;
using Counters = OwnerCounters::Counts;
using Stats = CoreOwner::Stats;
using Store = storage::DurableStoreStats;

constexpr char kAcquisitionsHelp[] =
    "Acquire requests the core applied, by immediate outcome (a retry "
    "answered from the retry cache is not counted again).";

// A series with no labels whose value is one field of a `Source` snapshot.
template <typename Source, typename Value>
struct FieldSeries {
  const char* name;
  const char* help;
  Value Source::*field;
};

constexpr FieldSeries<Counters, uint64_t> kCounters[] = {
    {"leasekeeper_queue_grants_total",
     "Queued requests granted later, when their turn came.",
     &Counters::granted_from_queue},
    {"leasekeeper_lease_lapses_total",
     "Leases that reached their end without renewal.", &Counters::lapses},
    {"leasekeeper_renewals_total", "Successful Renew calls.",
     &Counters::renewals},
    {"leasekeeper_releases_total",
     "Leases ended by their holder: Release, session loss or ForceRelease.",
     &Counters::releases},
    {"leasekeeper_withdrawals_total",
     "Waits withdrawn: Release, wait timeout, cancellation, session loss.",
     &Counters::withdrawals},
    {"leasekeeper_deadlock_victims_total",
     "Clients aborted to break a wait-for cycle.",
     &Counters::deadlock_victims},
    {"leasekeeper_stale_writes_refused_total",
     "Writes and deletes refused because their fencing token was stale.",
     &Counters::stale_writes_refused},
    {"leasekeeper_sessions_lost_total",
     "Sessions whose stream ended and whose grace ran out; their leases "
     "were released.",
     &Counters::sessions_lost},
    {"leasekeeper_forced_releases_total",
     "Leases ended by an operator's ForceRelease.",
     &Counters::forced_releases},
};

constexpr FieldSeries<Stats, size_t> kGauges[] = {
    {"leasekeeper_leases_held",
     "Leases held now (a SHARED lock with n holders counts n).",
     &Stats::held_leases},
    {"leasekeeper_waiters", "Requests queued now.", &Stats::waiters},
    {"leasekeeper_waiting_calls", "Acquire calls parked waiting for a grant.",
     &Stats::parked_calls},
    {"leasekeeper_sessions_open", "Sessions open or in their grace.",
     &Stats::sessions},
    {"leasekeeper_retry_cache_entries", "Answers kept for retries.",
     &Stats::retry_entries},
    {"leasekeeper_store_bytes",
     "Bytes the fenced store holds: lock names, keys and values (what "
     "--max-store-bytes limits).",
     &Stats::store_bytes},
    {"leasekeeper_store_keys", "Keys the fenced store holds, of all locks.",
     &Stats::store_keys},
    {"leasekeeper_registered_clients",
     "Clients registered now (holding, waiting or idle and not yet "
     "forgotten).",
     &Stats::registered_clients},
};

constexpr FieldSeries<Store, uint64_t> kStoreCounters[] = {
    {"leasekeeper_log_records_total", "Operations appended to the log.",
     &Store::records_appended},
    {"leasekeeper_log_bytes_total", "Encoded bytes appended to the log.",
     &Store::bytes_appended},
    {"leasekeeper_fsyncs_total", "fsync calls on the log.", &Store::fsyncs},
    {"leasekeeper_snapshots_total", "Snapshots written.",
     &Store::snapshots_written},
    {"leasekeeper_snapshot_failures_total",
     "Snapshot writes that failed (the log keeps every record; retried).",
     &Store::snapshot_failures},
    {"leasekeeper_storage_full_total",
     "Times the data dir's disk was found full (mutations refused until "
     "space was freed).",
     &Store::out_of_space_episodes},
};

// Bounds given in `Unit`s (ms, us, records) as Prometheus bounds in base
// units: bound / divisor.
template <typename Bounds>
std::vector<double> ScaledBounds(const Bounds& bounds, double divisor) {
  std::vector<double> out;
  for (auto bound : bounds) out.push_back(static_cast<double>(bound) / divisor);
  return out;
}

MetricFamily Single(MetricType type, const char* name, const char* help,
                    double value, const prometheus::Labels& labels = {}) {
  MetricFamily family = metrics::MakeFamily(type, name, help);
  metrics::AddValue(family, value, labels);
  return family;
}

// One family per entry of `series`, valued from `source`.
template <typename Source, typename Value, size_t kSize>
void AddFields(MetricType type,
               const FieldSeries<Source, Value> (&series)[kSize],
               const Source& source, std::vector<MetricFamily>& out) {
  for (const FieldSeries<Source, Value>& entry : series) {
    out.push_back(Single(type, entry.name, entry.help,
                         static_cast<double>(source.*entry.field)));
  }
}

void CollectStorage(const std::optional<Store>& stats,
                    std::vector<MetricFamily>& out) {
  const Store store = stats.value_or(Store{});
  AddFields(MetricType::Counter, kStoreCounters, store, out);
  out.push_back(metrics::MakeFamily(MetricType::Histogram,
                                    "leasekeeper_fsync_duration_seconds",
                                    "Latency of each fsync of the log."));
  metrics::AddHistogram(out.back(),
                        ScaledBounds(Store::kSyncMicrosBounds, 1e6),
                        store.fsync_micros,
                        static_cast<double>(store.fsync_micros_sum) / 1e6);
  out.push_back(metrics::MakeFamily(
      MetricType::Histogram, "leasekeeper_fsync_batch_records",
      "Records written to the log per write (group commit size)."));
  metrics::AddHistogram(out.back(), ScaledBounds(Store::kBatchBounds, 1),
                        store.group_records,
                        static_cast<double>(store.group_records_sum));
  out.push_back(Single(
      MetricType::Gauge, "leasekeeper_storage_healthy",
      "1 while the log accepts writes; 0 while its disk is full (until "
      "space is freed) or once a write or fsync failed (until a restart).",
      stats.has_value() && stats->health.ok() && stats->out_of_space.ok()
          ? 1
          : 0));
}

void CollectCluster(const ClusterNode::Stats& cluster,
                    std::vector<MetricFamily>& out) {
  out.push_back(metrics::MakeFamily(
      MetricType::Gauge, "leasekeeper_cluster_role",
      "1 for this node's role in the cluster (leasekeeper.v1.MemberRole)."));
  for (v1::MemberRole role : {v1::LEADER, v1::FOLLOWER, v1::CATCHING_UP,
                              v1::DISCONNECTED}) {
    metrics::AddValue(out.back(), cluster.role == role ? 1 : 0,
                      {{"role", v1::MemberRole_Name(role)}});
  }
  out.push_back(Single(MetricType::Gauge, "leasekeeper_cluster_epoch",
                       "The leadership this node knows of (the leader key's "
                       "etcd create revision); 0 if none.",
                       static_cast<double>(cluster.epoch)));
  out.push_back(Single(MetricType::Gauge,
                       "leasekeeper_cluster_applied_position",
                       "The last log record this node applied (leader: the "
                       "last one etcd committed).",
                       static_cast<double>(cluster.applied)));
  out.push_back(Single(
      MetricType::Gauge, "leasekeeper_cluster_replication_lag",
      "Records this node is behind the leader's last position, as the "
      "leader last reported it.",
      static_cast<double>(cluster.leader_position > cluster.applied
                              ? cluster.leader_position - cluster.applied
                              : 0)));
  const storage::EtcdCallStats& etcd = cluster.etcd;
  out.push_back(Single(MetricType::Gauge, "leasekeeper_etcd_reachable",
                       "1 while this node's etcd calls succeed; 0 while they "
                       "fail (or none succeeded yet).",
                       etcd.reachable ? 1 : 0));
  out.push_back(metrics::MakeFamily(
      MetricType::Counter, "leasekeeper_etcd_request_errors_total",
      "This node's etcd calls that failed, by method."));
  for (size_t i = 0; i < etcd.errors_by_method.size(); ++i) {
    metrics::AddValue(out.back(),
                      static_cast<double>(etcd.errors_by_method[i]),
                      {{"method", storage::EtcdCallStats::kMethods[i]}});
  }
  out.push_back(Single(
      MetricType::Gauge, "leasekeeper_etcd_seconds_since_last_success",
      "Seconds since etcd last answered a call of this node (since the start "
      "if it never did).",
      std::chrono::duration<double>(etcd.since_last_success).count()));
  if (!cluster.log.has_value()) return;
  const storage::EtcdLogStats& log = *cluster.log;
  out.push_back(metrics::MakeFamily(
      MetricType::Histogram, "leasekeeper_etcd_append_duration_seconds",
      "Latency of each guarded batch transaction to etcd (leader)."));
  metrics::AddHistogram(
      out.back(), ScaledBounds(storage::EtcdLogStats::kTxnMicrosBounds, 1e6),
      log.txn_micros, static_cast<double>(log.txn_micros_sum) / 1e6);
  out.push_back(Single(MetricType::Counter, "leasekeeper_etcd_transactions_total",
                       "Batch transactions etcd committed for this leader.",
                       static_cast<double>(log.transactions)));
  out.push_back(Single(MetricType::Counter, "leasekeeper_etcd_records_total",
                       "Log records this leader appended.",
                       static_cast<double>(log.records)));
  out.push_back(Single(MetricType::Counter, "leasekeeper_etcd_retries_total",
                       "Transaction attempts whose answer was lost and that "
                       "were sent again.",
                       static_cast<double>(log.retries)));
}

}  // namespace

std::vector<MetricFamily> ServerMetrics::Collect() const {
  const Stats stats = owner_.GetStats();
  const Counters& counters = stats.counters;
  std::vector<MetricFamily> out;

  out.push_back(metrics::MakeFamily(MetricType::Counter,
                                    "leasekeeper_acquisitions_total",
                                    kAcquisitionsHelp));
  for (const auto& [outcome, value] :
       {std::pair{"granted", counters.acquired_at_once},
        std::pair{"queued", counters.acquired_queued},
        std::pair{"deadlock", counters.acquired_deadlock}}) {
    metrics::AddValue(out.back(), static_cast<double>(value),
                      {{"outcome", outcome}});
  }
  AddFields(MetricType::Counter, kCounters, counters, out);
  out.push_back(metrics::MakeFamily(
      MetricType::Counter, "leasekeeper_store_mutations_total",
      "Writes and deletes the fenced store accepted, by op (a delete of a "
      "key that had no value included)."));
  for (const auto& [op, value] : {std::pair{"write", counters.store_writes},
                                  std::pair{"delete", counters.store_deletes}}) {
    metrics::AddValue(out.back(), static_cast<double>(value), {{"op", op}});
  }
  out.push_back(metrics::MakeFamily(
      MetricType::Histogram, "leasekeeper_acquire_wait_seconds",
      "How long granted Acquire calls waited in the queue, from queueing to "
      "grant (0 for a grant at once); unlike "
      "leasekeeper_rpc_duration_seconds, without the RPC's own time."));
  metrics::AddHistogram(
      out.back(), ScaledBounds(Counters::kAcquireWaitBoundsMs, 1e3),
      counters.acquire_waits,
      static_cast<double>(counters.acquire_wait_ms_sum) / 1e3);

  AddFields(MetricType::Gauge, kGauges, stats, out);
  const WatchHub::Stats watches = owner_.watch_hub().GetStats();
  out.push_back(Single(MetricType::Gauge, "leasekeeper_watchers",
                       "Watch streams open now (not cut).",
                       static_cast<double>(watches.watchers)));
  out.push_back(Single(MetricType::Counter, "leasekeeper_watchers_cut_total",
                       "Watch streams cut because their buffer filled "
                       "(WATCH_FELL_BEHIND).",
                       static_cast<double>(watches.cut)));
  out.push_back(Single(MetricType::Gauge, "leasekeeper_build_info",
                       "The build: its version and git commit (value 1).", 1,
                       {{"version", BuildVersion()}, {"commit", BuildCommit()}}));
  if (with_storage_ && cluster_ == nullptr) {
    CollectStorage(owner_.durability().stats(), out);
  }
  if (cluster_ != nullptr) CollectCluster(cluster_->GetStats(), out);
  return out;
}

}  // namespace leasekeeper::server
