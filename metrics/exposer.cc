#include "metrics/exposer.h"

#include <CivetServer.h>
#include <civetweb.h>
#include <netdb.h>
#include <sys/socket.h>

#include <cstring>
#include <exception>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "prometheus/exposer.h"

namespace leasekeeper::metrics {

struct MetricsExposer::Context {
  std::function<void(absl::string_view)> error_log;
  // civetweb's messages while Start runs; only the starting thread writes.
  std::string start_errors;
};

namespace {

// civetweb's callbacks carry no pointer of ours: messages logged while a
// server starts are told apart by the starting thread, later ones by the
// server's civetweb context, which init_context maps to our Context.
thread_local MetricsExposer::Context* starting_context = nullptr;

struct ContextMap {
  absl::Mutex mu;
  absl::flat_hash_map<const mg_context*, MetricsExposer::Context*> contexts
      ABSL_GUARDED_BY(mu);
};

ContextMap& Contexts() {
  static ContextMap* const map = new ContextMap;  // never destroyed
  return *map;
}

void InitContext(const mg_context* ctx) {
  if (starting_context == nullptr) return;
  ContextMap& map = Contexts();
  absl::MutexLock lock(&map.mu);
  map.contexts[ctx] = starting_context;
}

void ExitContext(const mg_context* ctx) {
  ContextMap& map = Contexts();
  absl::MutexLock lock(&map.mu);
  map.contexts.erase(ctx);
}

int LogMessage(const mg_connection* connection, const char* message) {
  absl::string_view text(message);
  while (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  if (starting_context != nullptr) {
    std::string& errors = starting_context->start_errors;
    if (!errors.empty()) errors += "; ";
    errors.append(text.data(), text.size());
    return 1;
  }
  std::function<void(absl::string_view)> log;
  if (connection != nullptr) {
    ContextMap& map = Contexts();
    absl::MutexLock lock(&map.mu);
    auto it = map.contexts.find(mg_get_context(connection));
    if (it != map.contexts.end()) log = it->second->error_log;
  }
  if (log) log(text);
  return 1;  // handled: civetweb writes nothing to stderr itself
}

struct HostPort {
  std::string host;
  std::string port;
};

absl::StatusOr<HostPort> SplitHostPort(absl::string_view listen) {
  HostPort out;
  absl::string_view port;
  if (!listen.empty() && listen.front() == '[') {
    const size_t close = listen.find(']');
    if (close == absl::string_view::npos || close + 1 >= listen.size() ||
        listen[close + 1] != ':') {
      return absl::InvalidArgumentError(absl::StrCat(
          "metrics listen address \"", listen, "\" must be [v6-host]:port"));
    }
    out.host = std::string(listen.substr(1, close - 1));
    port = listen.substr(close + 2);
  } else {
    const size_t colon = listen.rfind(':');
    if (colon == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          "metrics listen address \"", listen, "\" must be host:port"));
    }
    out.host = std::string(listen.substr(0, colon));
    port = listen.substr(colon + 1);
  }
  uint32_t port_number = 0;
  if (out.host.empty() || port.empty() ||
      !absl::SimpleAtoi(port, &port_number) || port_number > 65535 ||
      port.find_first_not_of("0123456789") != absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics listen address \"", listen,
                     "\" needs a host and a port in 0..65535 (use 0.0.0.0 "
                     "or [::] for every interface)"));
  }
  out.port = std::string(port);
  return out;
}

// The numeric host of the first address `host_port` resolves to, and
// whether it is IPv6 (civetweb wants numeric hosts, v6 ones in brackets).
absl::StatusOr<std::pair<std::string, bool>> Resolve(
    const HostPort& host_port, absl::string_view listen) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE;
  addrinfo* resolved = nullptr;
  if (int error = getaddrinfo(host_port.host.c_str(), host_port.port.c_str(),
                              &hints, &resolved);
      error != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot resolve metrics listen address \"", listen,
                     "\": ", gai_strerror(error)));
  }
  char host[NI_MAXHOST] = "";
  const int error = getnameinfo(resolved->ai_addr, resolved->ai_addrlen, host,
                                sizeof(host), nullptr, 0, NI_NUMERICHOST);
  const bool ipv6 = resolved->ai_family == AF_INET6;
  freeaddrinfo(resolved);
  if (error != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot resolve metrics listen address \"", listen,
                     "\": ", gai_strerror(error)));
  }
  return std::make_pair(std::string(host), ipv6);
}

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsExposer>> MetricsExposer::Start(
    absl::string_view listen,
    const std::vector<std::weak_ptr<prometheus::Collectable>>& collectables,
    ExposerOptions options) {
  if (options.num_threads < 1 || options.request_timeout_ms < 1 ||
      options.listen_backlog < 1) {
    return absl::InvalidArgumentError(
        "metrics exposer needs num_threads, request_timeout_ms and "
        "listen_backlog >= 1");
  }
  absl::StatusOr<HostPort> host_port = SplitHostPort(listen);
  if (!host_port.ok()) return host_port.status();
  absl::StatusOr<std::pair<std::string, bool>> numeric =
      Resolve(*host_port, listen);
  if (!numeric.ok()) return numeric.status();
  const auto& [host, ipv6] = *numeric;
  const std::string bind =
      ipv6 ? absl::StrCat("[", host, "]:", host_port->port)
           : absl::StrCat(host, ":", host_port->port);

  auto context = std::make_unique<Context>();
  context->error_log = std::move(options.error_log);
  CivetCallbacks callbacks;
  callbacks.log_message = &LogMessage;
  callbacks.init_context = &InitContext;
  callbacks.exit_context = &ExitContext;
  // See the header for why each is set.
  std::vector<std::string> civetweb_options = {
      "listening_ports",    bind,
      "num_threads",        absl::StrCat(options.num_threads),
      "request_timeout_ms", absl::StrCat(options.request_timeout_ms),
      "enable_keep_alive",  "no",
      "listen_backlog",     absl::StrCat(options.listen_backlog),
  };
  std::unique_ptr<prometheus::Exposer> exposer;
  starting_context = context.get();
  try {
    exposer = std::make_unique<prometheus::Exposer>(std::move(civetweb_options),
                                                    &callbacks);
  } catch (const std::exception& e) {
    // civetweb's own message says why (e.g. the address is in use); the
    // exception's only that it failed.
    starting_context = nullptr;
    return absl::UnavailableError(absl::StrCat(
        "cannot serve metrics on \"", listen, "\": ",
        context->start_errors.empty() ? e.what() : context->start_errors));
  }
  starting_context = nullptr;
  for (const std::weak_ptr<prometheus::Collectable>& collectable :
       collectables) {
    exposer->RegisterCollectable(collectable);
  }
  const std::vector<int> ports = exposer->GetListeningPorts();
  const int port = ports.empty() ? 0 : ports.front();
  std::string address = ipv6 ? absl::StrCat("[", host, "]:", port)
                             : absl::StrCat(host, ":", port);
  return std::unique_ptr<MetricsExposer>(new MetricsExposer(
      std::move(context), std::move(exposer), port, std::move(address)));
}

MetricsExposer::MetricsExposer(std::unique_ptr<Context> context,
                               std::unique_ptr<prometheus::Exposer> exposer,
                               int port, std::string address)
    : context_(std::move(context)),
      exposer_(std::move(exposer)),
      port_(port),
      address_(std::move(address)) {}

MetricsExposer::~MetricsExposer() = default;

}  // namespace leasekeeper::metrics
