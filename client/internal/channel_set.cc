#include "client/internal/channel_set.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/host_port.h"

namespace leasekeeper::client::internal {
namespace {

namespace pb = ::leasekeeper::v1;

// Splits "name:port" (not an IP address, not a URI); nullopt otherwise.
std::optional<std::pair<std::string, std::string>> NameAndPort(
    absl::string_view target) {
  absl::StatusOr<HostPort> parsed = ParseHostPort(target, 1);
  if (!parsed.ok() || parsed->ipv6) return std::nullopt;
  in_addr v4;
  if (inet_pton(AF_INET, parsed->host.c_str(), &v4) == 1) return std::nullopt;
  return std::make_pair(parsed->host, absl::StrCat(parsed->port));
}

}  // namespace

std::vector<std::string> ResolveHost(absl::string_view host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(std::string(host).c_str(), nullptr, &hints, &found) != 0) {
    return {};
  }
  std::vector<std::string> addresses;
  for (addrinfo* at = found; at != nullptr; at = at->ai_next) {
    char text[INET6_ADDRSTRLEN] = {};
    const void* raw =
        at->ai_family == AF_INET6
            ? static_cast<const void*>(
                  &reinterpret_cast<sockaddr_in6*>(at->ai_addr)->sin6_addr)
            : static_cast<const void*>(
                  &reinterpret_cast<sockaddr_in*>(at->ai_addr)->sin_addr);
    if (inet_ntop(at->ai_family, raw, text, sizeof(text)) != nullptr) {
      addresses.emplace_back(text);
    }
  }
  freeaddrinfo(found);
  return addresses;
}

std::vector<std::string> ExpandEndpoints(std::vector<std::string> endpoints,
                                         const HostResolver& resolve,
                                         std::string* server_name) {
  if (endpoints.size() != 1) return endpoints;
  std::optional<std::pair<std::string, std::string>> parts =
      NameAndPort(endpoints.front());
  if (!parts.has_value()) return endpoints;
  std::vector<std::string> expanded;
  for (const std::string& address : resolve(parts->first)) {
    std::string endpoint =
        absl::StrContains(address, ':')
            ? absl::StrCat("[", address, "]:", parts->second)
            : absl::StrCat(address, ":", parts->second);
    if (std::find(expanded.begin(), expanded.end(), endpoint) ==
        expanded.end()) {
      expanded.push_back(std::move(endpoint));
    }
  }
  // One address: the name itself serves as well, and stays readable.
  if (expanded.size() < 2) return endpoints;
  if (server_name != nullptr) *server_name = parts->first;
  return expanded;
}

std::shared_ptr<ChannelSet> ChannelSet::Fixed(
    std::shared_ptr<grpc::Channel> channel) {
  return std::shared_ptr<ChannelSet>(
      new ChannelSet({"(the given channel)"}, {}, std::move(channel)));
}

absl::StatusOr<std::shared_ptr<ChannelSet>> ChannelSet::Connect(
    absl::string_view endpoints, const ChannelOptions& options) {
  absl::StatusOr<std::vector<std::string>> parsed = ParseEndpoints(endpoints);
  if (!parsed.ok()) return parsed.status();
  ChannelOptions channel_options = options;
  std::string server_name;
  std::vector<std::string> expanded =
      ExpandEndpoints(*std::move(parsed), ResolveHost, &server_name);
  if (!server_name.empty() && channel_options.tls.has_value() &&
      channel_options.tls->server_name_override.empty()) {
    channel_options.tls->server_name_override = server_name;
  }
  return std::shared_ptr<ChannelSet>(new ChannelSet(
      std::move(expanded), std::move(channel_options), nullptr));
}

ChannelSet::ChannelSet(std::vector<std::string> endpoints,
                       ChannelOptions options,
                       std::shared_ptr<grpc::Channel> fixed)
    : options_(std::move(options)),
      fixed_(fixed != nullptr),
      choice_(std::move(endpoints), MonotonicNow()) {
  if (fixed != nullptr) {
    Endpoint endpoint;
    endpoint.stub = pb::LockService::NewStub(fixed);
    endpoint.channel = std::move(fixed);
    channels_.emplace(choice_.current(), std::move(endpoint));
  }
}

ChannelSet::Endpoint& ChannelSet::EndpointLocked(const std::string& target) {
  auto it = channels_.find(target);
  if (it == channels_.end()) {
    Endpoint endpoint;
    endpoint.channel = MakeChannel(target, options_);
    endpoint.stub = pb::LockService::NewStub(endpoint.channel);
    it = channels_.emplace(target, std::move(endpoint)).first;
  }
  return it->second;
}

ChannelSet::Pick ChannelSet::Current() {
  absl::MutexLock lock(&mu_);
  Endpoint& endpoint = EndpointLocked(choice_.current());
  const bool can_move =
      !fixed_ && (choice_.endpoints().size() > 1 ||
                  choice_.current() != choice_.endpoints().front());
  if (can_move) (void)endpoint.channel->GetState(/*try_to_connect=*/true);
  return Pick{endpoint.stub, choice_.current(), choice_.generation(),
              choice_.not_before(), can_move};
}

bool ChannelSet::Report(const Pick& pick, const absl::Status& status) {
  // A caller's channel stays the only one: a redirect cannot be followed
  // without a way to make channels with the caller's credentials.
  if (fixed_) return false;
  absl::MutexLock lock(&mu_);
  return choice_.Report(pick.generation, status, MonotonicNow());
}

}  // namespace leasekeeper::client::internal
