// LeasekeeperServer: leasekeeperd as a library: the core owner, the timer
// thread, and the gRPC server with LockService, reflection and health
// (lifecycle, health and cluster mode: docs/design/server.md). main() runs
// it on a SteadyClock; tests in-process on 127.0.0.1:0 with a FakeClock.
// Thread-safety: Start and Shutdown from one controlling thread; owner()
// from any thread.
#ifndef LEASEKEEPER_SERVER_SERVER_H_
#define LEASEKEEPER_SERVER_SERVER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "metrics/exposer.h"
#include "metrics/process_collector.h"
#include "prometheus/collectable.h"
#include "prometheus/registry.h"
#include "security/authorizer.h"
#include "security/reloadable_server_tls.h"
#include "server/clock.h"
#include "server/cluster_node.h"
#include "server/cluster_peer_service.h"
#include "server/cluster_role.h"
#include "server/core_owner.h"
#include "server/expiry_ticker.h"
#include "server/lock_service.h"
#include "server/rpc_metrics.h"
#include "server/server_config.h"
#include "server/server_metrics.h"

namespace leasekeeper::server {

class LeasekeeperServer {
 public:
  // `clock` must outlive the server.
  LeasekeeperServer(ServerConfig config, Clock& clock);
  LeasekeeperServer(const LeasekeeperServer&) = delete;
  LeasekeeperServer& operator=(const LeasekeeperServer&) = delete;
  ~LeasekeeperServer();

  // Recovers config.durability.data_dir (logging what it found at info),
  // binds config.listen and starts serving. Outcomes: OK; UNAVAILABLE naming
  // the address and its flag if it cannot be bound, also when another
  // process listens on it (no listener of the daemon sets SO_REUSEPORT);
  // FAILED_PRECONDITION if already started; the
  // data dir's error (see storage::DurableStore::Open: another daemon holds
  // it, corruption before the tail of the log naming file and offset, a
  // format version mismatch, I/O); the TLS files' or the policy's error
  // (security/tls_config.h, security/policy.h: INVALID_ARGUMENT, NOT_FOUND,
  // FAILED_PRECONDITION naming the flag); UNAVAILABLE if
  // config.metrics_listen or config.health_listen cannot be bound.
  absl::Status Start();

  // The bound address, with the actual port (useful with port 0), e.g.
  // "127.0.0.1:41234". Valid after Start.
  const std::string& address() const { return address_; }
  int port() const { return port_; }

  // Idempotent; a no-op before Start.
  void Shutdown();

  // Re-reads the TLS files (--tls-cert, --tls-key, --client-ca) and the
  // policy (--policy) while serving; leasekeeperd does it on SIGHUP. Each
  // is replaced only if its new version passes the checks Start makes
  // (security/reloadable_server_tls.h, security/policy.h); otherwise the
  // previous one stays in force. Connections, calls and session streams
  // are not touched: new TLS handshakes use the new certificate, every
  // authorization check after the return the new policy. Logs one line per
  // part: info `event=reload_tls|reload_policy outcome=reloaded|skipped`,
  // or error `outcome=kept_previous error="..."` naming the flag and file.
  // Outcomes: OK when every configured part reloaded (also when nothing is
  // configured); otherwise the first part's error (see
  // security::LoadTlsMaterial and security::Policy::Load);
  // FAILED_PRECONDITION before Start.
  // REQUIRES: the controlling thread, after Start, before Shutdown.
  absl::Status ReloadSecurity();

  CoreOwner& owner() { return owner_; }

  // The plaintext health-only port (config.health_listen) and the /metrics
  // port (config.metrics_listen) actually bound; 0 when off. Valid after
  // Start.
  int health_port() const { return health_port_; }
  int metrics_port() const {
    return metrics_http_ != nullptr ? metrics_http_->port() : 0;
  }
  // The exposition of every series the server exposes, as /metrics serves
  // it (also without --metrics-listen), less the /metrics server's own
  // leasekeeper_metrics_http_* series. Valid after Start.
  std::string RenderMetrics() const;

 private:
  // Cluster mode's node, or null. Declared first: constructed before
  // config_ (which refers to it through open_log) and destroyed after the
  // core owner (whose log refers to its etcd client and lease).
  std::unique_ptr<ClusterNode> cluster_;
  const ServerConfig config_;
  OffsetClock clock_;
  CoreOwner owner_;
  // Set by Start from config_.security (server/server_operations.cc);
  // read by the handlers only after Start.
  security::Authorizer authorizer_ = security::Authorizer::Open();
  LockServiceImpl service_;
  // Cluster mode: the internal ClusterPeer service (snapshot transfer).
  std::unique_ptr<ClusterPeerService> peer_service_;
  ExpiryTicker ticker_;
  // Metrics (server/server_operations.cc); declared before server_ so that
  // gRPC, whose interceptors use them, is destroyed first, and after owner_
  // so that the /metrics threads, which read it, stop before it goes.
  // registry_ holds the series updated on the request path (rpc_metrics_);
  // the collectors read their values when scraped.
  std::shared_ptr<prometheus::Registry> registry_ =
      std::make_shared<prometheus::Registry>();
  std::unique_ptr<RpcMetrics> rpc_metrics_;
  std::shared_ptr<ServerMetrics> server_metrics_;
  std::shared_ptr<metrics::ProcessCollector> process_metrics_ =
      std::make_shared<metrics::ProcessCollector>();
  std::unique_ptr<metrics::MetricsExposer> metrics_http_;
  int health_port_ = 0;
  // The listening port's credentials (server/server_operations.cc); before
  // server_, which calls back into it on every handshake until destroyed.
  std::unique_ptr<security::ReloadableServerTls> tls_;
  std::unique_ptr<grpc::Server> server_;
  // grpc.health.v1.Health says NOT_SERVING (overall and for LockService)
  // once the store has failed: every mutation is refused then, so a probe
  // should restart the daemon. A failure seen before the health service
  // exists (during recovery) is remembered and applied when it does.
  absl::Mutex health_mu_;
  grpc::HealthCheckServiceInterface* health_ ABSL_GUARDED_BY(health_mu_) =
      nullptr;
  bool storage_failed_ ABSL_GUARDED_BY(health_mu_) = false;
  // While the data dir's disk is full: NOT_SERVING until the log writes
  // again, which it does by itself once space is freed.
  bool storage_full_ ABSL_GUARDED_BY(health_mu_) = false;
  // Cluster mode: what the node's role says (until it says, NOT_SERVING).
  bool cluster_serving_ ABSL_GUARDED_BY(health_mu_) = false;
  void MarkStorageFailed();
  void SetStorageFull(bool full);
  // server/server_operations.cc. Loads the TLS files and the policy,
  // setting tls_ and authorizer_; returns the listening port's credentials.
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> PrepareSecurity();
  // Registers the metrics and starts /metrics if configured.
  absl::Status PrepareMetrics();
  // Everything /metrics serves besides the exposer's own series.
  std::vector<std::shared_ptr<prometheus::Collectable>> MetricsCollectables()
      const;
  // Adds the health-only port and the metrics interceptor.
  void ConfigureOperatorFeatures(grpc::ServerBuilder& builder);
  // Registers LockService (and, in cluster mode, the peer service) and
  // sets the message size and transport options.
  void RegisterServices(grpc::ServerBuilder& builder);
  absl::Status RecoverStorage();
  // Cluster mode: starts the node (server.cc), and its hooks.
  absl::Status StartCluster();
  void SetClusterHealth(bool serving);
  // Without --cluster: ClusterStatus's answer.
  SingleNodeRole single_node_;

  std::string address_;
  int port_ = 0;
  bool started_ = false;
  bool shut_down_ = false;
};

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_SERVER_H_
