#include "tests/client/tcp_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fcntl.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace leasekeeper::client::testing {
namespace {

// How often the threads look at stopping_ while nothing happens.
constexpr int kPollMs = 50;

sockaddr_in Loopback(int port) {
  sockaddr_in address;
  std::memset(&address, 0, sizeof(address));
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return address;
}

int ConnectToLoopback(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in address = Loopback(port);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) !=
      0) {
    close(fd);
    return -1;
  }
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

// Copies what `from` has to `to`; false once either side is done.
bool Forward(int from, int to, absl::Duration latency) {
  char buffer[16384];
  const ssize_t got = read(from, buffer, sizeof(buffer));
  if (got <= 0) return got < 0 && errno == EINTR;
  absl::SleepFor(latency);
  for (ssize_t sent = 0; sent < got;) {
    const ssize_t n = send(to, buffer + sent, got - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    sent += n;
  }
  return true;
}

// A socket listening on 127.0.0.1:port (0: a port the kernel picks); -1 and
// errno on failure.
int ListenOnLoopback(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in address = Loopback(port);
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      listen(fd, 64) != 0) {
    const int error = errno;
    close(fd);
    errno = error;
    return -1;
  }
  return fd;
}

}  // namespace

absl::StatusOr<std::unique_ptr<TcpProxy>> TcpProxy::Start(int target_port) {
  const int fd = ListenOnLoopback(0);
  sockaddr_in address;
  socklen_t length = sizeof(address);
  if (fd < 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    const int error = errno;
    if (fd >= 0) close(fd);
    return absl::InternalError(
        absl::StrCat("listening on 127.0.0.1: ", std::strerror(error)));
  }
  std::unique_ptr<TcpProxy> proxy(
      new TcpProxy(fd, ntohs(address.sin_port), target_port));
  proxy->acceptor_ = std::thread([raw = proxy.get()] { raw->AcceptLoop(); });
  return proxy;
}

TcpProxy::TcpProxy(int listen_fd, int port, int target_port)
    : port_(port),
      address_(absl::StrCat("127.0.0.1:", port)),
      listen_fd_(listen_fd),
      target_port_(target_port) {}

TcpProxy::~TcpProxy() {
  stopping_.store(true);
  acceptor_.join();
  Cut();
  std::vector<std::thread> relays;
  {
    absl::MutexLock lock(&mu_);
    relays.swap(relays_);
    if (listen_fd_ >= 0) close(listen_fd_);
  }
  for (std::thread& relay : relays) relay.join();
}

void TcpProxy::SetTarget(int target_port) {
  absl::MutexLock lock(&mu_);
  target_port_ = target_port;
}

void TcpProxy::SetLatency(absl::Duration latency) {
  latency_us_.store(absl::ToInt64Microseconds(latency));
}

void TcpProxy::Cut() {
  absl::MutexLock lock(&mu_);
  cut_ = true;
  // Closing the listening socket refuses new connections (and resets those
  // not accepted yet), as a stopped server would. The acceptor polls it
  // with a timeout, so it never waits on a closed descriptor for long, and
  // takes it only under mu_.
  if (listen_fd_ >= 0) {
    close(listen_fd_);
    listen_fd_ = -1;
  }
  // The relay threads see the ends, close the sockets and leave. They
  // remove their connection under mu_ before closing, so these descriptors
  // are still theirs.
  for (const auto& connection : connections_) {
    shutdown(connection->client_fd, SHUT_RDWR);
    shutdown(connection->server_fd, SHUT_RDWR);
  }
}

absl::Status TcpProxy::Restore() {
  absl::MutexLock lock(&mu_);
  if (listen_fd_ < 0) {
    listen_fd_ = ListenOnLoopback(port_);
    if (listen_fd_ < 0) {
      return absl::InternalError(absl::StrCat(
          "listening on ", address_, " again: ", std::strerror(errno)));
    }
  }
  cut_ = false;
  return absl::OkStatus();
}

void TcpProxy::AcceptLoop() {
  while (!stopping_.load()) {
    int listen_fd = -1;
    {
      absl::MutexLock lock(&mu_);
      listen_fd = listen_fd_;
    }
    if (listen_fd < 0) {
      absl::SleepFor(absl::Milliseconds(kPollMs));
      continue;
    }
    pollfd ready{listen_fd, POLLIN, 0};
    if (poll(&ready, 1, kPollMs) <= 0) continue;
    int client_fd = -1;
    int target = 0;
    {
      absl::MutexLock lock(&mu_);
      // Cut may have closed (and the number been reused) since the poll.
      if (listen_fd_ != listen_fd || cut_) continue;
      client_fd = accept4(listen_fd, nullptr, nullptr,
                          SOCK_CLOEXEC | SOCK_NONBLOCK);
      target = target_port_;
    }
    if (client_fd < 0) continue;
    // Blocking from here on; only the accept must not wait.
    fcntl(client_fd, F_SETFL, 0);
    const int server_fd = ConnectToLoopback(target);
    if (server_fd < 0) {
      close(client_fd);  // the server is down: so is the connection
      continue;
    }
    const int one = 1;
    setsockopt(client_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    auto connection =
        std::make_shared<Connection>(Connection{client_fd, server_fd});
    absl::MutexLock lock(&mu_);
    if (cut_) {
      close(client_fd);
      close(server_fd);
      continue;
    }
    connections_.push_back(connection);
    relays_.emplace_back([this, connection] { Relay(connection); });
  }
}

void TcpProxy::Relay(std::shared_ptr<Connection> connection) {
  pollfd fds[2] = {{connection->client_fd, POLLIN, 0},
                   {connection->server_fd, POLLIN, 0}};
  bool open = true;
  while (open && !stopping_.load()) {
    fds[0].revents = fds[1].revents = 0;
    const int ready = poll(fds, 2, kPollMs);
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    const absl::Duration latency = absl::Microseconds(latency_us_.load());
    if (fds[0].revents != 0) {
      open = Forward(connection->client_fd, connection->server_fd, latency);
    }
    if (open && fds[1].revents != 0) {
      open = Forward(connection->server_fd, connection->client_fd, latency);
    }
  }
  {
    absl::MutexLock lock(&mu_);
    std::erase(connections_, connection);
  }
  close(connection->client_fd);
  close(connection->server_fd);
}

}  // namespace leasekeeper::client::testing
