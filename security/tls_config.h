// TLS configuration of leasekeeperd: the --tls-cert, --tls-key and
// --client-ca files turned into gRPC server credentials.
//
//   none of the three        plaintext (the loopback default for a first run)
//   --tls-cert + --tls-key   TLS: clients verify the server; the server
//                            authenticates nobody
//   ... + --client-ca        mutual TLS: every client must present a
//                            certificate signed by a CA in --client-ca, or
//                            the handshake fails; the certificate's names
//                            become the call's identity (peer_identity.h)
//
// The files are PEM. --tls-cert may hold a chain (leaf first, then
// intermediates); --client-ca may hold several CA certificates. They are
// read and checked before they are used, at startup and at every reload
// (SIGHUP, security/reloadable_server_tls.h), so a wrong file stops the
// daemon, or is refused by the reload, with a message naming the flag,
// instead of failing every handshake later: each must parse, the key must
// match the certificate, and the certificate must be within its validity
// period.
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
