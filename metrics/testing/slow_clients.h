// SlowClients: TCP connections to a loopback port that never finish a
// request, the way a stalled scraper, a port scanner, a slowloris attacker
// or a half-open connection left by a vanished peer looks to the server.
// For tests of the defences of /metrics, the health port and the gRPC port.
//
// Even-numbered connections send nothing; odd-numbered ones send a start
// (by default an HTTP request line and the start of a header that never
// ends). With a trickle interval, each odd-numbered connection then sends
// one more byte every interval, cycling through `trickle_bytes` (from a
// thread of its own, never blocking), so it never looks idle for long.
// Every connection is closed when the object is destroyed.
//
// Thread-safety: one thread at a time.
#ifndef LEASEKEEPER_METRICS_TESTING_SLOW_CLIENTS_H_
#define LEASEKEEPER_METRICS_TESTING_SLOW_CLIENTS_H_

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace leasekeeper::metrics::testing {

struct SlowClientsOptions {
  std::string start = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
  // Zero: no trickle, the odd-numbered ones stall after their start.
  std::chrono::milliseconds trickle{0};
  std::string trickle_bytes = "a";  // REQUIRES: not empty with a trickle
};

class SlowClients {
 public:
  // Opens `count` connections to 127.0.0.1:`port`, each connect waiting at
  // most 2 s. A connection that fails is not kept: check connected().
  SlowClients(int port, int count, SlowClientsOptions options = {});
  SlowClients(const SlowClients&) = delete;
  SlowClients& operator=(const SlowClients&) = delete;
  ~SlowClients();

  // Connections established (the kernel completed the handshake; the server
  // may not have accepted them yet).
  int connected() const { return static_cast<int>(fds_.size()); }

  // How many of them the server has given up on (closed, reset, or answered
  // with an error), checked now without blocking. O(connections).
  int GivenUpByServer() const;

 private:
  std::vector<int> fds_;
  std::atomic<bool> stop_{false};
  std::thread trickler_;
};

// Raises this process's soft RLIMIT_NOFILE to its hard limit and returns
// the new soft limit.
int RaiseOpenFileLimit();

}  // namespace leasekeeper::metrics::testing

#endif  // LEASEKEEPER_METRICS_TESTING_SLOW_CLIENTS_H_
