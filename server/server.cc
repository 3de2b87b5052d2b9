#include "server/server.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "server/reflection.h"
#include "server/transport_options.h"
#include "spdlog/spdlog.h"

namespace leasekeeper::server {
namespace {

constexpr char kServiceName[] = "leasekeeper.v1.LockService";

std::string HostPart(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  return colon == std::string::npos ? listen : listen.substr(0, colon);
}

}  // namespace

namespace {

// Cluster mode: the core owner's log is the node's (OpenLeaderLog).
ServerConfig WithClusterLog(ServerConfig config, ClusterNode* node) {
  if (node != nullptr) {
    config.durability.open_log = [node](StateMachine& machine,
                                        storage::ServerState& server) {
      return node->OpenLeaderLog(machine, server);
    };
  }
  return config;
}

}  // namespace

LeasekeeperServer::LeasekeeperServer(ServerConfig config, Clock& clock)
    : cluster_(config.cluster.name.empty()
                   ? nullptr
                   : std::make_unique<ClusterNode>(config)),
      config_(WithClusterLog(std::move(config), cluster_.get())),
      clock_(clock),
      owner_(config_, clock_),
      service_(owner_, config_.limits, &authorizer_),
      ticker_(owner_, clock_) {}

LeasekeeperServer::~LeasekeeperServer() { Shutdown(); }

void LeasekeeperServer::RegisterServices(grpc::ServerBuilder& builder) {
  service_.SetClusterRole(cluster_ != nullptr
                              ? static_cast<const ClusterRole*>(cluster_.get())
                              : &single_node_);
  service_.SetRpcMetrics(rpc_metrics_.get());
  builder.RegisterService(&service_);
  if (cluster_ != nullptr) {
    peer_service_ = std::make_unique<ClusterPeerService>(
        config_.cluster.name, config_.durability.data_dir, authorizer_,
        [node = cluster_.get()] { return node->PeerSecret(); });
    builder.RegisterService(peer_service_.get());
  }
  // Room for the largest value plus the rest of a WriteRequest, unless
  // --max-request-bytes says otherwise (flags.cc keeps it above that).
  const size_t max_message =
      config_.limits.max_request_bytes != 0
          ? config_.limits.max_request_bytes
          : std::max<size_t>(4 << 20,
                             config_.limits.max_value_bytes + (64 << 10));
  builder.SetMaxReceiveMessageSize(static_cast<int>(max_message));
  AddTransportOptions(builder);
}

absl::Status LeasekeeperServer::Start() {
  if (server_ != nullptr || started_) {
    return absl::FailedPreconditionError("server already started");
  }
  started_ = true;
  // Configuration errors first, before the data dir is touched.
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      PrepareSecurity();
  if (!credentials.ok()) return credentials.status();
  if (cluster_ != nullptr) {
    owner_.durability().SetFailureObserver(
        [this](const absl::Status& status) { cluster_->LogFailed(status); });
  } else {
    owner_.durability().SetFailureObserver(
        [this](const absl::Status&) { MarkStorageFailed(); });
    owner_.durability().SetSpaceObserver(
        [this](const absl::Status& full) { SetStorageFull(!full.ok()); });
    if (absl::Status s = RecoverStorage(); !s.ok()) return s;
  }
  if (absl::Status s = PrepareMetrics(); !s.ok()) return s;
  grpc::EnableDefaultHealthCheckService(true);
  // v1alpha for every builder (libgrpc++_reflection also does this when
  // loaded); v1 for this one.
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  EnableServerReflection(builder);
  builder.AddListeningPort(config_.listen, *credentials, &port_);
  ConfigureOperatorFeatures(builder);
  RegisterServices(builder);
  // gRPC sets SO_REUSEPORT on its listeners by default, so a second daemon
  // on the same port would start and the kernel would spread connections
  // over two lock services, each granting the same lock. Without it a port
  // in use is a start-up error.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || port_ == 0 ||
      (!config_.health_listen.empty() && health_port_ == 0)) {
    if (server_ != nullptr) server_->Shutdown();
    server_.reset();
    // gRPC binds the ports in the order they were added and stops at the
    // first failure: the main port first, then the health port.
    const bool main_failed = port_ == 0;
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ",
                     main_failed ? config_.listen : config_.health_listen,
                     main_failed ? " (--listen)" : " (--health-listen)",
                     ": the address is in use or not available here"));
  }
  address_ = absl::StrCat(HostPart(config_.listen), ":", port_);
  single_node_.SetAddress(address_);
  {
    absl::MutexLock lock(&health_mu_);
    health_ = server_->GetHealthCheckService();
    const bool serving =
        !storage_failed_ && !storage_full_ &&
        (cluster_ == nullptr || cluster_serving_);
    if (health_ != nullptr) {
      health_->SetServingStatus(kServiceName, serving);
      if (!serving) health_->SetServingStatus(false);
    }
  }
  if (cluster_ != nullptr) return StartCluster();
  ticker_.Start();
  return absl::OkStatus();
}

absl::Status LeasekeeperServer::StartCluster() {
  ClusterNode::Hooks hooks;
  hooks.take_over = [this]() -> absl::Status {
    if (absl::Status s = RecoverStorage(); !s.ok()) return s;
    ticker_.Start();
    return absl::OkStatus();
  };
  hooks.step_down = [this] { owner_.BeginShutdown(); };
  hooks.set_health = [this](bool serving) { SetClusterHealth(serving); };
  hooks.deposed_exit = config_.cluster.deposed_exit;
  const std::string advertise = config_.cluster.advertise.empty()
                                    ? address_
                                    : config_.cluster.advertise;
  absl::Status started = cluster_->Start(advertise, std::move(hooks));
  if (!started.ok()) {
    server_->Shutdown();
    server_.reset();
  }
  return started;
}

void LeasekeeperServer::SetClusterHealth(bool serving) {
  absl::MutexLock lock(&health_mu_);
  cluster_serving_ = serving;
  if (health_ == nullptr) return;
  health_->SetServingStatus(serving);
  health_->SetServingStatus(kServiceName, serving);
}

void LeasekeeperServer::MarkStorageFailed() {
  absl::MutexLock lock(&health_mu_);
  storage_failed_ = true;
  // Every service, the overall "" included.
  if (health_ != nullptr) health_->SetServingStatus(false);
}

void LeasekeeperServer::SetStorageFull(bool full) {
  absl::MutexLock lock(&health_mu_);
  storage_full_ = full;
  if (health_ == nullptr) return;
  // Only the local log has a disk to fill, so only a single node gets here.
  const bool serving = !storage_failed_ && !storage_full_;
  health_->SetServingStatus(serving);
  health_->SetServingStatus(kServiceName, serving);
}

absl::Status LeasekeeperServer::RecoverStorage() {
  const DurabilityConfig& durability = config_.durability;
  if (durability.data_dir.empty()) return absl::OkStatus();
  absl::StatusOr<storage::RecoveryReport> report = owner_.OpenStorage();
  if (!report.ok()) return report.status();
  for (const std::string& warning : report->warnings) {
    spdlog::warn("event=storage_recovery_warning data_dir={} warning=\"{}\"",
                 durability.data_dir, warning);
  }
  if (!report->fresh) clock_.ContinueFrom(report->resume_tick);
  spdlog::info(
      "event=storage_recovered data_dir={} fsync={} fresh={} locks={} "
      "held_leases={} waiters_withdrawn={} clients={} snapshot_position={} "
      "records_replayed={} last_position={} resume_tick={} "
      "leases_graced={} tail_dropped={} elapsed_ms={} summary=\"{}\"",
      durability.data_dir,
      std::string(storage::FsyncPolicyName(durability.fsync)),
      report->fresh, report->locks, report->held_leases, report->waiters,
      report->clients, report->snapshot_position, report->records_replayed,
      report->last_position, report->resume_tick, report->leases_graced,
      report->tail_dropped, report->elapsed_us / 1000, report->Summary());
  return owner_.SettleRecoveredState();
}

void LeasekeeperServer::Shutdown() {
  if (server_ == nullptr || shut_down_) return;
  shut_down_ = true;
  // No election or take-over from here on (the node resigns below, once
  // its log is closed).
  if (cluster_ != nullptr) cluster_->Stop();
  {
    absl::MutexLock lock(&health_mu_);
    if (health_ != nullptr) {
      health_->Shutdown();  // every service NOT_SERVING from now on
    }
    health_ = nullptr;
  }
  // Answer every parked waiter and end session streams first, so that
  // gRPC's shutdown finds nothing left to wait for.
  owner_.BeginShutdown();
  // gRPC takes its shutdown deadline on the system clock.
  server_->Shutdown(std::chrono::system_clock::now() +
                    std::chrono::milliseconds(config_.shutdown_grace_ms));
  ticker_.Stop();
  owner_.durability().Close();
  if (cluster_ != nullptr) cluster_->Resign();
  metrics_http_.reset();  // frees the /metrics port
}

}  // namespace leasekeeper::server
