#include "security/reloadable_server_tls.h"

#include <grpc/grpc.h>

#include <utility>

#include "grpcpp/security/auth_metadata_processor.h"

namespace leasekeeper::security {
namespace {

// grpc::ServerCredentials over C credentials it owns. gRPC's C++ API makes
// SSL credentials only from fixed certificates; the fetcher exists only in
// the C API, so this adapter does what grpc::SslServerCredentials' own
// class does: add the port with the C credentials.
class FetchingServerCredentials final : public grpc::ServerCredentials {
 public:
  explicit FetchingServerCredentials(grpc_server_credentials* credentials)
      : credentials_(credentials) {}
  ~FetchingServerCredentials() override {
    grpc_server_credentials_release(credentials_);
  }
  FetchingServerCredentials(const FetchingServerCredentials&) = delete;
  FetchingServerCredentials& operator=(const FetchingServerCredentials&) =
      delete;

  // leasekeeperd authorizes in its handlers (security/authorizer.h) and
  // installs no metadata processor; none is kept.
  void SetAuthMetadataProcessor(
      const std::shared_ptr<grpc::AuthMetadataProcessor>& /*processor*/)
      override {}

 private:
  int AddPortToServer(const std::string& address,
                      grpc_server* server) override {
    return grpc_server_add_http2_port(server, address.c_str(), credentials_);
  }

  grpc_server_credentials* const credentials_;
};

grpc_ssl_server_certificate_config* ConfigOf(const TlsMaterial& material) {
  const grpc_ssl_pem_key_cert_pair pair = {material.key_pem.c_str(),
                                           material.cert_pem.c_str()};
  // gRPC copies the strings. It insists on root certificates in a fetched
  // config even when it requests no client certificate (server-only TLS);
  // then the server's own chain stands in, never used to verify anything.
  return grpc_ssl_server_certificate_config_create(
      material.mode == TransportSecurity::kMutualTls
          ? material.client_ca_pem.c_str()
          : material.cert_pem.c_str(),
      &pair, 1);
}

}  // namespace

absl::StatusOr<std::unique_ptr<ReloadableServerTls>>
ReloadableServerTls::Create(TlsFiles files) {
  absl::StatusOr<TlsMaterial> material = LoadTlsMaterial(files);
  if (!material.ok()) return material.status();
  return std::unique_ptr<ReloadableServerTls>(
      new ReloadableServerTls(std::move(files), *std::move(material)));
}

ReloadableServerTls::ReloadableServerTls(TlsFiles files, TlsMaterial material)
    : files_(std::move(files)),
      mode_(material.mode),
      material_(std::move(material)) {
  if (mode_ == TransportSecurity::kPlaintext) {
    credentials_ = grpc::InsecureServerCredentials();
  } else {
    grpc_ssl_server_credentials_options* options =
        grpc_ssl_server_credentials_create_options_using_config_fetcher(
            mode_ == TransportSecurity::kMutualTls
                ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE,
            &ReloadableServerTls::Fetch, this);
    // Takes ownership of the options.
    credentials_ = std::make_shared<FetchingServerCredentials>(
        grpc_ssl_server_credentials_create_with_options(options));
  }
}

std::string ReloadableServerTls::summary() const {
  absl::MutexLock lock(&mu_);
  return material_.summary;
}

absl::Status ReloadableServerTls::Reload() {
  if (mode_ == TransportSecurity::kPlaintext) return absl::OkStatus();
  // Read and checked without the lock: handshakes keep the old material
  // meanwhile.
  absl::StatusOr<TlsMaterial> material = LoadTlsMaterial(files_);
  if (!material.ok()) return material.status();
  absl::MutexLock lock(&mu_);
  material_ = *std::move(material);
  ++generation_;
  return absl::OkStatus();
}

grpc_ssl_certificate_config_reload_status ReloadableServerTls::Fetch(
    void* self, grpc_ssl_server_certificate_config** config) {
  auto* tls = static_cast<ReloadableServerTls*>(self);
  absl::MutexLock lock(&tls->mu_);
  if (tls->handed_out_ == tls->generation_) {
    return GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_UNCHANGED;
  }
  *config = ConfigOf(tls->material_);  // gRPC takes ownership
  tls->handed_out_ = tls->generation_;
  return GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_NEW;
}

}  // namespace leasekeeper::security
