// TLS configuration of leasekeeperd: the --tls-cert, --tls-key and
// --client-ca PEM files turned into checked material for gRPC server
// credentials. None of them: plaintext; --tls-cert and --tls-key: TLS
// (clients verify the server, the server authenticates nobody); with
// --client-ca too: mutual TLS (every client presents a certificate signed
// by one of those CAs, whose names become the call's identity). The files
// are checked before use, at startup and at every reload, so a wrong file
// is refused with a message naming its flag (docs/design/security.md).
//
// Thread-safety: pure functions (they read files).
#ifndef LEASEKEEPER_SECURITY_TLS_CONFIG_H_
#define LEASEKEEPER_SECURITY_TLS_CONFIG_H_

#include <string>

#include "absl/status/statusor.h"

namespace leasekeeper::security {

// A PEM file larger than this is refused.
inline constexpr size_t kMaxPemFileBytes = 1 << 20;

struct TlsFiles {
  std::string cert_file;       // --tls-cert
  std::string key_file;        // --tls-key
  std::string client_ca_file;  // --client-ca
};

enum class TransportSecurity { kPlaintext, kTls, kMutualTls };

// "plaintext", "tls" or "mutual-tls".
const char* TransportSecurityName(TransportSecurity mode);

// Outcomes: the mode the flags ask for; INVALID_ARGUMENT naming the flag if
// only one of --tls-cert/--tls-key is given, or --client-ca without them.
// Reads no file.
absl::StatusOr<TransportSecurity> TransportSecurityOf(const TlsFiles& files);

// The checked contents of the TLS files.
struct TlsMaterial {
  TransportSecurity mode = TransportSecurity::kPlaintext;
  std::string cert_pem;       // --tls-cert's text (leaf first)
  std::string key_pem;        // --tls-key's text
  std::string client_ca_pem;  // --client-ca's text; empty unless mutual TLS
  // One line for the log, e.g. "mutual-tls; certificate
  // subject=CN=leasekeeper, not after Nov 29 12:00:00 2026 GMT; 1 client CA
  // certificate".
  std::string summary;
};

// Reads and checks the files (none for plaintext). Outcomes: the material;
// INVALID_ARGUMENT as TransportSecurityOf, or naming the flag whose file
// holds no PEM certificate / key, or when the key does not match the
// certificate; FAILED_PRECONDITION naming --tls-cert if the certificate is
// expired or not yet valid; NOT_FOUND, PERMISSION_DENIED (or another
// errno-derived code) naming the flag and path of a file that cannot be
// read.
absl::StatusOr<TlsMaterial> LoadTlsMaterial(const TlsFiles& files);

}  // namespace leasekeeper::security

#endif  // LEASEKEEPER_SECURITY_TLS_CONFIG_H_
