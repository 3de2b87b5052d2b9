// ChannelSet: the channels to a leasekeeper service's endpoints and the one
// calls go to now (the leader, as far as this client knows). Internal to the
// client library: RpcClient, Session and ClientCore make every call through
// it, taking a Pick, making the call and reporting its outcome; its
// EndpointChoice decides where later calls go. One caller-given channel
// (Fixed) never moves. Channels are made lazily, one per address, and kept
// for the set's life (docs/design/clients.md, "Finding the leader").
//
// Thread-safety: thread-safe. Its mutex is a leaf: Current and Report take
// only it and call nothing back, so they may be called with any lock held.
#ifndef LEASEKEEPER_CLIENT_INTERNAL_CHANNEL_SET_H_
#define LEASEKEEPER_CLIENT_INTERNAL_CHANNEL_SET_H_

#include <grpcpp/channel.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "client/channel.h"
#include "client/internal/endpoint_choice.h"
#include "leasekeeper/v1/lock_service.grpc.pb.h"

namespace leasekeeper::client::internal {

// Resolves a host name to its addresses (numeric, without port), in the
// resolver's order; empty when it does not resolve.
using HostResolver = std::function<std::vector<std::string>(absl::string_view)>;

// The system resolver (getaddrinfo, TCP).
std::vector<std::string> ResolveHost(absl::string_view host);

// The endpoints `endpoints` stands for: a list of several as it is; one
// "host:port" whose host is a name (not an address literal, no URI scheme)
// that `resolve` turns into several addresses, those addresses with the
// port ("[v6]:port" for IPv6), in the resolver's order, without repeats;
// anything else as it is. Also sets *server_name (when not null) to the
// host of a name so expanded, else leaves it: a TLS client must then check
// the certificate against the name, not the address.
std::vector<std::string> ExpandEndpoints(std::vector<std::string> endpoints,
                                         const HostResolver& resolve,
                                         std::string* server_name);

class ChannelSet {
 public:
  struct Pick {
    // Shares ownership with the ChannelSet; valid as long as the Pick.
    std::shared_ptr<leasekeeper::v1::LockService::Stub> stub;
    std::string target;
    uint64_t generation = 0;
    // Not before this should the call be made (EndpointChoice rule 4).
    MonotonicTime not_before;
    // True when the service may be served elsewhere (several endpoints, or
    // a redirect away from the one given): the caller should then not wait
    // for this channel to connect (wait_for_ready) but fail fast, report,
    // and go where Current() says.
    bool can_move = false;
  };

  // A set that is only `channel` (REQUIRES: not null): it never moves.
  static std::shared_ptr<ChannelSet> Fixed(
      std::shared_ptr<grpc::Channel> channel);
  // A set over `endpoints` ("a,b,c", or one name with several addresses:
  // ExpandEndpoints with ResolveHost), each channel made by MakeChannel
  // with `options`. Outcomes: the set; INVALID_ARGUMENT for a list with an
  // empty entry or an entry that is not a server address (ParseEndpoints).
  static absl::StatusOr<std::shared_ptr<ChannelSet>> Connect(
      absl::string_view endpoints, const ChannelOptions& options);

  ChannelSet(const ChannelSet&) = delete;
  ChannelSet& operator=(const ChannelSet&) = delete;

  // Where a call goes now. When the call may move (Pick::can_move), asks a
  // channel that is not connected to connect (gRPC does not reconnect an
  // idle channel by itself), so a fail-fast call after an outage finds one
  // that tried again.
  Pick Current();
  // The outcome of a call made on `pick`. Returns true if the choice moved
  // because of it: a call that may be repeated can go again, to Current(),
  // at once (or at its not_before).
  bool Report(const Pick& pick, const absl::Status& status);

 private:
  struct Endpoint {
    std::shared_ptr<grpc::Channel> channel;
    std::shared_ptr<leasekeeper::v1::LockService::Stub> stub;
  };

  ChannelSet(std::vector<std::string> endpoints, ChannelOptions options,
             std::shared_ptr<grpc::Channel> fixed);
  Endpoint& EndpointLocked(const std::string& target)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const ChannelOptions options_;
  const bool fixed_;
  absl::Mutex mu_;
  EndpointChoice choice_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, Endpoint> channels_ ABSL_GUARDED_BY(mu_);
};

}  // namespace leasekeeper::client::internal

#endif  // LEASEKEEPER_CLIENT_INTERNAL_CHANNEL_SET_H_
