// host:port, the way leasekeeper's programs take a TCP address: a host (a
// name, an IPv4 address, or an IPv6 address in brackets with an optional
// %zone) and a decimal port. gRPC itself would take 127.0.0.1:99999 as port
// 34463 (the number mod 65536) and a missing port as 0 or 443, so the
// clients and the daemon check every address here before gRPC sees it.
//
// Thread-safety: pure function.
#ifndef LEASEKEEPER_CLIENT_HOST_PORT_H_
#define LEASEKEEPER_CLIENT_HOST_PORT_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace leasekeeper::client {

struct HostPort {
  std::string host;  // as written; an IPv6 address without its brackets
  bool ipv6 = false;  // the host was written in brackets
  uint16_t port = 0;
};

// Splits `address` into host and port, the port in [min_port, 65535].
// Checked in this order, each failure an INVALID_ARGUMENT whose message is
// the reason alone:
//  1. "scheme not supported; write host:port": it contains "://";
//  2. "malformed IPv6 address": it starts with '[' and the text up to the
//     first ']' is not an IPv6 address (the %zone not counted), or that ']'
//     is followed by something other than ':'; or, without brackets, it
//     has more than one ':';
//  3. "missing port": no ':', or nothing after it;
//  4. "empty host": nothing before the ':';
//  5. "port out of range (MIN-65535)": the port is not decimal digits or
//     its number is outside [min_port, 65535].
// Outcomes: the parts; INVALID_ARGUMENT as above.
absl::StatusOr<HostPort> ParseHostPort(absl::string_view address,
                                       uint16_t min_port);

}  // namespace leasekeeper::client

#endif  // LEASEKEEPER_CLIENT_HOST_PORT_H_
