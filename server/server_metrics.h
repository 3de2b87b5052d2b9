// ServerMetrics: the Prometheus series leasekeeperd exposes about its core,
// sessions, storage and build, read from CoreOwner at each /metrics scrape
// (docs/design/server.md lists them). Owned by LeasekeeperServer.
// Thread-safety: Collect may run on several threads at once; it takes
// CoreOwner's mutex (and the store's) briefly, holding no lock of its own.
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
