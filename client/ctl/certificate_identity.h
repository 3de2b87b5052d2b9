// The identity a leasekeeperd under mutual TLS sees in a client
// certificate, worked out on the client's side from the same PEM: the
// subject's Common Name, else the first Subject Alternative Name (DNS, URI,
// e-mail or IP address), which is the first of the names the server
// derives (security/peer_identity.h lists them in that order). A client id
// is allowed when it is one of those names or one of them, '/', and a
// suffix, so the default id built on it is always allowed.
//
// Thread-safety: pure functions.
#ifndef LEASEKEEPER_CLIENT_CTL_CERTIFICATE_IDENTITY_H_
#define LEASEKEEPER_CLIENT_CTL_CERTIFICATE_IDENTITY_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace leasekeeper::ctl {

// The first identity in the first certificate of `cert_pem` (a chain
// starts with the leaf).
// Outcomes: the name; INVALID_ARGUMENT if the PEM holds no certificate or
// the certificate names nobody.
absl::StatusOr<std::string> CertificateIdentity(absl::string_view cert_pem);

// "<identity>/<host>/<pid>": the client id of a process that presents a
// certificate for `identity`, unique per host and process.
std::string ClientIdFor(absl::string_view identity);

}  // namespace leasekeeper::ctl

#endif  // LEASEKEEPER_CLIENT_CTL_CERTIFICATE_IDENTITY_H_
