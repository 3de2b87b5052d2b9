// ReloadableServerTls: the gRPC server credentials of leasekeeperd's
// listening port, whose certificate, key and client CAs can be replaced
// while the daemon serves (leasekeeperd calls Reload on SIGHUP). Why it is
// built on gRPC's certificate-config fetcher: docs/design/security.md.
//
// Guarantees:
//  1. Reload either replaces the whole material (certificate chain, key and
//     client CAs together) or, when any new file fails its checks, changes
//     nothing.
//  2. A handshake that starts after a successful Reload returned uses the
//     new material; established connections are not touched.
//  3. The transport mode (plaintext, tls, mutual-tls) never changes.
//
// Thread-safety: Reload, summary and the handshakes' fetches may run
// concurrently (one mutex, never held while reading files).
#ifndef LEASEKEEPER_SECURITY_RELOADABLE_SERVER_TLS_H_
#define LEASEKEEPER_SECURITY_RELOADABLE_SERVER_TLS_H_

#include <grpc/grpc_security.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/security/server_credentials.h"
#include "security/tls_config.h"

namespace leasekeeper::security {

class ReloadableServerTls {
 public:
  // Loads and checks `files` (LoadTlsMaterial). Outcomes: the credentials'
  // owner; the errors of LoadTlsMaterial.
  static absl::StatusOr<std::unique_ptr<ReloadableServerTls>> Create(
      TlsFiles files);
  ReloadableServerTls(const ReloadableServerTls&) = delete;
  ReloadableServerTls& operator=(const ReloadableServerTls&) = delete;

  TransportSecurity mode() const { return mode_; }
  // The summary of the material in use (TlsMaterial::summary).
  std::string summary() const;

  // Credentials for one listening port (insecure ones for plaintext). Every
  // call returns the same object.
  // REQUIRES: this object outlives every server built with them: gRPC calls
  // back into it on each handshake. Used for exactly one listening port:
  // the first handshake of each port takes the material as "changed".
  std::shared_ptr<grpc::ServerCredentials> credentials() const {
    return credentials_;
  }

  // Re-reads the files given to Create. Outcomes: OK, the new material is
  // in use from the next handshake (guarantee 2), also when the files did
  // not change; the errors of LoadTlsMaterial, with nothing changed
  // (guarantee 1); OK without reading anything for plaintext.
  absl::Status Reload();

 private:
  ReloadableServerTls(TlsFiles files, TlsMaterial material);
  // grpc_ssl_server_certificate_config_callback: hands gRPC the material
  // if it changed since the last handshake asked.
  static grpc_ssl_certificate_config_reload_status Fetch(
      void* self, grpc_ssl_server_certificate_config** config);

  const TlsFiles files_;
  const TransportSecurity mode_;
  std::shared_ptr<grpc::ServerCredentials> credentials_;
  mutable absl::Mutex mu_;
  TlsMaterial material_ ABSL_GUARDED_BY(mu_);
  // Bumped by each successful Reload; the fetch hands out the material when
  // it differs from the generation gRPC was last given.
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t handed_out_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace leasekeeper::security

#endif  // LEASEKEEPER_SECURITY_RELOADABLE_SERVER_TLS_H_
