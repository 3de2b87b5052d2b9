// ServerMetrics: the Prometheus series leasekeeperd exposes about its core,
// sessions and storage, and its build, read from CoreOwner each time
// /metrics is scraped (a prometheus::Collectable).
//
// Nothing here is on a request's path: CoreOwner keeps plain counters under
// its mutex (CoreOwner::GetCounters) and sizes it knows in O(1)
// (CoreOwner::GetStats), and the durable store keeps its own statistics;
// each scrape copies each of them once (one short mutex hold apiece). The
// per-RPC series and the limit refusals come from server/rpc_metrics.h, the
// process_* series from metrics/process_collector.h.
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
//   leasekeeper_acquire_wait_seconds       histogram: how long granted
//                                  Acquire calls waited in the queue (0 for
//                                  a grant at once; from queueing to grant
//                                  for a call that waited), apart from the
//                                  RPC latency that includes it
//   leasekeeper_leases_held        gauge: leases held now (a SHARED lock
//                                  with n holders counts n)
//   leasekeeper_waiters            gauge: requests queued now
//   leasekeeper_waiting_calls      gauge: Acquire calls parked waiting
//   leasekeeper_sessions_open      gauge: sessions open or in grace
//   leasekeeper_retry_cache_entries gauge
//   leasekeeper_build_info{version,commit} gauge, always 1: BuildVersion()
//                                  and BuildCommit() (version/version.h)
// With a data dir (storage/durable_store.h):
//   leasekeeper_log_records_total, leasekeeper_log_bytes_total,
//   leasekeeper_fsyncs_total, leasekeeper_snapshots_total
//   leasekeeper_fsync_duration_seconds     histogram of fsync latency
//   leasekeeper_fsync_batch_records        histogram of records per write
//   leasekeeper_storage_healthy            gauge: 1, or 0 once a write or
//                                          fsync failed
// In cluster mode (server/cluster_node.h):
//   leasekeeper_cluster_role{role="LEADER|FOLLOWER|CATCHING_UP|DISCONNECTED"}
//                                          gauge: 1 for this node's role
//   leasekeeper_cluster_epoch              gauge: the leadership it knows
//   leasekeeper_cluster_applied_position   gauge: its last applied record
//   leasekeeper_cluster_replication_lag    gauge: records behind the
//                                          leader's last position
//   leasekeeper_etcd_append_duration_seconds histogram: each batch
//                                          transaction (leader)
//   leasekeeper_etcd_transactions_total, leasekeeper_etcd_records_total,
//   leasekeeper_etcd_retries_total         counters (leader): the batching
//                                          factor is records / transactions
//
// Thread-safety: Collect may run on several /metrics threads at once; it
// takes CoreOwner's mutex (and the store's) briefly, never while holding
// any lock of its own.
#ifndef LEASEKEEPER_SERVER_SERVER_METRICS_H_
#define LEASEKEEPER_SERVER_SERVER_METRICS_H_

#include <vector>

#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"
#include "server/cluster_node.h"
#include "server/core_owner.h"

namespace leasekeeper::server {

class ServerMetrics final : public prometheus::Collectable {
 public:
  // REQUIRES: `owner` outlives every Collect. `with_storage`: the owner has
  // a data dir (the storage series are collected only then).
  // `cluster`: the node in cluster mode (outlives every Collect), or null.
  ServerMetrics(CoreOwner& owner, bool with_storage,
                const ClusterNode* cluster = nullptr)
      : owner_(owner), with_storage_(with_storage), cluster_(cluster) {}
  ServerMetrics(const ServerMetrics&) = delete;
  ServerMetrics& operator=(const ServerMetrics&) = delete;

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  CoreOwner& owner_;
  const bool with_storage_;
  const ClusterNode* const cluster_;
};

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_SERVER_METRICS_H_
