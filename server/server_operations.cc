// LeasekeeperServer's operator-facing parts: TLS and authorization from
// config.security, the metrics registry with its /metrics endpoint and RPC
// interceptor, and the plaintext health-only port. Start (server.cc) calls
// them in this order: PrepareSecurity, PrepareMetrics, then
// ConfigureOperatorFeatures on the builder.
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "prometheus/text_serializer.h"
#include "security/policy.h"
#include "security/reloadable_server_tls.h"
#include "security/tls_config.h"
#include "server/server.h"
#include "server/server_metrics.h"
#include "server/undecodable_request.h"
#include "spdlog/spdlog.h"

namespace leasekeeper::server {

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>>
LeasekeeperServer::PrepareSecurity() {
  const SecurityConfig& security = config_.security;
  absl::StatusOr<std::unique_ptr<security::ReloadableServerTls>> tls =
      security::ReloadableServerTls::Create(
          security::TlsFiles{.cert_file = security.tls_cert_file,
                             .key_file = security.tls_key_file,
                             .client_ca_file = security.client_ca_file});
  if (!tls.ok()) return tls.status();
  tls_ = *std::move(tls);
  std::optional<security::Policy> policy;
  if (!security.policy_file.empty()) {
    if (tls_->mode() != security::TransportSecurity::kMutualTls) {
      return absl::InvalidArgumentError(
          "--policy needs --client-ca: grants are for client certificate "
          "identities");
    }
    absl::StatusOr<security::Policy> loaded =
        security::Policy::Load(security.policy_file);
    if (!loaded.ok()) return loaded.status();
    policy = *std::move(loaded);
  }
  switch (tls_->mode()) {
    case security::TransportSecurity::kPlaintext:
      authorizer_ = security::Authorizer::Open();
      break;
    case security::TransportSecurity::kTls:
      authorizer_ = security::Authorizer::ServerTls();
      break;
    case security::TransportSecurity::kMutualTls:
      authorizer_ = security::Authorizer::MutualTls(policy);
      break;
  }
  spdlog::info("event=transport_security mode={} detail=\"{}\" policy={}",
               security::TransportSecurityName(tls_->mode()), tls_->summary(),
               policy.has_value()
                   ? absl::StrCat(security.policy_file, " (",
                                  policy->identity_count(), " identities)")
                   : std::string("none"));
  return tls_->credentials();
}

absl::Status LeasekeeperServer::ReloadSecurity() {
  if (tls_ == nullptr) {
    return absl::FailedPreconditionError("the server has not started");
  }
  const SecurityConfig& security = config_.security;
  absl::Status outcome = absl::OkStatus();
  if (tls_->mode() == security::TransportSecurity::kPlaintext) {
    spdlog::info("event=reload_tls outcome=skipped detail=\"plaintext: no "
                 "TLS files to re-read\"");
  } else if (absl::Status reloaded = tls_->Reload(); reloaded.ok()) {
    spdlog::info("event=reload_tls outcome=reloaded detail=\"{}\"",
                 tls_->summary());
  } else {
    spdlog::error(
        "event=reload_tls outcome=kept_previous error=\"{}\" detail=\"{}\"",
        std::string(reloaded.message()), tls_->summary());
    outcome = reloaded;
  }
  if (security.policy_file.empty()) {
    spdlog::info("event=reload_policy outcome=skipped detail=\"no --policy\"");
    return outcome;
  }
  absl::StatusOr<security::Policy> policy =
      security::Policy::Load(security.policy_file);
  absl::Status replaced =
      policy.ok() ? authorizer_.ReplacePolicy(*std::move(policy))
                  : policy.status();
  if (replaced.ok()) {
    spdlog::info("event=reload_policy outcome=reloaded policy={}",
                 security.policy_file);
  } else {
    spdlog::error("event=reload_policy outcome=kept_previous error=\"{}\"",
                  std::string(replaced.message()));
    if (outcome.ok()) outcome = replaced;
  }
  return outcome;
}

absl::Status LeasekeeperServer::PrepareMetrics() {
  absl::StatusOr<std::unique_ptr<RpcMetrics>> rpc =
      RpcMetrics::Create(*registry_);
  if (!rpc.ok()) return rpc.status();
  rpc_metrics_ = *std::move(rpc);
  server_metrics_ = std::make_shared<ServerMetrics>(
      owner_, !config_.durability.data_dir.empty(), cluster_.get());
  if (config_.metrics_listen.empty()) return absl::OkStatus();
  metrics::ExposerOptions options;
  // Shedding reports (rate-limited by the exposer) and accept errors.
  options.error_log = [](absl::string_view message) {
    spdlog::warn("event=metrics_http detail=\"{}\"", std::string(message));
  };
  const std::vector<std::shared_ptr<prometheus::Collectable>> collectables =
      MetricsCollectables();
  absl::StatusOr<std::unique_ptr<metrics::MetricsExposer>> http =
      metrics::MetricsExposer::Start(
          config_.metrics_listen,
          std::vector<std::weak_ptr<prometheus::Collectable>>(
              collectables.begin(), collectables.end()),
          std::move(options));
  if (!http.ok()) return http.status();
  metrics_http_ = *std::move(http);
  spdlog::info("event=metrics_listening address={} path=/metrics",
               metrics_http_->address());
  return absl::OkStatus();
}

std::vector<std::shared_ptr<prometheus::Collectable>>
LeasekeeperServer::MetricsCollectables() const {
  return {registry_, server_metrics_, process_metrics_};
}

std::string LeasekeeperServer::RenderMetrics() const {
  std::vector<prometheus::MetricFamily> families;
  for (const std::shared_ptr<prometheus::Collectable>& collectable :
       MetricsCollectables()) {
    if (collectable == nullptr) continue;
    for (prometheus::MetricFamily& family : collectable->Collect()) {
      families.push_back(std::move(family));
    }
  }
  return prometheus::TextSerializer().Serialize(families);
}

void LeasekeeperServer::ConfigureOperatorFeatures(
    grpc::ServerBuilder& builder) {
  if (!config_.health_listen.empty()) {
    // Plaintext on purpose: the kubelet's gRPC probe presents no client
    // certificate. Every LockService call on it is refused by the
    // Authorizer when TLS is on (the call is not over TLS).
    builder.AddListeningPort(config_.health_listen,
                             grpc::InsecureServerCredentials(), &health_port_);
  }
  std::vector<
      std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
      interceptors;
  // First, so that the metrics see the status it rewrites.
  interceptors.push_back(MakeUndecodableRequestInterceptorFactory());
  interceptors.push_back(rpc_metrics_->MakeInterceptorFactory());
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
}

}  // namespace leasekeeper::server
