// MetricsExposer: serves the exposition of a set of prometheus-cpp
// collectables at GET /metrics over plain HTTP/1.1, for Prometheus to
// scrape, from one thread with an epoll loop (no thread per connection),
// so that stalled, trickling or half-open clients cannot delay a scrape.
// The answers to each request are metrics/http_request.h's, the rules on
// connections metrics/connection_table.h's.
//
// Thread-safety: Start and the destructor from one controlling thread;
// port() and address() from any thread. Collectables are read on the
// server's one thread, one scrape at a time; each must be safe to read
// from a thread other than its writers', and each is held by weak pointer
// (one that has expired is skipped).
#ifndef LEASEKEEPER_METRICS_EXPOSER_H_
#define LEASEKEEPER_METRICS_EXPOSER_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "prometheus/collectable.h"

namespace leasekeeper::metrics {

// How connections are served; every limit is a contract the tests check.
// The loop accepts every connection the kernel has completed, so a scrape
// is never queued behind stalled clients: at the cap it closes the oldest
// idle connection (the one whose last byte in or out is the oldest) to
// admit the new one, and a scraper that sends its request at once is
// answered before it could become the oldest. Memory is bounded by
// max_connections * (max_request_header_bytes + one response).
struct ExposerOptions {
  // Connections held open at once; at the cap a new connection closes the
  // oldest idle one. Each costs a descriptor and up to
  // max_request_header_bytes of buffer while it reads.
  int max_connections = 256;
  // From accept, how long a connection may take to send its whole request
  // head (request line and headers) before it is closed without an answer.
  // A trickle does not extend it. A scraper sends its request at once.
  int header_timeout_ms = 2'000;
  // From the end of its request, how long a connection may take to take
  // its whole response before it is closed. Writes never block the loop.
  int write_timeout_ms = 10'000;
  // A longer request head is answered 431 and closed.
  int max_request_header_bytes = 8'192;
  // Connections the kernel completes before the loop accepts them.
  int listen_backlog = 1'024;
  // Shedding (closing at the cap or at a timeout) is reported through
  // error_log at most once per interval, as one line with the counts
  // since the previous line: the first shed at once, later ones when the
  // interval has passed.
  int shed_log_interval_ms = 10'000;
  // Receives the server's messages after a successful start (on its
  // thread): shedding reports, and errors accepting connections.
  // Default: dropped.
  std::function<void(absl::string_view)> error_log{};
};

class MetricsExposer {
 public:
  // Binds `listen` ("host:port", "[v6]:port"; host may be a name such as
  // localhost, which resolves to its first address; port 0 picks a free
  // port) and serves `collectables` as http_request.h answers, the body
  // being their families in prometheus::TextSerializer's text format,
  // followed by the server's own leasekeeper_metrics_http_* series.
  // Outcomes: the running exposer; INVALID_ARGUMENT for an address that
  // breaks client/host_port.h's rule (port 0 allowed) or an option below 1;
  // UNAVAILABLE if the address cannot be resolved or bound (the message
  // names the address and says why).
  static absl::StatusOr<std::unique_ptr<MetricsExposer>> Start(
      absl::string_view listen,
      const std::vector<std::weak_ptr<prometheus::Collectable>>& collectables,
      ExposerOptions options = {});

  MetricsExposer(const MetricsExposer&) = delete;
  MetricsExposer& operator=(const MetricsExposer&) = delete;
  // Stops the loop, closes every connection and the listener, and joins
  // the server's thread (at once: a scrape in progress finishes first).
  ~MetricsExposer();

  // The bound port (the actual one when started with port 0).
  int port() const { return port_; }
  // The bound address with the actual port, e.g. "127.0.0.1:9464" or
  // "[::1]:9464".
  const std::string& address() const { return address_; }

 private:
  class Loop;  // the server's thread and everything it owns; in the .cc

  MetricsExposer(std::unique_ptr<Loop> loop, int port, std::string address);

  std::unique_ptr<Loop> loop_;
  int port_;
  std::string address_;
};

}  // namespace leasekeeper::metrics

#endif  // LEASEKEEPER_METRICS_EXPOSER_H_
