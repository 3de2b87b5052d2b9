// MetricsExposer: serves the exposition of a set of prometheus-cpp
// collectables at GET /metrics over plain HTTP/1.1, for Prometheus to
// scrape. A thin layer over prometheus::Exposer (civetweb underneath) that
// adds an address check with a clear error, start failures as a Status
// instead of an exception, and connection handling that a few slow or
// half-open clients cannot exhaust (ExposerOptions).
//
// Thread-safety: Start and the destructor from one controlling thread;
// port() and address() from any thread. Collectables are read on the HTTP
// worker threads, concurrently with each other; each must be thread-safe,
// and each is held by weak pointer (one that has expired is skipped).
#ifndef LEASEKEEPER_METRICS_EXPOSER_H_
#define LEASEKEEPER_METRICS_EXPOSER_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "prometheus/collectable.h"

namespace prometheus {
class Exposer;
}  // namespace prometheus

namespace leasekeeper::metrics {

// How connections are served. civetweb serves each connection on one of
// `num_threads` workers, from accept until it closes; a connection must
// deliver its whole request (and take the response) within
// `request_timeout_ms` of being picked up, and keep-alive is off (one
// response per connection, so an idle client does not keep its worker
// between scrapes). Hence with fewer than `num_threads` stalled
// connections a scrape is answered at once, and a burst of B stalled
// connections delays scrapes by at most about
// ceil(B / num_threads) * request_timeout_ms. Connections beyond the
// workers wait in the accept queue (`listen_backlog`), not refused.
struct ExposerOptions {
  // HTTP worker threads, each serving one connection at a time: the number
  // of stalled connections that cannot delay a scrape. An idle worker costs
  // its stack and a 16 KiB request buffer.
  int num_threads = 64;
  // How long a connection may take to send its request (and to take the
  // response), in milliseconds. A scraper sends its request at once; only a
  // stalled or hostile client comes near this.
  int request_timeout_ms = 3'000;
  // Connections the kernel queues while every worker is busy, so that a
  // burst is served late rather than refused.
  int listen_backlog = 1'024;
  // Receives civetweb's error messages after a successful start (on the
  // HTTP threads); messages during Start go into its error status instead.
  // Default: dropped.
  std::function<void(absl::string_view)> error_log{};
};

class MetricsExposer {
 public:
  // Binds `listen` ("host:port", "[v6]:port"; host may be a name such as
  // localhost, which resolves to its first address; port 0 picks a free
  // port) and serves `collectables` at /metrics: GET /metrics (and any path
  // below or extending it: civetweb matches by prefix) is 200 with
  // Content-Type "text/plain; charset=utf-8", gzip-encoded when the client
  // accepts it; any other path is 404, any other method (HEAD included) 404
  // or 405. The body also carries prometheus-cpp's own exposer_* series.
  // Outcomes: the running exposer; INVALID_ARGUMENT for a malformed address
  // or options (num_threads or a timeout below 1); UNAVAILABLE if the
  // address cannot be resolved or bound (the message names the address and
  // says why).
  static absl::StatusOr<std::unique_ptr<MetricsExposer>> Start(
      absl::string_view listen,
      const std::vector<std::weak_ptr<prometheus::Collectable>>& collectables,
      ExposerOptions options = {});

  MetricsExposer(const MetricsExposer&) = delete;
  MetricsExposer& operator=(const MetricsExposer&) = delete;
  // Stops accepting, closes every connection and joins the HTTP threads.
  // Takes up to 2 s: civetweb's accept loop wakes that often to see whether
  // it should stop.
  ~MetricsExposer();

  // The bound port (the actual one when started with port 0).
  int port() const { return port_; }
  // The bound address with the actual port, e.g. "127.0.0.1:9464" or
  // "[::1]:9464".
  const std::string& address() const { return address_; }

  // Opaque state shared with civetweb's callbacks; defined in the .cc.
  struct Context;

 private:
  MetricsExposer(std::unique_ptr<Context> context,
                 std::unique_ptr<prometheus::Exposer> exposer, int port,
                 std::string address);

  std::unique_ptr<Context> context_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_;
  std::string address_;
};

}  // namespace leasekeeper::metrics

#endif  // LEASEKEEPER_METRICS_EXPOSER_H_
