// Test helper: a loopback TCP relay between clients and a server, which a
// test can cut and restore, as a network failure or a server restart would
// look to a client.
//
//   auto proxy = TcpProxy::Start(server.port());
//   auto client = Client::Create(MakeChannel((*proxy)->address()));
//   (*proxy)->Cut();      // every connection through it drops now
//   (*proxy)->Restore();  // new connections reach the target again
//
// Guarantees:
//  1. It listens on 127.0.0.1 only, on a port the kernel picked, and
//     connects only to 127.0.0.1:target_port.
//  2. After Cut() returns, every connection it relayed is closed (both
//     sides) and its port refuses connections, as a stopped server's would.
//  3. After Restore() returns OK, the same port accepts again, and new
//     connections are relayed (to the target of the last SetTarget).
//  4. After SetLatency(d), every chunk read from either side is held d
//     before it is passed on, as a slow link would (0: at once).
//
// Thread-safety: all methods are thread-safe. One thread accepts, and each
// relayed connection has a thread of its own; the destructor closes
// everything and joins them.
#ifndef LEASEKEEPER_TESTS_CLIENT_TCP_PROXY_H_
#define LEASEKEEPER_TESTS_CLIENT_TCP_PROXY_H_

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace leasekeeper::client::testing {

class TcpProxy {
 public:
  // Listens and starts relaying to 127.0.0.1:target_port.
  // Outcomes: the proxy; INTERNAL if the listening socket cannot be made.
  static absl::StatusOr<std::unique_ptr<TcpProxy>> Start(int target_port);

  // Closes every connection and stops the threads.
  ~TcpProxy();

  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  // "127.0.0.1:PORT", the address clients connect to.
  const std::string& address() const { return address_; }

  // New connections go to 127.0.0.1:target_port (e.g. a restarted server
  // on another port); relayed ones are left alone.
  void SetTarget(int target_port);

  // Guarantee 4.
  void SetLatency(absl::Duration latency);

  // Guarantee 2.
  void Cut();
  // Guarantee 3. Outcomes: OK; INTERNAL if the port cannot be listened on
  // again (taken meanwhile).
  absl::Status Restore();

 private:
  struct Connection {
    int client_fd;
    int server_fd;
  };

  TcpProxy(int listen_fd, int port, int target_port);
  void AcceptLoop();
  void Relay(std::shared_ptr<Connection> connection);

  const int port_;
  const std::string address_;
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> latency_us_{0};
  std::thread acceptor_;

  absl::Mutex mu_;
  int listen_fd_ ABSL_GUARDED_BY(mu_);  // -1 while cut
  int target_port_ ABSL_GUARDED_BY(mu_);
  bool cut_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::shared_ptr<Connection>> connections_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> relays_ ABSL_GUARDED_BY(mu_);
};

}  // namespace leasekeeper::client::testing

#endif  // LEASEKEEPER_TESTS_CLIENT_TCP_PROXY_H_
