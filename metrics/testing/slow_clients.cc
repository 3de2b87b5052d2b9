#include "metrics/testing/slow_clients.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

namespace leasekeeper::metrics::testing {

SlowClients::SlowClients(int port, int count) {
  static constexpr char kPartialRequest[] =
      "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int i = 0; i < count; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) continue;
    if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) !=
        0) {
      close(fd);
      continue;
    }
    if (i % 2 == 1) {
      send(fd, kPartialRequest, std::strlen(kPartialRequest), MSG_NOSIGNAL);
    }
    fds_.push_back(fd);
  }
}

SlowClients::~SlowClients() {
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

}  // namespace leasekeeper::metrics::testing
