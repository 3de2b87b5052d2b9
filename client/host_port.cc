#include "client/host_port.h"

#include <arpa/inet.h>

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace leasekeeper::client {
namespace {

constexpr int64_t kMaxPort = 65'535;

bool IsIpv6Address(absl::string_view text) {
  text = text.substr(0, text.find('%'));  // fe80::1%eth0
  in6_addr address;
  return !text.empty() &&
         inet_pton(AF_INET6, std::string(text).c_str(), &address) == 1;
}

}  // namespace

absl::StatusOr<HostPort> ParseHostPort(absl::string_view address,
                                       uint16_t min_port) {
  if (absl::StrContains(address, "://")) {
    return absl::InvalidArgumentError("scheme not supported; write host:port");
  }
  HostPort parsed;
  absl::string_view port;
  bool has_port = false;
  if (absl::StartsWith(address, "[")) {
    const size_t close = address.find(']');
    if (close == absl::string_view::npos ||
        !IsIpv6Address(address.substr(1, close - 1))) {
      return absl::InvalidArgumentError("malformed IPv6 address");
    }
    parsed.host = std::string(address.substr(1, close - 1));
    parsed.ipv6 = true;
    absl::string_view rest = address.substr(close + 1);
    if (!rest.empty() && rest[0] != ':') {
      return absl::InvalidArgumentError("malformed IPv6 address");
    }
    has_port = !rest.empty();
    if (has_port) port = rest.substr(1);
  } else {
    const size_t colon = address.find(':');
    if (colon != absl::string_view::npos &&
        address.find(':', colon + 1) != absl::string_view::npos) {
      return absl::InvalidArgumentError("malformed IPv6 address");
    }
    has_port = colon != absl::string_view::npos;
    parsed.host = std::string(address.substr(0, colon));
    if (has_port) port = address.substr(colon + 1);
  }
  if (!has_port || port.empty()) {
    return absl::InvalidArgumentError("missing port");
  }
  if (parsed.host.empty()) return absl::InvalidArgumentError("empty host");
  int64_t number = -1;
  if (!std::all_of(port.begin(), port.end(), absl::ascii_isdigit) ||
      !absl::SimpleAtoi(port, &number) || number < min_port ||
      number > kMaxPort) {
    return absl::InvalidArgumentError(
        absl::StrCat("port out of range (", min_port, "-", kMaxPort, ")"));
  }
  parsed.port = static_cast<uint16_t>(number);
  return parsed;
}

}  // namespace leasekeeper::client
