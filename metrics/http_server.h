// MetricsHttpServer: serves a Registry's exposition at GET /metrics over
// plain HTTP/1.1, for Prometheus to scrape.
//
// Built on GNU libmicrohttpd (Debian: libmicrohttpd-dev, 0.9.75), chosen
// over cpp-httplib (libcpp-httplib-dev 0.11) because:
//  - it runs ONE internal polling thread (epoll) regardless of how many
//    scrapers connect, instead of a thread pool per server, and never touches
//    gRPC's threads;
//  - it has built-in defences a listener on the network needs: a global
//    connection limit, a per-connection idle timeout (against slow clients)
//    and a per-connection memory cap for request headers;
//  - MHD_start_daemon binds synchronously and reports the bound port, and
//    MHD_stop_daemon joins its thread: there is no start/stop race (httplib
//    0.11 can miss a stop() issued before listen() has begun);
//  - it is a small shared C library with a stable ABI, so the server does not
//    compile a ~8,000-line header, and it is a long-lived GNU project that
//    has been independently security-audited.
//
// Responses:
//   GET or HEAD /metrics  200, Content-Type kExpositionContentType, body
//                         Registry::Render() (rendered on the HTTP thread).
//   any other path        404.
//   any other method      405 with `Allow: GET, HEAD`.
//
// Thread-safety: Start and the destructor from one controlling thread;
// port() and address() from any thread. The registry is read from the HTTP
// thread; it must outlive the server.
#ifndef LEASEKEEPER_METRICS_HTTP_SERVER_H_
#define LEASEKEEPER_METRICS_HTTP_SERVER_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "metrics/registry.h"

struct MHD_Daemon;

namespace leasekeeper::metrics {

struct HttpServerOptions {
  // Connections beyond this many are refused at accept.
  unsigned connection_limit = 32;
  // An idle (or trickling) connection is closed after this many seconds.
  unsigned connection_timeout_seconds = 10;
  // Per-connection memory for the request line and headers; larger requests
  // are answered 431 by libmicrohttpd.
  size_t connection_memory_limit_bytes = 32 * 1024;
  // Receives libmicrohttpd's own error messages (bad requests, accept
  // failures), on the HTTP thread. Default: dropped.
  std::function<void(absl::string_view)> error_log;
};

class MetricsHttpServer {
 public:
  // Binds `listen` ("host:port", "[v6]:port"; host may be a name such as
  // localhost, which resolves to its first address; port 0 picks a free
  // port) and starts serving `registry`.
  // Outcomes: the running server; INVALID_ARGUMENT for a malformed address;
  // UNAVAILABLE if the address cannot be resolved or bound (the message
  // says why).
  static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(
      absl::string_view listen, const Registry& registry,
      HttpServerOptions options = {});

  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;
  // Stops accepting, closes every connection and joins the HTTP thread.
  ~MetricsHttpServer();

  // The bound port (the actual one when started with port 0).
  int port() const { return port_; }
  // The bound address with the actual port, e.g. "127.0.0.1:9464" or
  // "[::1]:9464".
  const std::string& address() const { return address_; }

 public:
  // Opaque state shared with libmicrohttpd's callbacks; defined in the .cc.
  struct Context;

 private:
  MetricsHttpServer(std::unique_ptr<Context> context, MHD_Daemon* daemon,
                    int port, std::string address);

  std::unique_ptr<Context> context_;
  MHD_Daemon* daemon_;
  int port_;
  std::string address_;
};

}  // namespace leasekeeper::metrics

#endif  // LEASEKEEPER_METRICS_HTTP_SERVER_H_
