// A real leasekeeperd flooded on each of its three ports (gRPC, health,
// /metrics) with 2,000 connections, half of them trickling a request byte
// by byte and half silent: new clients of every port are still answered
// within 1 s, and the daemon's threads and memory stay bounded. Live
// (real time, 127.0.0.1 ports picked free).
#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "gtest/gtest.h"
#include "harness/local_cluster.h"
#include "metrics/testing/http_get.h"
#include "metrics/testing/slow_clients.h"
#include "tests/server/test_support.h"

namespace leasekeeper::testing {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr int kFlood = 2'000;
constexpr milliseconds kBound(1'000);
// What the flood may add: gRPC's event engine may start a few more
// threads under load, but never one per connection; buffers of 2,000
// connections in the kernel are not the daemon's, its own per-connection
// state is a few KiB.
constexpr int kMaxExtraThreads = 16;
constexpr int64_t kMaxExtraRssKib = 96 * 1024;

enum class Port { kGrpc, kHealth, kMetrics };

std::string PortName(const ::testing::TestParamInfo<Port>& info) {
  switch (info.param) {
    case Port::kGrpc:
      return "Grpc";
    case Port::kHealth:
      return "Health";
    case Port::kMetrics:
      return "Metrics";
  }
  return "Unknown";
}

class FloodTest : public ::testing::TestWithParam<Port> {
 protected:
  void SetUp() override {
    if (metrics::testing::RaiseOpenFileLimit() < kFlood + 200) {
      GTEST_SKIP() << "RLIMIT_NOFILE's hard limit is below " << kFlood + 200
                   << ": cannot open the flood";
    }
    health_port_ = FreeLoopbackPort();
    metrics_port_ = FreeLoopbackPort();
    ASSERT_GT(health_port_, 0);
    ASSERT_GT(metrics_port_, 0);
    daemon_ = StartDaemon(
        {absl::StrCat("--health-listen=127.0.0.1:", health_port_),
         absl::StrCat("--metrics-listen=127.0.0.1:", metrics_port_)});
    ASSERT_FALSE(daemon_.address.empty());
    grpc_port_ =
        std::stoi(daemon_.address.substr(daemon_.address.rfind(':') + 1));
  }

  int FloodedPort() const {
    switch (GetParam()) {
      case Port::kGrpc:
        return grpc_port_;
      case Port::kHealth:
        return health_port_;
      case Port::kMetrics:
        return metrics_port_;
    }
    return 0;
  }

  // What the odd-numbered connections trickle: an HTTP/1.1 head that never
  // ends for /metrics, the HTTP/2 client preface byte by byte for gRPC.
  metrics::testing::SlowClientsOptions Trickle() const {
    metrics::testing::SlowClientsOptions options;
    options.trickle = milliseconds(100);
    if (GetParam() != Port::kMetrics) {
      options.start = "";
      options.trickle_bytes = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    }
    return options;
  }

  // Each check is a new client: a fresh connection, timed from its start.
  Clock::duration TimeScrape() {
    const Clock::time_point start = Clock::now();
    absl::StatusOr<metrics::testing::HttpResponse> response =
        metrics::testing::HttpGet(metrics_port_, "/metrics");
    const Clock::duration elapsed = Clock::now() - start;
    EXPECT_TRUE(response.ok()) << response.status();
    if (response.ok()) {
      EXPECT_EQ(response->status, 200);
    }
    return elapsed;
  }

  Clock::duration TimeHealthCheck() {
    const Clock::time_point start = Clock::now();
    auto health = grpc::health::v1::Health::NewStub(
        NewChannel(absl::StrCat("127.0.0.1:", health_port_)));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(10));
    grpc::health::v1::HealthCheckResponse response;
    const grpc::Status status = health->Check(
        &context, grpc::health::v1::HealthCheckRequest(), &response);
    const Clock::duration elapsed = Clock::now() - start;
    EXPECT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.status(),
              grpc::health::v1::HealthCheckResponse::SERVING);
    return elapsed;
  }

  Clock::duration TimeStatusCall() {
    const Clock::time_point start = Clock::now();
    TestClient client(daemon_.address);
    const Result<pb::StatusResponse> result = client.Status("flood-check");
    const Clock::duration elapsed = Clock::now() - start;
    EXPECT_TRUE(result.ok()) << result.status.error_message();
    return elapsed;
  }

  Daemon daemon_;
  int grpc_port_ = 0;
  int health_port_ = 0;
  int metrics_port_ = 0;
};

TEST_P(FloodTest, NewClientsOfEveryPortAreServedWithinASecond) {
  // Warm up: every service answered once, then the baseline.
  TimeScrape();
  TimeHealthCheck();
  TimeStatusCall();
  const pid_t pid = daemon_.process->pid();
  const int64_t threads_before = ProcStatusField(pid, "Threads");
  const int64_t rss_before = ProcStatusField(pid, "VmRSS");
  ASSERT_GT(threads_before, 0);

  metrics::testing::SlowClients flood(FloodedPort(), kFlood, Trickle());
  ASSERT_EQ(flood.connected(), kFlood);
  // Let the daemon accept them all and the trickle run a while.
  std::this_thread::sleep_for(milliseconds(500));

  Clock::duration worst_scrape{}, worst_health{}, worst_status{};
  for (int round = 0; round < 3; ++round) {
    const Clock::duration scrape = TimeScrape();
    const Clock::duration health = TimeHealthCheck();
    const Clock::duration status = TimeStatusCall();
    EXPECT_LT(scrape, kBound) << "scrape, round " << round;
    EXPECT_LT(health, kBound) << "health check, round " << round;
    EXPECT_LT(status, kBound) << "Status call, round " << round;
    worst_scrape = std::max(worst_scrape, scrape);
    worst_health = std::max(worst_health, health);
    worst_status = std::max(worst_status, status);
    std::this_thread::sleep_for(milliseconds(300));
  }
  const int64_t threads_during = ProcStatusField(pid, "Threads");
  const int64_t rss_during = ProcStatusField(pid, "VmRSS");
  EXPECT_LE(threads_during, threads_before + kMaxExtraThreads)
      << "threads " << threads_before << " -> " << threads_during;
  EXPECT_LE(rss_during, rss_before + kMaxExtraRssKib)
      << "VmRSS KiB " << rss_before << " -> " << rss_during;
  auto ms = [](Clock::duration d) {
    return std::chrono::duration_cast<milliseconds>(d).count();
  };
  std::cerr << "flood on " << PortName({GetParam(), 0})
            << ": slowest of 3 scrape " << ms(worst_scrape) << " ms, health "
            << ms(worst_health) << " ms, Status " << ms(worst_status)
            << " ms; threads " << threads_before << " -> " << threads_during
            << ", VmRSS " << rss_before << " -> " << rss_during << " KiB\n";
}

INSTANTIATE_TEST_SUITE_P(EachPort, FloodTest,
                         ::testing::Values(Port::kGrpc, Port::kHealth,
                                           Port::kMetrics),
                         PortName);

}  // namespace
}  // namespace leasekeeper::testing
