#include "client/channel.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "client/host_port.h"

namespace leasekeeper::client {
namespace {

absl::StatusOr<std::string> ReadFile(absl::string_view path) {
  std::ifstream in{std::string(path), std::ios::binary};
  if (!in) {
    const int error = errno;
    std::string message =
        absl::StrCat("cannot read ", path, ": ", std::strerror(error));
    if (error == EACCES) return absl::PermissionDeniedError(message);
    return absl::NotFoundError(message);
  }
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

// gRPC's resolver schemes other than dns: and unix:, which the clients
// refuse (docs/clients.md, "Server addresses").
constexpr absl::string_view kRefusedSchemes[] = {
    "ipv4:", "ipv6:", "unix-abstract:", "vsock:", "xds:"};

// OK if `entry` (one of a list, trimmed) is an address ParseEndpoints
// takes; otherwise the reason.
absl::Status CheckServerAddress(absl::string_view entry) {
  if (absl::ConsumePrefix(&entry, "unix:")) {
    if (entry.empty()) return absl::InvalidArgumentError("empty host");
    return absl::OkStatus();
  }
  if (absl::ConsumePrefix(&entry, "dns:")) {
    if (absl::ConsumePrefix(&entry, "//")) {  // an authority, maybe empty
      const size_t slash = entry.find('/');
      if (slash == absl::string_view::npos) {
        return absl::InvalidArgumentError("missing port");
      }
      entry.remove_prefix(slash + 1);
    }
    return ParseHostPort(entry, 1).status();
  }
  for (absl::string_view scheme : kRefusedSchemes) {
    if (absl::StartsWith(entry, scheme)) {
      return absl::InvalidArgumentError(
          "scheme not supported; write host:port");
    }
  }
  return ParseHostPort(entry, 1).status();
}

}  // namespace

std::shared_ptr<grpc::Channel> MakeChannel(absl::string_view target,
                                           const ChannelOptions& options) {
  grpc::ChannelArguments args;
  // Sessions are long-lived streams; let gRPC reconnect quickly after a
  // server restart instead of backing off for up to two minutes. The
  // minimum reconnect backoff is left at its default: gRPC also takes it as
  // the time a connection attempt has to finish its handshake, and 100 ms
  // failed every attempt over a slower link.
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  if (options.tls.has_value()) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = options.tls->root_certs;
    ssl.pem_cert_chain = options.tls->cert_chain;
    ssl.pem_private_key = options.tls->private_key;
    credentials = grpc::SslCredentials(ssl);
    if (!options.tls->server_name_override.empty()) {
      args.SetSslTargetNameOverride(options.tls->server_name_override);
    }
  } else {
    credentials = grpc::InsecureChannelCredentials();
  }
  return grpc::CreateCustomChannel(std::string(target), credentials, args);
}

absl::StatusOr<std::vector<std::string>> ParseEndpoints(
    absl::string_view list) {
  std::vector<std::string> endpoints;
  for (absl::string_view entry : absl::StrSplit(list, ',')) {
    entry = absl::StripAsciiWhitespace(entry);
    if (entry.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "invalid server list \"", list,
          "\": expected host:port, or several separated by commas"));
    }
    if (absl::Status checked = CheckServerAddress(entry); !checked.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "invalid server address \"", entry, "\": ", checked.message()));
    }
    endpoints.emplace_back(entry);
  }
  return endpoints;
}

absl::StatusOr<TlsOptions> LoadTlsFiles(absl::string_view root_certs_path,
                                        absl::string_view cert_chain_path,
                                        absl::string_view private_key_path) {
  if (cert_chain_path.empty() != private_key_path.empty()) {
    return absl::InvalidArgumentError(
        "a client certificate needs both the certificate chain and the key");
  }
  TlsOptions tls;
  struct Field {
    absl::string_view path;
    std::string* out;
  };
  for (const Field& field : {Field{root_certs_path, &tls.root_certs},
                             Field{cert_chain_path, &tls.cert_chain},
                             Field{private_key_path, &tls.private_key}}) {
    if (field.path.empty()) continue;
    absl::StatusOr<std::string> contents = ReadFile(field.path);
    if (!contents.ok()) return contents.status();
    *field.out = *std::move(contents);
  }
  return tls;
}

}  // namespace leasekeeper::client
