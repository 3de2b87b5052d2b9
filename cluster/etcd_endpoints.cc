#include "cluster/etcd_endpoints.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "client/host_port.h"

namespace leasekeeper::storage {
namespace {

using Scheme = EtcdEndpoints::Scheme;

enum class HostKind { kIpv4, kIpv6, kName };

bool IsIpv4Literal(absl::string_view host) {
  const std::vector<absl::string_view> parts = absl::StrSplit(host, '.');
  if (parts.size() != 4) return false;
  for (absl::string_view part : parts) {
    int value = 0;
    if (part.empty() || part.size() > 3 || !absl::SimpleAtoi(part, &value) ||
        !std::all_of(part.begin(), part.end(), absl::ascii_isdigit) ||
        value > 255) {
      return false;
    }
  }
  return true;
}

// A DNS name: letters, digits, '-', '.', '_', and not all digits and dots
// (that is a mistyped address, not a name).
bool IsName(absl::string_view host) {
  const bool name_chars =
      !host.empty() && std::all_of(host.begin(), host.end(), [](char c) {
        return absl::ascii_isalnum(c) || c == '-' || c == '.' || c == '_';
      });
  const bool numeric = std::all_of(host.begin(), host.end(), [](char c) {
    return absl::ascii_isdigit(c) || c == '.';
  });
  return name_chars && !numeric;
}

// Checks one host:port by the clients' address rule (client/host_port.h),
// then what its host is. Outcomes: the host's kind; InvalidArgument.
absl::StatusOr<HostKind> CheckAddress(absl::string_view address) {
  absl::StatusOr<client::HostPort> parsed = client::ParseHostPort(address, 1);
  if (!parsed.ok()) return parsed.status();
  if (parsed->ipv6) return HostKind::kIpv6;
  if (IsIpv4Literal(parsed->host)) return HostKind::kIpv4;
  if (IsName(parsed->host)) return HostKind::kName;
  return absl::InvalidArgumentError(absl::StrCat(
      "host \"", parsed->host,
      "\" is not an IPv4 address, an [IPv6] address or a DNS name"));
}

}  // namespace

absl::StatusOr<EtcdEndpoints> ParseEtcdEndpoints(
    const std::vector<std::string>& endpoints) {
  if (endpoints.empty()) {
    return absl::InvalidArgumentError("no etcd endpoints");
  }
  EtcdEndpoints out;
  for (size_t i = 0; i < endpoints.size(); ++i) {
    absl::string_view rest = endpoints[i];
    const auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat(
          "etcd endpoint \"", endpoints[i], "\": ", why,
          " (forms: host:port, http://host:port, https://host:port)"));
    };
    Scheme scheme = Scheme::kBare;
    if (absl::ConsumePrefix(&rest, "http://")) {
      scheme = Scheme::kHttp;
    } else if (absl::ConsumePrefix(&rest, "https://")) {
      scheme = Scheme::kHttps;
    } else if (absl::StrContains(rest, "://")) {
      return bad("the scheme must be http or https");
    }
    if (scheme != Scheme::kBare) absl::ConsumeSuffix(&rest, "/");
    if (rest.empty()) return bad("empty");
    if (absl::StrContains(rest, '/') || absl::StrContains(rest, '@') ||
        absl::StrContains(rest, '?')) {
      return bad("only host:port may follow the scheme");
    }
    absl::StatusOr<HostKind> kind = CheckAddress(rest);
    if (!kind.ok()) return bad(kind.status().message());
    if (i == 0) {
      out.scheme = scheme;
    } else if (scheme != out.scheme) {
      return bad(
          absl::StrCat("every endpoint needs the same scheme as the first, \"",
                       endpoints[0], "\" (http and https are never mixed)"));
    }
    out.addresses.emplace_back(rest);
  }
  return out;
}

std::vector<std::string> ChannelTargets(const EtcdEndpoints& endpoints) {
  std::vector<HostKind> kinds;
  for (const std::string& address : endpoints.addresses) {
    kinds.push_back(CheckAddress(address).value_or(HostKind::kName));
  }
  const bool all_same_literal =
      !kinds.empty() && kinds.front() != HostKind::kName &&
      std::all_of(kinds.begin(), kinds.end(),
                  [&](HostKind kind) { return kind == kinds.front(); });
  if (all_same_literal) {
    return {absl::StrCat(kinds.front() == HostKind::kIpv4 ? "ipv4:" : "ipv6:",
                         absl::StrJoin(endpoints.addresses, ","))};
  }
  std::vector<std::string> targets;
  for (size_t i = 0; i < endpoints.addresses.size(); ++i) {
    const std::string& address = endpoints.addresses[i];
    switch (kinds[i]) {
      case HostKind::kIpv4:
        targets.push_back(absl::StrCat("ipv4:", address));
        break;
      case HostKind::kIpv6:
        targets.push_back(absl::StrCat("ipv6:", address));
        break;
      case HostKind::kName:
        targets.push_back(absl::StrCat("dns:///", address));
        break;
    }
  }
  return targets;
}

}  // namespace leasekeeper::storage
