// Tells why a connection failed when the two ends disagree about TLS:
// gRPC reports a plaintext client at a TLS port as "Socket closed" and a
// TLS client at a plaintext port as "wrong version number", both as
// UNAVAILABLE, which says nothing to an operator. After such a failure
// leasekeeper-ctl asks the port directly what it speaks.
//
// Each probe opens one TCP connection to the target, exchanges at most a
// handshake's worth of bytes and closes it; it never sends a request.
//
// Thread-safety: pure functions (blocking, at most `timeout` each step).
#ifndef LEASEKEEPER_CLIENT_CTL_TRANSPORT_PROBE_H_
#define LEASEKEEPER_CLIENT_CTL_TRANSPORT_PROBE_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace leasekeeper::ctl {

// True iff `target` ("host:port" or "[v6]:port") completes the server's
// side of a TLS handshake (it sends its certificate). Certificates are not
// checked: this only asks which protocol the port speaks.
bool PortSpeaksTls(absl::string_view target, absl::Duration timeout);

// True iff `target` answers an HTTP/2 client preface with an HTTP/2
// SETTINGS frame, i.e. serves gRPC without TLS.
bool PortSpeaksPlaintextHttp2(absl::string_view target, absl::Duration timeout);

// For a failed call to `target` made with (`used_tls`) or without TLS: a
// sentence saying that the port speaks the other one and which flags fix
// it; nullopt when the probe does not show such a mismatch.
std::optional<std::string> ExplainTlsMismatch(absl::string_view target,
                                              bool used_tls,
                                              absl::Duration timeout);

}  // namespace leasekeeper::ctl

#endif  // LEASEKEEPER_CLIENT_CTL_TRANSPORT_PROBE_H_
