// Server metrics: the Prometheus series leasekeeperd exposes about its
// core, sessions and storage, read from CoreOwner when /metrics is scraped.
//
// Nothing here is on a request's path: CoreOwner keeps plain counters under
// its mutex (CoreOwner::GetCounters) and sizes it knows in O(1)
// (CoreOwner::GetStats), and the durable store keeps its own statistics;
// each scrape copies them (one short mutex hold per series). The per-RPC
// series come from server/rpc_metrics.h.
//
// Series (lock names and client ids are never labels):
//   leasekeeper_acquisitions_total{outcome="granted|queued|deadlock"}
//                                  Acquires applied, by immediate outcome
//   leasekeeper_queue_grants_total waiters granted later, from the queue
//   leasekeeper_lease_lapses_total leases that reached their end unrenewed
//   leasekeeper_renewals_total     successful Renews
//   leasekeeper_releases_total     leases ended by Release, session loss or
//                                  ForceRelease
//   leasekeeper_withdrawals_total  waits withdrawn (Release, timeout,
//                                  cancellation, session loss)
//   leasekeeper_deadlock_victims_total     clients aborted to break cycles
//   leasekeeper_stale_writes_refused_total Writes refused: stale token
//   leasekeeper_sessions_lost_total        sessions ended by their grace
//   leasekeeper_forced_releases_total      leases ended by ForceRelease
//   leasekeeper_limit_refusals_total{limit="max-locks-per-client"}
//   leasekeeper_leases_held        gauge: leases held now (a SHARED lock
//                                  with n holders counts n)
//   leasekeeper_waiters            gauge: requests queued now
//   leasekeeper_waiting_calls      gauge: Acquire calls parked waiting
//   leasekeeper_sessions_open      gauge: sessions open or in grace
//   leasekeeper_retry_cache_entries gauge
// With a data dir (storage/durable_store.h):
//   leasekeeper_log_records_total, leasekeeper_log_bytes_total,
//   leasekeeper_fsyncs_total, leasekeeper_snapshots_total
//   leasekeeper_fsync_duration_seconds     histogram of fsync latency
//   leasekeeper_fsync_batch_records        histogram of records per write
//   leasekeeper_storage_healthy            gauge: 1, or 0 once a write or
//                                          fsync failed
//
// Thread-safety: RegisterServerMetrics once, at startup; the callbacks run
// on the /metrics thread and take CoreOwner's mutex briefly (never while
// holding the registry's, see metrics/registry.h).
#ifndef LEASEKEEPER_SERVER_SERVER_METRICS_H_
#define LEASEKEEPER_SERVER_SERVER_METRICS_H_

#include "absl/status/status.h"
#include "metrics/registry.h"
#include "server/core_owner.h"

namespace leasekeeper::server {

// Registers the series above in `registry`, reading `owner`. REQUIRES:
// `owner` outlives every Render of `registry`; `with_storage`: the owner has
// a data dir (the storage series are registered only then). Outcomes: OK;
// the registry's error if a name is taken.
absl::Status RegisterServerMetrics(metrics::Registry& registry,
                                   CoreOwner& owner, bool with_storage);

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_SERVER_METRICS_H_
