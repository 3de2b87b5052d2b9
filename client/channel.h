// Channels to leasekeeperd: plaintext or TLS.
//
// A Client and an RpcClient take any grpc::Channel; these helpers make the
// usual two kinds so that users do not need grpcpp's credential API.
//
// Thread-safety: pure functions; the returned channel is thread-safe.
#ifndef LEASEKEEPER_CLIENT_CHANNEL_H_
#define LEASEKEEPER_CLIENT_CHANNEL_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace grpc {
class Channel;
}  // namespace grpc

namespace leasekeeper::client {

// PEM contents (not paths) for a TLS channel. All optional: empty
// root_certs uses the system's roots; a client certificate is sent only if
// both cert_chain and private_key are set.
struct TlsOptions {
  std::string root_certs;
  std::string cert_chain;
  std::string private_key;
  // Checks the server's certificate against this name instead of the
  // target's host (e.g. when connecting by IP address). Empty: the target.
  std::string server_name_override;
};

struct ChannelOptions {
  // nullopt: plaintext (insecure credentials).
  std::optional<TlsOptions> tls;
};

// A channel to `target` ("host:port", or any gRPC target URI). Never fails:
// gRPC connects lazily, so an unreachable server shows up as UNAVAILABLE on
// the first call.
std::shared_ptr<grpc::Channel> MakeChannel(absl::string_view target,
                                           const ChannelOptions& options = {});

// The endpoints of one leasekeeper service, written "a,b,c" (spaces around
// entries are ignored; a single entry is a list of one). Each entry is
//  - host:port (client/host_port.h, the port in 1..65535),
//  - dns:host:port, dns:///host:port or dns://AUTHORITY/host:port (gRPC's
//    DNS resolver; the host:port part is checked as above), or
//  - unix:PATH (a Unix domain socket, not checked further).
// Any other URI (http://, https://, ipv4:, ipv6:, unix-abstract:, vsock:,
// xds:) is refused: these are the rules of docs/clients.md, "Server
// addresses", which the Python client follows too.
// Outcomes: the endpoints, in order; INVALID_ARGUMENT "invalid server list
// \"LIST\": ..." for an empty list or entry, and "invalid server address
// \"ENTRY\": REASON" for an entry that breaks the rules (the reasons of
// ParseHostPort; "empty host" for unix: without a path).
absl::StatusOr<std::vector<std::string>> ParseEndpoints(absl::string_view list);

// Reads PEM files into TlsOptions; an empty path leaves its field empty.
// Outcomes: the options; NOT_FOUND or PERMISSION_DENIED naming the file that
// could not be read; INVALID_ARGUMENT if only one of cert and key is given.
absl::StatusOr<TlsOptions> LoadTlsFiles(absl::string_view root_certs_path,
                                        absl::string_view cert_chain_path,
                                        absl::string_view private_key_path);

}  // namespace leasekeeper::client

#endif  // LEASEKEEPER_CLIENT_CHANNEL_H_
