#include "cluster/etcd_endpoints.h"

#include <algorithm>
#include <cstdint>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

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

// What `host` is, or nullopt if it is none of them.
std::optional<HostKind> KindOf(absl::string_view host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    const absl::string_view inside = host.substr(1, host.size() - 2);
    const bool ok = absl::StrContains(inside, ':') &&
                    std::all_of(inside.begin(), inside.end(), [](char c) {
                      return absl::ascii_isxdigit(c) || c == ':' || c == '.';
                    });
    return ok ? std::optional(HostKind::kIpv6) : std::nullopt;
  }
  if (IsIpv4Literal(host)) return HostKind::kIpv4;
  const bool name_chars =
      !host.empty() && std::all_of(host.begin(), host.end(), [](char c) {
        return absl::ascii_isalnum(c) || c == '-' || c == '.' || c == '_';
      });
  // All digits and dots but not an address: a typo, not a name.
  const bool numeric = std::all_of(host.begin(), host.end(), [](char c) {
    return absl::ascii_isdigit(c) || c == '.';
  });
  return name_chars && !numeric ? std::optional(HostKind::kName) : std::nullopt;
}

// Checks one host:port. Outcomes: the host's kind; InvalidArgument.
absl::StatusOr<HostKind> CheckAddress(absl::string_view address) {
  const size_t colon = address.rfind(':');
  if (colon == absl::string_view::npos || colon == 0 ||
      (address.front() == '[' && address[colon - 1] != ']')) {
    return absl::InvalidArgumentError("expected host:port");
  }
  const absl::string_view port = address.substr(colon + 1);
  int number = 0;
  if (port.empty() || port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), absl::ascii_isdigit) ||
      !absl::SimpleAtoi(port, &number) || number < 1 || number > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("port \"", port, "\" is not in 1..65535"));
  }
  const absl::string_view host = address.substr(0, colon);
  std::optional<HostKind> kind = KindOf(host);
  if (!kind.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "host \"", host,
        "\" is not an IPv4 address, an [IPv6] address or a DNS name"));
  }
  return *kind;
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
