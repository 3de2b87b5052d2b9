// SlowClients: TCP connections to a loopback HTTP port that never finish
// their request, the way a stalled scraper, a port scanner or a half-open
// connection left by a vanished peer looks to the server. For tests of the
// /metrics endpoint's defences.
//
// Even-numbered connections send nothing; odd-numbered ones send a request
// line and one header, then stall before the blank line that would end the
// request. Every connection is closed when the object is destroyed.
//
// Thread-safety: one thread at a time.
#ifndef LEASEKEEPER_METRICS_TESTING_SLOW_CLIENTS_H_
#define LEASEKEEPER_METRICS_TESTING_SLOW_CLIENTS_H_

#include <vector>

namespace leasekeeper::metrics::testing {

class SlowClients {
 public:
  // Opens `count` connections to 127.0.0.1:`port`. A connection that fails
  // is not kept: check connected().
  SlowClients(int port, int count);
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
};

}  // namespace leasekeeper::metrics::testing

#endif  // LEASEKEEPER_METRICS_TESTING_SLOW_CLIENTS_H_
