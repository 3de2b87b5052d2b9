#include "metrics/exposer.h"

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
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
  EXPECT_EQ(response->headers["content-type"], "text/plain; charset=utf-8");
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

TEST_F(ExposerTest, OnlyGetUnderMetricsIsAnswered) {
  for (const char* path : {"/", "/other"}) {
    absl::StatusOr<HttpResponse> response = HttpGet(exposer_->port(), path);
    ASSERT_TRUE(response.ok()) << path;
    EXPECT_EQ(response->status, 404) << path;
  }
  for (const char* method : {"HEAD", "POST", "PUT", "DELETE"}) {
    absl::StatusOr<HttpResponse> response =
        HttpRequest(exposer_->port(), method, "/metrics");
    ASSERT_TRUE(response.ok()) << method;
    EXPECT_GE(response->status, 400) << method;  // 404 or 405
    EXPECT_LT(response->status, 500) << method;
    EXPECT_EQ(response->body.find("leasekeeper_releases_total"),
              std::string::npos)
        << method;
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

// Fewer stalled connections than workers: the scrape finds a free worker.
TEST_F(ExposerTest, StalledConnectionsBelowTheWorkerCountDoNotDelayScrapes) {
  testing::SlowClients slow(exposer_->port(), 40);
  ASSERT_EQ(slow.connected(), 40);
  const Clock::time_point start = Clock::now();
  absl::StatusOr<HttpResponse> response = HttpGet(exposer_->port(), "/metrics");
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 200);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
}

// More stalled connections than workers: each round of workers is freed by
// the request timeout, so a scrape queued behind 40 stalled connections on
// 4 workers waits about 40 / 4 rounds of 300 ms, not until the clients go.
TEST_F(ExposerTest, ABurstOfStalledConnectionsDelaysScrapesOnlyByTimeouts) {
  Start({.num_threads = 4, .request_timeout_ms = 300});
  testing::SlowClients slow(exposer_->port(), 40);
  ASSERT_EQ(slow.connected(), 40);
  const Clock::time_point start = Clock::now();
  absl::StatusOr<HttpResponse> response = HttpGet(exposer_->port(), "/metrics");
  const Clock::duration elapsed = Clock::now() - start;
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 200);
  // 11 rounds * 300 ms = 3.3 s at most, with room for a loaded machine.
  EXPECT_LT(elapsed, std::chrono::seconds(6));
  // Each stalled connection is given up within the request timeout of being
  // picked up: the last round by one more timeout.
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(3);
  while (slow.GivenUpByServer() < 40 && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(slow.GivenUpByServer(), 40);
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
       {ExposerOptions{.num_threads = 0}, ExposerOptions{.request_timeout_ms = 0},
        ExposerOptions{.listen_backlog = 0}}) {
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
