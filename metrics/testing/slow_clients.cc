#include "metrics/testing/slow_clients.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <limits>

namespace leasekeeper::metrics::testing {

SlowClients::SlowClients(int port, int count, SlowClientsOptions options) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int i = 0; i < count; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) continue;
    // Bounds connect(2) when the server's accept queue is full.
    timeval timeout{2, 0};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
    if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) !=
        0) {
      close(fd);
      continue;
    }
    if (i % 2 == 1 && !options.start.empty()) {
      send(fd, options.start.data(), options.start.size(),
           MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    fds_.push_back(fd);
  }
  if (options.trickle.count() > 0 && !options.trickle_bytes.empty()) {
    trickler_ = std::thread([this, options = std::move(options)] {
      for (size_t next = 0; !stop_.load(); ++next) {
        const char byte =
            options.trickle_bytes[next % options.trickle_bytes.size()];
        for (size_t i = 1; i < fds_.size(); i += 2) {
          send(fds_[i], &byte, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        }
        std::this_thread::sleep_for(options.trickle);
      }
    });
  }
}

SlowClients::~SlowClients() {
  stop_.store(true);
  if (trickler_.joinable()) trickler_.join();
  for (int fd : fds_) close(fd);
}

int SlowClients::GivenUpByServer() const {
  int closed = 0;
  for (int fd : fds_) {
    pollfd entry{.fd = fd, .events = POLLIN, .revents = 0};
    // Readable: the server ended the stream, reset it, or sent an error
    // reply before closing; either way it gave up on the connection.
    if (poll(&entry, 1, 0) > 0) ++closed;
  }
  return closed;
}

int RaiseOpenFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
    getrlimit(RLIMIT_NOFILE, &limit);
  }
  return limit.rlim_cur > static_cast<rlim_t>(std::numeric_limits<int>::max())
             ? std::numeric_limits<int>::max()
             : static_cast<int>(limit.rlim_cur);
}

}  // namespace leasekeeper::metrics::testing
