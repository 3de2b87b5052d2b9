#include "metrics/exposer.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "metrics/http_request.h"
#include "metrics/testing/exposition_parser.h"
#include "metrics/testing/http_get.h"
#include "metrics/testing/slow_clients.h"
#include "prometheus/counter.h"
#include "prometheus/registry.h"

namespace leasekeeper::metrics {
namespace {

using testing::Exposition;
using testing::HttpGet;
using testing::HttpRequest;
using testing::HttpResponse;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// A raw client connection to 127.0.0.1:port, for requests sent in pieces.
class Connection {
 public:
  explicit Connection(int port) : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&address),
                         sizeof(address)) == 0;
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection() { close(fd_); }

  bool connected() const { return connected_; }
  bool Send(const std::string& bytes) {
    return send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(bytes.size());
  }
  // Everything the server sends until it closes, waiting at most `timeout`
  // overall; `closed` says whether it did close.
  std::string ReadUntilClosed(milliseconds timeout, bool* closed) {
    std::string data;
    const Clock::time_point deadline = Clock::now() + timeout;
    *closed = false;
    while (Clock::now() < deadline) {
      pollfd entry{.fd = fd_, .events = POLLIN, .revents = 0};
      const int left = static_cast<int>(
          std::chrono::duration_cast<milliseconds>(deadline - Clock::now())
              .count());
      if (poll(&entry, 1, std::max(left, 0)) <= 0) break;
      char buffer[65536];
      const ssize_t n = recv(fd_, buffer, sizeof(buffer), 0);
      if (n <= 0) {
        *closed = true;
        break;
      }
      data.append(buffer, static_cast<size_t>(n));
    }
    return data;
  }
  // Whether the server has closed (or answered) this connection, waiting
  // at most `timeout`.
  bool ClosedByServerWithin(milliseconds timeout) {
    pollfd entry{.fd = fd_, .events = POLLIN, .revents = 0};
    return poll(&entry, 1, static_cast<int>(timeout.count())) > 0;
  }

 private:
  int fd_;
  bool connected_ = false;
};

constexpr char kRequest[] = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";

std::vector<std::weak_ptr<prometheus::Collectable>> Only(
    const std::shared_ptr<prometheus::Collectable>& collectable) {
  return {collectable};
}

class ExposerTest : public ::testing::Test {
 protected:
  void SetUp() override { Start({}); }

  void Start(ExposerOptions options) {
    exposer_.reset();
    absl::StatusOr<std::unique_ptr<MetricsExposer>> exposer =
        MetricsExposer::Start("127.0.0.1:0", Only(registry_),
                              std::move(options));
    ASSERT_TRUE(exposer.ok()) << exposer.status();
    exposer_ = std::move(*exposer);
  }

  std::shared_ptr<prometheus::Registry> registry_ =
      std::make_shared<prometheus::Registry>();
  prometheus::Counter& releases_ = prometheus::BuildCounter()
                                       .Name("leasekeeper_releases_total")
                                       .Help("Leases released.")
                                       .Register(*registry_)
                                       .Add({});
  std::unique_ptr<MetricsExposer> exposer_;
};

TEST_F(ExposerTest, PortZeroBindsAFreeLoopbackPort) {
  EXPECT_GT(exposer_->port(), 0);
  EXPECT_EQ(exposer_->address(),
            "127.0.0.1:" + std::to_string(exposer_->port()));
}

TEST_F(ExposerTest, GetMetricsServesTheCurrentValues) {
  releases_.Increment(2);
  absl::StatusOr<HttpResponse> response = HttpGet(exposer_->port(), "/metrics");
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->headers["content-type"], kExpositionContentType);
  absl::StatusOr<Exposition> parsed = Exposition::Parse(response->body);
  ASSERT_TRUE(parsed.ok()) << parsed.status() << "\n" << response->body;
  EXPECT_EQ(parsed->Value("leasekeeper_releases_total"), 2);

  releases_.Increment();
  response = HttpGet(exposer_->port(), "/metrics");
  ASSERT_TRUE(response.ok());
  EXPECT_EQ(
      Exposition::Parse(response->body)->Value("leasekeeper_releases_total"),
      3);
}

TEST_F(ExposerTest, HeadIsAnsweredWithTheHeadersOfGetAndNoBody) {
  absl::StatusOr<HttpResponse> get = HttpGet(exposer_->port(), "/metrics");
  absl::StatusOr<HttpResponse> head =
      HttpRequest(exposer_->port(), "HEAD", "/metrics");
  ASSERT_TRUE(get.ok() && head.ok());
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->headers["content-type"], kExpositionContentType);
  EXPECT_EQ(head->body, "");
  // The exposition grows by the scrape itself, not by more than a line.
  EXPECT_NEAR(std::stod(head->headers["content-length"]),
              static_cast<double>(get->body.size()), 8);
}

TEST_F(ExposerTest, OtherMethodsAre405AndOtherPaths404) {
  for (const char* path : {"/", "/other", "/metrics/", "/metricsx"}) {
    absl::StatusOr<HttpResponse> response = HttpGet(exposer_->port(), path);
    ASSERT_TRUE(response.ok()) << path;
    EXPECT_EQ(response->status, 404) << path;
  }
  for (const char* method : {"POST", "PUT", "DELETE", "OPTIONS"}) {
    absl::StatusOr<HttpResponse> response =
        HttpRequest(exposer_->port(), method, "/metrics");
    ASSERT_TRUE(response.ok()) << method;
    EXPECT_EQ(response->status, 405) << method;
    EXPECT_EQ(response->headers["allow"], "GET, HEAD") << method;
    EXPECT_EQ(response->body.find("leasekeeper_releases_total"),
              std::string::npos)
        << method;
  }
}

TEST_F(ExposerTest, AHeadOverTheSizeLimitIs431) {
  Start({.max_request_header_bytes = 64});
  Connection connection(exposer_->port());
  ASSERT_TRUE(connection.Send("GET /metrics HTTP/1.1\r\nX-Long: " +
                              std::string(100, 'a') + "\r\n\r\n"));
  bool closed = false;
  const std::string answer =
      connection.ReadUntilClosed(milliseconds(5'000), &closed);
  EXPECT_TRUE(closed);
  EXPECT_TRUE(absl::StartsWith(answer, "HTTP/1.1 431 ")) << answer;
}

TEST_F(ExposerTest, ATrickledRequestThatCompletesBeforeTheTimeoutIsAnswered) {
  Start({.header_timeout_ms = 5'000});
  Connection connection(exposer_->port());
  ASSERT_TRUE(connection.connected());
  const std::string request = kRequest;
  for (char byte : request) {
    ASSERT_TRUE(connection.Send(std::string(1, byte)));
    std::this_thread::sleep_for(milliseconds(10));
  }
  bool closed = false;
  const std::string answer =
      connection.ReadUntilClosed(milliseconds(5'000), &closed);
  EXPECT_TRUE(closed);
  EXPECT_TRUE(absl::StartsWith(answer, "HTTP/1.1 200 OK\r\n")) << answer;
  EXPECT_TRUE(absl::StrContains(answer, "leasekeeper_releases_total"));
}

TEST_F(ExposerTest, AnIncompleteHeadIsClosedUnansweredAtTheHeaderTimeout) {
  Start({.header_timeout_ms = 300});
  Connection silent(exposer_->port());
  Connection trickling(exposer_->port());
  ASSERT_TRUE(silent.connected() && trickling.connected());
  const Clock::time_point start = Clock::now();
  // A byte every 50 ms: progress, but the deadline is from accept.
  for (int i = 0; i < 40 && !trickling.ClosedByServerWithin(milliseconds(0));
       ++i) {
    trickling.Send("G");
    std::this_thread::sleep_for(milliseconds(50));
  }
  bool closed = false;
  EXPECT_EQ(trickling.ReadUntilClosed(milliseconds(2'000), &closed), "");
  EXPECT_TRUE(closed);
  EXPECT_EQ(silent.ReadUntilClosed(milliseconds(2'000), &closed), "");
  EXPECT_TRUE(closed);
  const Clock::duration elapsed = Clock::now() - start;
  EXPECT_GE(elapsed, milliseconds(250));
  EXPECT_LT(elapsed, milliseconds(1'800));
}

TEST_F(ExposerTest, AtTheCapTheOldestIdleConnectionIsClosedFirst) {
  Start({.max_connections = 3, .header_timeout_ms = 30'000});
  Connection a(exposer_->port());
  std::this_thread::sleep_for(milliseconds(100));
  Connection b(exposer_->port());
  std::this_thread::sleep_for(milliseconds(100));
  Connection c(exposer_->port());
  std::this_thread::sleep_for(milliseconds(100));
  ASSERT_TRUE(a.Send("G"));  // a made progress: b is now the oldest idle
  std::this_thread::sleep_for(milliseconds(100));

  Connection d(exposer_->port());
  EXPECT_TRUE(b.ClosedByServerWithin(milliseconds(2'000)));
  EXPECT_FALSE(a.ClosedByServerWithin(milliseconds(100)));
  EXPECT_FALSE(c.ClosedByServerWithin(milliseconds(0)));

  // A scrape at the cap evicts the next oldest (c) and is answered.
  absl::StatusOr<HttpResponse> response = HttpGet(exposer_->port(), "/metrics");
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 200);
  EXPECT_TRUE(c.ClosedByServerWithin(milliseconds(2'000)));
  EXPECT_FALSE(a.ClosedByServerWithin(milliseconds(0)));
  EXPECT_FALSE(d.ClosedByServerWithin(milliseconds(0)));
  absl::StatusOr<Exposition> parsed = Exposition::Parse(response->body);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->Value("leasekeeper_metrics_http_connections_shed_total",
                          {{"reason", "cap"}}),
            2);
}

TEST_F(ExposerTest, SheddingIsLoggedOnceAtOnceThenOncePerInterval) {
  std::mutex mu;
  std::vector<std::string> lines;
  Start({.max_connections = 2,
         .header_timeout_ms = 30'000,
         .shed_log_interval_ms = 500,
         .error_log = [&](absl::string_view line) {
           std::lock_guard<std::mutex> lock(mu);
           lines.emplace_back(line);
         }});
  testing::SlowClients slow(exposer_->port(), 12);  // 10 shed at the cap
  ASSERT_EQ(slow.connected(), 12);
  const Clock::time_point deadline = Clock::now() + milliseconds(3'000);
  while (slow.GivenUpByServer() < 10 && Clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_TRUE(absl::StartsWith(lines[0], "closed 1 connection in"))
        << lines[0];
  }
  std::this_thread::sleep_for(milliseconds(800));
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_TRUE(absl::StartsWith(lines[1], "closed 9 connections in"))
      << lines[1];
  EXPECT_TRUE(absl::StrContains(lines[1], "9 at the cap of 2")) << lines[1];
}

// A collectable whose exposition is far larger than a socket's buffers.
class Huge : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override {
    prometheus::MetricFamily family;
    family.name = "huge";
    family.help = std::string(16 << 20, 'h');
    family.type = prometheus::MetricType::Untyped;
    family.metric.emplace_back();
    return {family};
  }
};

TEST_F(ExposerTest, AClientThatDoesNotReadItsResponseBlocksNoOne) {
  auto huge = std::make_shared<Huge>();
  absl::StatusOr<std::unique_ptr<MetricsExposer>> exposer =
      MetricsExposer::Start("127.0.0.1:0", {huge},
                            ExposerOptions{.write_timeout_ms = 1'000});
  ASSERT_TRUE(exposer.ok()) << exposer.status();
  Connection stalled((*exposer)->port());
  ASSERT_TRUE(stalled.Send(kRequest));  // and never reads
  std::this_thread::sleep_for(milliseconds(200));
  absl::StatusOr<HttpResponse> response =
      HttpGet((*exposer)->port(), "/metrics");
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 200);
  EXPECT_GT(response->body.size(), size_t{16 << 20});
  // The stalled one is cut at its write timeout: it gets less than all.
  std::this_thread::sleep_for(milliseconds(1'500));
  bool closed = false;
  const std::string partial =
      stalled.ReadUntilClosed(milliseconds(5'000), &closed);
  EXPECT_TRUE(closed);
  EXPECT_LT(partial.size(), response->body.size());
}

TEST_F(ExposerTest, ScrapesAreAnsweredWithinASecondNextToThousandsStalled) {
  if (testing::RaiseOpenFileLimit() < 2'200) {
    GTEST_SKIP() << "RLIMIT_NOFILE's hard limit is below 2200";
  }
  testing::SlowClients slow(exposer_->port(), 2'000,
                            {.trickle = milliseconds(100)});
  ASSERT_EQ(slow.connected(), 2'000);
  for (int i = 0; i < 5; ++i) {
    const Clock::time_point start = Clock::now();
    absl::StatusOr<HttpResponse> response =
        HttpGet(exposer_->port(), "/metrics");
    const Clock::duration elapsed = Clock::now() - start;
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->status, 200);
    EXPECT_LT(elapsed, std::chrono::seconds(1)) << "scrape " << i;
    std::this_thread::sleep_for(milliseconds(100));
  }
}

TEST_F(ExposerTest, ABoundPortIsUnavailableToASecondExposer) {
  absl::StatusOr<std::unique_ptr<MetricsExposer>> second =
      MetricsExposer::Start(exposer_->address(), Only(registry_));
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(second.status().message().find(exposer_->address()),
            std::string::npos)
      << second.status();
}

TEST_F(ExposerTest, AStoppedExposerRefusesConnections) {
  const int port = exposer_->port();
  exposer_.reset();
  EXPECT_EQ(HttpGet(port, "/metrics").status().code(),
            absl::StatusCode::kUnavailable);
}

TEST(ExposerOptionsTest, MalformedAddressesAndOptionsAreInvalidArgument) {
  auto registry = std::make_shared<prometheus::Registry>();
  for (const char* address :
       {"", "127.0.0.1", ":9464", "127.0.0.1:", "127.0.0.1:65536",
        "127.0.0.1:x", "127.0.0.1:-1", "[::1", "[::1]9464"}) {
    EXPECT_EQ(MetricsExposer::Start(address, Only(registry)).status().code(),
              absl::StatusCode::kInvalidArgument)
        << address;
  }
  for (const ExposerOptions& options :
       {ExposerOptions{.max_connections = 0},
        ExposerOptions{.header_timeout_ms = 0},
        ExposerOptions{.write_timeout_ms = 0},
        ExposerOptions{.max_request_header_bytes = 0},
        ExposerOptions{.listen_backlog = 0},
        ExposerOptions{.shed_log_interval_ms = 0}}) {
    EXPECT_EQ(MetricsExposer::Start("127.0.0.1:0", Only(registry), options)
                  .status()
                  .code(),
              absl::StatusCode::kInvalidArgument);
  }
}

TEST(ExposerOptionsTest, ResolvesLocalhostAndIpv6Literals) {
  auto registry = std::make_shared<prometheus::Registry>();
  absl::StatusOr<std::unique_ptr<MetricsExposer>> exposer =
      MetricsExposer::Start("localhost:0", Only(registry));
  ASSERT_TRUE(exposer.ok()) << exposer.status();
  EXPECT_GT((*exposer)->port(), 0);
  // IPv6 may be disabled in a container; only check it does not crash and
  // reports an address in brackets when it works.
  absl::StatusOr<std::unique_ptr<MetricsExposer>> v6 =
      MetricsExposer::Start("[::1]:0", Only(registry));
  if (v6.ok()) {
    EXPECT_EQ((*v6)->address().rfind("[::1]:", 0), 0u);
    EXPECT_GT((*v6)->port(), 0);
  }
}

}  // namespace
}  // namespace leasekeeper::metrics
