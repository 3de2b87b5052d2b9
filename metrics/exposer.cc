#include "metrics/exposer.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <limits>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "client/host_port.h"
#include "metrics/connection_table.h"
#include "metrics/http_request.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"

namespace leasekeeper::metrics {
namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Resolved {
  sockaddr_storage address{};
  socklen_t length = 0;
  std::string numeric_host;
  bool ipv6 = false;
};

// The first address `host_port` resolves to.
absl::StatusOr<Resolved> Resolve(const client::HostPort& host_port,
                                 absl::string_view listen) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE;
  addrinfo* resolved = nullptr;
  const std::string port = std::to_string(host_port.port);
  if (int error = getaddrinfo(host_port.host.c_str(), port.c_str(), &hints,
                              &resolved);
      error != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot resolve metrics listen address \"", listen,
                     "\": ", gai_strerror(error)));
  }
  Resolved out;
  std::memcpy(&out.address, resolved->ai_addr, resolved->ai_addrlen);
  out.length = resolved->ai_addrlen;
  out.ipv6 = resolved->ai_family == AF_INET6;
  char host[NI_MAXHOST] = "";
  const int error = getnameinfo(resolved->ai_addr, resolved->ai_addrlen, host,
                                sizeof(host), nullptr, 0, NI_NUMERICHOST);
  freeaddrinfo(resolved);
  if (error != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot resolve metrics listen address \"", listen,
                     "\": ", gai_strerror(error)));
  }
  out.numeric_host = host;
  return out;
}

// Closes a descriptor unless it is -1.
void CloseFd(int fd) {
  if (fd >= 0) close(fd);
}

// epoll data of the two descriptors that are not connections (connection
// ids start at 1).
constexpr uint64_t kListenerTag = 0;
constexpr uint64_t kWakeTag = std::numeric_limits<uint64_t>::max();
// How long accepting pauses when the process is out of descriptors.
constexpr int64_t kAcceptPauseMs = 100;
constexpr int kReadChunkBytes = 4'096;
constexpr int kMaxEvents = 256;

}  // namespace

class MetricsExposer::Loop {
 public:
  Loop(int listener, int epoll, int wake,
       std::vector<std::weak_ptr<prometheus::Collectable>> collectables,
       ExposerOptions options)
      : listener_(listener),
        epoll_(epoll),
        wake_(wake),
        collectables_(std::move(collectables)),
        options_(std::move(options)),
        table_(ConnectionLimits{.max_connections = options_.max_connections,
                                .header_timeout_ms = options_.header_timeout_ms,
                                .write_timeout_ms = options_.write_timeout_ms}),
        own_metrics_(std::make_shared<prometheus::Registry>()),
        connections_(prometheus::BuildGauge()
                         .Name("leasekeeper_metrics_http_connections")
                         .Help("Connections the /metrics server holds open.")
                         .Register(*own_metrics_)
                         .Add({})),
        shed_family_(
            prometheus::BuildCounter()
                .Name("leasekeeper_metrics_http_connections_shed_total")
                .Help("Connections the /metrics server closed to protect "
                      "itself, by reason: cap (the oldest idle one, to "
                      "admit a new one), header_timeout, write_timeout.")
                .Register(*own_metrics_)),
        shed_cap_(shed_family_.Add({{"reason", "cap"}})),
        shed_header_(shed_family_.Add({{"reason", "header_timeout"}})),
        shed_write_(shed_family_.Add({{"reason", "write_timeout"}})),
        scrapes_(prometheus::BuildCounter()
                     .Name("leasekeeper_metrics_http_scrapes_total")
                     .Help("Requests answered with the exposition.")
                     .Register(*own_metrics_)
                     .Add({})) {}

  Loop(const Loop&) = delete;
  Loop& operator=(const Loop&) = delete;

  ~Loop() {
    if (thread_.joinable()) {
      const uint64_t one = 1;
      // Only fails if the counter would overflow; the loop wakes anyway.
      (void)!write(wake_, &one, sizeof(one));
      thread_.join();
    }
    for (auto& [id, connection] : connections_by_id_) CloseFd(connection.fd);
    CloseFd(listener_);
    CloseFd(wake_);
    CloseFd(epoll_);
  }

  void StartThread() {
    thread_ = std::thread([this] { Run(); });
  }

 private:
  struct Connection {
    int fd = -1;
    std::string in;      // the request head so far
    std::string out;     // the response, once the head is complete
    size_t written = 0;  // of `out`
  };
  enum class Shed { kCap, kHeaderTimeout, kWriteTimeout };

  void Run() {
    epoll_event events[kMaxEvents];
    while (true) {
      const int n = epoll_wait(epoll_, events, kMaxEvents, WaitMs(NowMs()));
      if (n < 0 && errno != EINTR) {
        Report(absl::StrCat("epoll_wait failed: ", std::strerror(errno)));
        return;
      }
      int64_t now = NowMs();
      for (int i = 0; i < n; ++i) {
        const uint64_t tag = events[i].data.u64;
        if (tag == kWakeTag) return;
        if (tag == kListenerTag) {
          Accept(now);
        } else {
          OnConnectionEvent(tag, events[i].events, now);
        }
        now = NowMs();
      }
      Expire(now);
      if (accept_paused_until_ms_.has_value() &&
          now >= *accept_paused_until_ms_) {
        accept_paused_until_ms_.reset();
        Watch(listener_, kListenerTag, EPOLLIN, EPOLL_CTL_ADD);
      }
      MaybeReportShed(now);
    }
  }

  // Milliseconds until the next thing due (a deadline, the end of an accept
  // pause, a pending shed report), -1 for none.
  int WaitMs(int64_t now) const {
    std::optional<int64_t> due = table_.NextDeadline();
    auto consider = [&due](int64_t at) {
      due = due.has_value() ? std::min(*due, at) : at;
    };
    if (accept_paused_until_ms_.has_value()) consider(*accept_paused_until_ms_);
    if (pending_.total() > 0) consider(next_report_ms_);
    if (!due.has_value()) return -1;
    return static_cast<int>(
        std::clamp<int64_t>(*due - now, 0, std::numeric_limits<int>::max()));
  }

  void Watch(int fd, uint64_t tag, uint32_t events, int op) {
    epoll_event event{};
    event.events = events;
    event.data.u64 = tag;
    epoll_ctl(epoll_, op, fd, &event);
  }

  void Accept(int64_t now) {
    while (true) {
      const int fd =
          accept4(listener_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return;
        // Out of descriptors or memory: the listener would stay readable and
        // spin the loop, so stop watching it for a moment.
        if (pending_.total() == 0) window_start_ms_ = now;
        ++pending_.accept_errors;
        last_accept_error_ = std::strerror(errno);
        epoll_ctl(epoll_, EPOLL_CTL_DEL, listener_, nullptr);
        accept_paused_until_ms_ = now + kAcceptPauseMs;
        MaybeReportShed(now);
        return;
      }
      const ConnectionTable::Admission admission = table_.Admit(now);
      if (admission.evicted.has_value()) {
        Drop(*admission.evicted);
        CountShed(Shed::kCap, now);
      }
      connections_by_id_[admission.id].fd = fd;
      Watch(fd, admission.id, EPOLLIN, EPOLL_CTL_ADD);
    }
  }

  void OnConnectionEvent(ConnectionTable::Id id, uint32_t events, int64_t now) {
    auto it = connections_by_id_.find(id);
    if (it == connections_by_id_.end()) return;  // closed earlier this round
    Connection& connection = it->second;
    if (connection.out.empty()) {
      if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) Read(id, connection, now);
    } else if (events & (EPOLLOUT | EPOLLHUP | EPOLLERR)) {
      Write(id, connection, now);
    }
  }

  void Read(ConnectionTable::Id id, Connection& connection, int64_t now) {
    const size_t limit = static_cast<size_t>(options_.max_request_header_bytes);
    char buffer[kReadChunkBytes];
    // One byte past the limit at most: enough to know it was exceeded.
    const size_t room =
        std::min(sizeof(buffer), limit + 1 - connection.in.size());
    const ssize_t n = recv(connection.fd, buffer, room, 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      return;
    }
    if (n <= 0) {  // the peer closed or reset before finishing its request
      Drop(id);
      return;
    }
    table_.Progress(id, now);
    const size_t searched = connection.in.size();
    connection.in.append(buffer, static_cast<size_t>(n));
    const std::optional<size_t> head = RequestHeadSize(connection.in, searched);
    if (head.has_value() && *head <= limit) {
      Respond(id, connection,
              AnswerRequest(absl::string_view(connection.in).substr(0, *head)),
              now);
    } else if (connection.in.size() > limit) {
      Respond(id, connection, HeaderTooLarge(), now);
    }
  }

  void Respond(ConnectionTable::Id id, Connection& connection,
               const Answer& answer, int64_t now) {
    std::string body;
    if (answer.metrics) {
      body = Render();
      scrapes_.Increment();
    }
    connection.out = FormatResponse(answer, body);
    connection.in.clear();
    connection.in.shrink_to_fit();
    table_.StartResponse(id, now);
    Watch(connection.fd, id, EPOLLOUT, EPOLL_CTL_MOD);
    Write(id, connection, now);
  }

  void Write(ConnectionTable::Id id, Connection& connection, int64_t now) {
    while (connection.written < connection.out.size()) {
      const ssize_t n =
          send(connection.fd, connection.out.data() + connection.written,
               connection.out.size() - connection.written,
               MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (n <= 0) break;  // the peer is gone
      connection.written += static_cast<size_t>(n);
      table_.Progress(id, now);
    }
    Drop(id);  // sent, or the peer is gone: one response per connection
  }

  void Expire(int64_t now) {
    for (ConnectionTable::Id id : table_.TakeExpired(now)) {
      auto it = connections_by_id_.find(id);
      if (it == connections_by_id_.end()) continue;
      const bool reading = it->second.out.empty();
      CloseFd(it->second.fd);
      connections_by_id_.erase(it);
      CountShed(reading ? Shed::kHeaderTimeout : Shed::kWriteTimeout, now);
    }
  }

  // Closes the connection and forgets it.
  void Drop(ConnectionTable::Id id) {
    table_.Remove(id);
    auto it = connections_by_id_.find(id);
    if (it == connections_by_id_.end()) return;
    CloseFd(it->second.fd);
    connections_by_id_.erase(it);
  }

  void CountShed(Shed reason, int64_t now) {
    if (pending_.total() == 0) window_start_ms_ = now;
    switch (reason) {
      case Shed::kCap:
        ++pending_.cap;
        shed_cap_.Increment();
        break;
      case Shed::kHeaderTimeout:
        ++pending_.header_timeout;
        shed_header_.Increment();
        break;
      case Shed::kWriteTimeout:
        ++pending_.write_timeout;
        shed_write_.Increment();
        break;
    }
    MaybeReportShed(now);
  }

  // One line per shed_log_interval_ms at most: a shed after a quiet
  // interval is reported at once, the ones that follow within the interval
  // together when it ends.
  void MaybeReportShed(int64_t now) {
    if (pending_.total() == 0 || now < next_report_ms_) return;
    const int64_t shed =
        pending_.cap + pending_.header_timeout + pending_.write_timeout;
    std::string line = absl::StrCat(
        "closed ", shed, shed == 1 ? " connection" : " connections",
        " in the last ", (now - window_start_ms_) / 1000.0,
        " s to protect /metrics: ", pending_.cap, " at the cap of ",
        options_.max_connections, " (oldest idle first), ",
        pending_.header_timeout, " without a request head within ",
        options_.header_timeout_ms, " ms, ", pending_.write_timeout,
        " not taking the response within ", options_.write_timeout_ms, " ms");
    if (pending_.accept_errors > 0) {
      absl::StrAppend(&line, "; ", pending_.accept_errors, " accept failures (",
                      last_accept_error_, "), each pausing accepts for ",
                      kAcceptPauseMs, " ms");
    }
    Report(line);
    pending_ = {};
    next_report_ms_ = now + options_.shed_log_interval_ms;
  }

  void Report(absl::string_view message) {
    if (options_.error_log) options_.error_log(message);
  }

  std::string Render() {
    connections_.Set(static_cast<double>(table_.size()));
    std::vector<prometheus::MetricFamily> families;
    for (const std::weak_ptr<prometheus::Collectable>& weak : collectables_) {
      const std::shared_ptr<prometheus::Collectable> collectable = weak.lock();
      if (collectable == nullptr) continue;
      for (prometheus::MetricFamily& family : collectable->Collect()) {
        families.push_back(std::move(family));
      }
    }
    for (prometheus::MetricFamily& family : own_metrics_->Collect()) {
      families.push_back(std::move(family));
    }
    return prometheus::TextSerializer().Serialize(families);
  }

  struct Pending {
    int64_t cap = 0;
    int64_t header_timeout = 0;
    int64_t write_timeout = 0;
    int64_t accept_errors = 0;
    int64_t total() const {
      return cap + header_timeout + write_timeout + accept_errors;
    }
  };

  const int listener_;
  const int epoll_;
  const int wake_;
  const std::vector<std::weak_ptr<prometheus::Collectable>> collectables_;
  const ExposerOptions options_;
  std::thread thread_;

  // Everything below belongs to the loop's thread.
  ConnectionTable table_;
  absl::flat_hash_map<ConnectionTable::Id, Connection> connections_by_id_;
  std::optional<int64_t> accept_paused_until_ms_;
  std::string last_accept_error_;
  Pending pending_;
  int64_t next_report_ms_ = std::numeric_limits<int64_t>::min();
  int64_t window_start_ms_ = 0;

  const std::shared_ptr<prometheus::Registry> own_metrics_;
  prometheus::Gauge& connections_;
  prometheus::Family<prometheus::Counter>& shed_family_;
  prometheus::Counter& shed_cap_;
  prometheus::Counter& shed_header_;
  prometheus::Counter& shed_write_;
  prometheus::Counter& scrapes_;
};

absl::StatusOr<std::unique_ptr<MetricsExposer>> MetricsExposer::Start(
    absl::string_view listen,
    const std::vector<std::weak_ptr<prometheus::Collectable>>& collectables,
    ExposerOptions options) {
  if (options.max_connections < 1 || options.header_timeout_ms < 1 ||
      options.write_timeout_ms < 1 || options.max_request_header_bytes < 1 ||
      options.listen_backlog < 1 || options.shed_log_interval_ms < 1) {
    return absl::InvalidArgumentError(
        "metrics exposer options must all be >= 1 (max_connections, "
        "header_timeout_ms, write_timeout_ms, max_request_header_bytes, "
        "listen_backlog, shed_log_interval_ms)");
  }
  // The rule every leasekeeper address follows (the daemon's flags check
  // it first).
  absl::StatusOr<client::HostPort> host_port =
      client::ParseHostPort(listen, /*min_port=*/0);
  if (!host_port.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid metrics listen address \"", listen, "\": ",
                     host_port.status().message()));
  }
  absl::StatusOr<Resolved> resolved = Resolve(*host_port, listen);
  if (!resolved.ok()) return resolved.status();
  auto fail = [&](absl::string_view what) {
    return absl::UnavailableError(absl::StrCat("cannot serve metrics on \"",
                                               listen, "\": ", what, ": ",
                                               std::strerror(errno)));
  };

  const int listener = socket(resolved->address.ss_family,
                              SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listener < 0) return fail("socket");
  const int on = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
  if (bind(listener, reinterpret_cast<const sockaddr*>(&resolved->address),
           resolved->length) != 0 ||
      ::listen(listener, options.listen_backlog) != 0) {
    absl::Status status = fail("bind");
    CloseFd(listener);
    return status;
  }
  sockaddr_storage bound{};
  socklen_t bound_length = sizeof(bound);
  getsockname(listener, reinterpret_cast<sockaddr*>(&bound), &bound_length);
  const int port =
      bound.ss_family == AF_INET6
          ? ntohs(reinterpret_cast<const sockaddr_in6*>(&bound)->sin6_port)
          : ntohs(reinterpret_cast<const sockaddr_in*>(&bound)->sin_port);

  const int epoll = epoll_create1(EPOLL_CLOEXEC);
  const int wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll < 0 || wake < 0) {
    absl::Status status = fail("epoll");
    CloseFd(listener);
    CloseFd(epoll);
    CloseFd(wake);
    return status;
  }
  auto loop = std::make_unique<Loop>(listener, epoll, wake, collectables,
                                     std::move(options));
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.u64 = kListenerTag;
  epoll_ctl(epoll, EPOLL_CTL_ADD, listener, &event);
  event.data.u64 = kWakeTag;
  epoll_ctl(epoll, EPOLL_CTL_ADD, wake, &event);
  loop->StartThread();

  std::string address =
      resolved->ipv6 ? absl::StrCat("[", resolved->numeric_host, "]:", port)
                     : absl::StrCat(resolved->numeric_host, ":", port);
  return std::unique_ptr<MetricsExposer>(
      new MetricsExposer(std::move(loop), port, std::move(address)));
}

MetricsExposer::MetricsExposer(std::unique_ptr<Loop> loop, int port,
                               std::string address)
    : loop_(std::move(loop)), port_(port), address_(std::move(address)) {}

MetricsExposer::~MetricsExposer() = default;

}  // namespace leasekeeper::metrics
