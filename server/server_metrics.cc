#include "server/server_metrics.h"

#include <cstdint>
#include <functional>
#include <vector>

#include "storage/durable_store.h"

namespace leasekeeper::server {
namespace {

using Counters = CoreOwner::Counters;
using Stats = CoreOwner::Stats;

// Cumulative Prometheus counts from the store's per-bucket counts.
template <size_t kBounds>
metrics::Histogram::Snapshot Cumulative(
    const std::array<uint64_t, kBounds + 1>& buckets, double sum) {
  metrics::Histogram::Snapshot snapshot;
  snapshot.cumulative.resize(kBounds + 1);
  uint64_t running = 0;
  for (size_t i = 0; i <= kBounds; ++i) {
    running += buckets[i];
    snapshot.cumulative[i] = running;
  }
  snapshot.count = running;
  snapshot.sum = sum;
  return snapshot;
}

}  // namespace

absl::Status RegisterServerMetrics(metrics::Registry& registry,
                                   CoreOwner& owner, bool with_storage) {
  struct CounterSeries {
    const char* name;
    const char* help;
    metrics::Labels labels;
    uint64_t Counters::*field;
  };
  const char* const kAcquisitionsHelp =
      "Acquire requests the core applied, by immediate outcome (a retry "
      "answered from the retry cache is not counted again).";
  const std::vector<CounterSeries> counters = {
      {"leasekeeper_acquisitions_total",
       kAcquisitionsHelp,
       {{"outcome", "granted"}},
       &Counters::acquired_at_once},
      {"leasekeeper_acquisitions_total",
       kAcquisitionsHelp,
       {{"outcome", "queued"}},
       &Counters::acquired_queued},
      {"leasekeeper_acquisitions_total",
       kAcquisitionsHelp,
       {{"outcome", "deadlock"}},
       &Counters::acquired_deadlock},
      {"leasekeeper_queue_grants_total",
       "Queued requests granted later, when their turn came.",
       {},
       &Counters::granted_from_queue},
      {"leasekeeper_lease_lapses_total",
       "Leases that reached their end without renewal.",
       {},
       &Counters::lapses},
      {"leasekeeper_renewals_total",
       "Successful Renew calls.",
       {},
       &Counters::renewals},
      {"leasekeeper_releases_total",
       "Leases ended by their holder: Release, session loss or ForceRelease.",
       {},
       &Counters::releases},
      {"leasekeeper_withdrawals_total",
       "Waits withdrawn: Release, wait timeout, cancellation, session loss.",
       {},
       &Counters::withdrawals},
      {"leasekeeper_deadlock_victims_total",
       "Clients aborted to break a wait-for cycle.",
       {},
       &Counters::deadlock_victims},
      {"leasekeeper_stale_writes_refused_total",
       "Writes refused because their fencing token was stale.",
       {},
       &Counters::stale_writes_refused},
      {"leasekeeper_sessions_lost_total",
       "Sessions whose stream ended and whose grace ran out; their leases "
       "were released.",
       {},
       &Counters::sessions_lost},
      {"leasekeeper_forced_releases_total",
       "Leases ended by an operator's ForceRelease.",
       {},
       &Counters::forced_releases},
      {"leasekeeper_limit_refusals_total",
       "Requests refused by a limit that depends on the server's state.",
       {{"limit", "max-locks-per-client"}},
       &Counters::locks_per_client_refused},
      {"leasekeeper_limit_refusals_total",
       "Requests refused by a limit that depends on the server's state.",
       {{"limit", "max-store-bytes"}},
       &Counters::store_bytes_refused},
      {"leasekeeper_limit_refusals_total",
       "Requests refused by a limit that depends on the server's state.",
       {{"limit", "max-keys-per-lock"}},
       &Counters::keys_per_lock_refused},
  };
  for (const CounterSeries& series : counters) {
    const auto field = series.field;
    if (absl::Status status = registry.AddCallbackCounter(
            series.name, series.help,
            [&owner, field] { return owner.GetCounters().*field; },
            series.labels);
        !status.ok()) {
      return status;
    }
  }

  struct GaugeSeries {
    const char* name;
    const char* help;
    size_t Stats::*field;
  };
  const std::vector<GaugeSeries> gauges = {
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
      {"leasekeeper_registered_clients",
       "Clients registered now (holding, waiting or idle and not yet "
       "forgotten).",
       &Stats::registered_clients},
  };
  for (const GaugeSeries& series : gauges) {
    const auto field = series.field;
    if (absl::Status status = registry.AddCallbackGauge(
            series.name, series.help,
            [&owner, field] {
              return static_cast<double>(owner.GetStats().*field);
            });
        !status.ok()) {
      return status;
    }
  }
  if (!with_storage) return absl::OkStatus();

  using Store = storage::DurableStoreStats;
  auto stats = [&owner] { return owner.StorageStats().value_or(Store{}); };
  struct StoreCounter {
    const char* name;
    const char* help;
    uint64_t Store::*field;
  };
  const std::vector<StoreCounter> store_counters = {
      {"leasekeeper_log_records_total", "Operations appended to the log.",
       &Store::records_appended},
      {"leasekeeper_log_bytes_total", "Encoded bytes appended to the log.",
       &Store::bytes_appended},
      {"leasekeeper_fsyncs_total", "fsync calls on the log.", &Store::fsyncs},
      {"leasekeeper_snapshots_total", "Snapshots written.",
       &Store::snapshots_written},
  };
  for (const StoreCounter& series : store_counters) {
    const auto field = series.field;
    if (absl::Status status = registry.AddCallbackCounter(
            series.name, series.help,
            [stats, field] { return stats().*field; });
        !status.ok()) {
      return status;
    }
  }

  std::vector<double> sync_bounds;
  for (uint64_t micros : Store::kSyncMicrosBounds) {
    sync_bounds.push_back(static_cast<double>(micros) / 1e6);
  }
  if (absl::Status status = registry.AddCallbackHistogram(
          "leasekeeper_fsync_duration_seconds",
          "Latency of each fsync of the log.", sync_bounds,
          [stats] {
            const Store store = stats();
            return Cumulative<Store::kSyncMicrosBounds.size()>(
                store.fsync_micros,
                static_cast<double>(store.fsync_micros_sum) / 1e6);
          });
      !status.ok()) {
    return status;
  }
  std::vector<double> batch_bounds(Store::kBatchBounds.begin(),
                                   Store::kBatchBounds.end());
  if (absl::Status status = registry.AddCallbackHistogram(
          "leasekeeper_fsync_batch_records",
          "Records written to the log per write (group commit size).",
          batch_bounds,
          [stats] {
            const Store store = stats();
            return Cumulative<Store::kBatchBounds.size()>(
                store.group_records,
                static_cast<double>(store.group_records_sum));
          });
      !status.ok()) {
    return status;
  }
  return registry.AddCallbackGauge(
      "leasekeeper_storage_healthy",
      "1 while the log accepts writes; 0 once a write or fsync failed "
      "(mutations are refused until a restart).",
      [&owner] {
        std::optional<Store> store = owner.StorageStats();
        return store.has_value() && store->health.ok() ? 1.0 : 0.0;
      });
}

}  // namespace leasekeeper::server
