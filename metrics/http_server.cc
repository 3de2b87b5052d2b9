#include "metrics/http_server.h"

#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace leasekeeper::metrics {

struct MetricsHttpServer::Context {
  const Registry* registry = nullptr;
  std::function<void(absl::string_view)> error_log;

  absl::Mutex mu;
  // While starting, libmicrohttpd's messages are collected here for the
  // error status; afterwards they go to error_log.
  bool started ABSL_GUARDED_BY(mu) = false;
  std::string start_errors ABSL_GUARDED_BY(mu);
};

namespace {

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

void LogFromMhd(void* cls, const char* format, va_list args) {
  auto* context = static_cast<MetricsHttpServer::Context*>(cls);
  char buffer[512];
  std::vsnprintf(buffer, sizeof(buffer), format, args);
  absl::string_view message(buffer);
  while (!message.empty() && message.back() == '\n') message.remove_suffix(1);
  {
    absl::MutexLock lock(&context->mu);
    if (!context->started) {
      if (!context->start_errors.empty()) context->start_errors += "; ";
      context->start_errors.append(message.data(), message.size());
      return;
    }
  }
  if (context->error_log) context->error_log(message);
}

MHD_Result Reply(MHD_Connection* connection, unsigned status,
                 const std::string& body, const char* content_type,
                 const char* allow) {
  MHD_Response* response = MHD_create_response_from_buffer(
      body.size(), const_cast<char*>(body.data()), MHD_RESPMEM_MUST_COPY);
  if (response == nullptr) return MHD_NO;
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
  if (allow != nullptr) {
    MHD_add_response_header(response, MHD_HTTP_HEADER_ALLOW, allow);
  }
  const MHD_Result result = MHD_queue_response(connection, status, response);
  MHD_destroy_response(response);
  return result;
}

MHD_Result HandleRequest(void* cls, MHD_Connection* connection, const char* url,
                         const char* method, const char* /*version*/,
                         const char* /*upload_data*/,
                         size_t* /*upload_data_size*/, void** /*con_cls*/) {
  const auto* context = static_cast<const MetricsHttpServer::Context*>(cls);
  static constexpr char kText[] = "text/plain; charset=utf-8";
  const bool get = std::strcmp(method, MHD_HTTP_METHOD_GET) == 0;
  const bool head = std::strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
  if (!get && !head) {
    return Reply(connection, MHD_HTTP_METHOD_NOT_ALLOWED,
                 "method not allowed\n", kText, "GET, HEAD");
  }
  if (std::strcmp(url, "/metrics") != 0) {
    return Reply(connection, MHD_HTTP_NOT_FOUND,
                 "not found: metrics are at /metrics\n", kText, nullptr);
  }
  // libmicrohttpd sends the headers (with the body's length) but no body
  // for HEAD.
  return Reply(connection, MHD_HTTP_OK, context->registry->Render(),
               kExpositionContentType, nullptr);
}

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    absl::string_view listen, const Registry& registry,
    HttpServerOptions options) {
  absl::StatusOr<HostPort> host_port = SplitHostPort(listen);
  if (!host_port.ok()) return host_port.status();

  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE;
  addrinfo* resolved = nullptr;
  if (int error = getaddrinfo(host_port->host.c_str(), host_port->port.c_str(),
                              &hints, &resolved);
      error != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot resolve metrics listen address \"", listen,
                     "\": ", gai_strerror(error)));
  }
  sockaddr_storage address{};
  std::memcpy(&address, resolved->ai_addr, resolved->ai_addrlen);
  const socklen_t address_length = resolved->ai_addrlen;
  freeaddrinfo(resolved);
  const bool ipv6 = address.ss_family == AF_INET6;

  auto context = std::make_unique<Context>();
  context->registry = &registry;
  context->error_log = std::move(options.error_log);

  unsigned int flags =
      MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG | MHD_USE_ITC;
  if (ipv6) flags |= MHD_USE_IPv6;
  MHD_Daemon* daemon = MHD_start_daemon(
      flags, /*port=*/0, /*apc=*/nullptr, /*apc_cls=*/nullptr, &HandleRequest,
      context.get(), MHD_OPTION_SOCK_ADDR,
      reinterpret_cast<const sockaddr*>(&address), MHD_OPTION_CONNECTION_LIMIT,
      static_cast<unsigned int>(options.connection_limit),
      MHD_OPTION_CONNECTION_TIMEOUT,
      static_cast<unsigned int>(options.connection_timeout_seconds),
      MHD_OPTION_CONNECTION_MEMORY_LIMIT,
      static_cast<size_t>(options.connection_memory_limit_bytes),
      MHD_OPTION_EXTERNAL_LOGGER, &LogFromMhd, context.get(), MHD_OPTION_END);
  if (daemon == nullptr) {
    absl::MutexLock lock(&context->mu);
    return absl::UnavailableError(absl::StrCat(
        "cannot serve metrics on \"", listen, "\": ",
        context->start_errors.empty() ? "libmicrohttpd failed to start"
                                      : context->start_errors));
  }
  {
    absl::MutexLock lock(&context->mu);
    context->started = true;
  }

  const MHD_DaemonInfo* info =
      MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
  const int port = info != nullptr ? info->port : 0;
  char host[NI_MAXHOST] = "";
  getnameinfo(reinterpret_cast<const sockaddr*>(&address), address_length, host,
              sizeof(host), nullptr, 0, NI_NUMERICHOST);
  std::string bound = ipv6 ? absl::StrCat("[", host, "]:", port)
                           : absl::StrCat(host, ":", port);
  return std::unique_ptr<MetricsHttpServer>(new MetricsHttpServer(
      std::move(context), daemon, port, std::move(bound)));
}

MetricsHttpServer::MetricsHttpServer(std::unique_ptr<Context> context,
                                     MHD_Daemon* daemon, int port,
                                     std::string address)
    : context_(std::move(context)),
      daemon_(daemon),
      port_(port),
      address_(std::move(address)) {}

MetricsHttpServer::~MetricsHttpServer() { MHD_stop_daemon(daemon_); }

}  // namespace leasekeeper::metrics
