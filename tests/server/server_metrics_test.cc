// /metrics of a real in-process leasekeeperd (127.0.0.1, port 0, fake
// clock): scraped over HTTP, parsed strictly, and checked after a known
// sequence of operations.
#include <stdlib.h>

#include <chrono>
#include <map>
#include <string>

#include "gtest/gtest.h"
#include "metrics/testing/exposition_parser.h"
#include "metrics/testing/http_get.h"
#include "tests/server/test_support.h"

namespace leasekeeper::testing {
namespace {

using metrics::testing::Exposition;
using metrics::testing::LabelMap;

class ServerMetricsTest : public ServerTest {
 protected:
  void StartWithMetrics(server::ServerConfig config = DefaultConfig()) {
    config.metrics_listen = "127.0.0.1:0";
    Restart(std::move(config));
    ASSERT_GT(server_->metrics_port(), 0);
  }

  // Scrapes /metrics; fails the test unless it is a valid exposition.
  Exposition Scrape() {
    absl::StatusOr<metrics::testing::HttpResponse> response =
        metrics::testing::HttpGet(server_->metrics_port(), "/metrics");
    EXPECT_TRUE(response.ok()) << response.status();
    if (!response.ok()) return {};
    EXPECT_EQ(response->status, 200);
    absl::StatusOr<Exposition> parsed = Exposition::Parse(response->body);
    EXPECT_TRUE(parsed.ok()) << parsed.status() << "\n" << response->body;
    return parsed.ok() ? *parsed : Exposition{};
  }

  static double Value(const Exposition& exposition, const std::string& name,
                      const LabelMap& labels = {}) {
    std::optional<double> value = exposition.Value(name, labels);
    EXPECT_TRUE(value.has_value()) << name;
    return value.value_or(-1);
  }
};

TEST_F(ServerMetricsTest, MetricsAreOffUnlessAsked) {
  EXPECT_EQ(server_->metrics_port(), 0);
  // The registry exists anyway (for tests and a later scrape endpoint).
  EXPECT_TRUE(Exposition::Parse(server_->metrics_registry().Render()).ok());
}

TEST_F(ServerMetricsTest, CountersFollowAKnownSequenceOfOperations) {
  StartWithMetrics();
  // a takes L; b queues behind it; a renews and writes with token 1.
  ASSERT_TRUE(client_->Acquire("a", "L", 1000).response.has_granted());
  ASSERT_TRUE(client_->Acquire("b", "L", 1000).response.has_queued());
  ASSERT_TRUE(client_->Renew("a", "L", 1000).ok());
  ASSERT_TRUE(client_->Write("L", "k", "v1", 1).ok());
  // a releases: b is granted from the queue (token 2) and writes; a's late
  // write with token 1 is refused as stale.
  ASSERT_TRUE(client_->Release("a", "L").ok());
  ASSERT_TRUE(client_->Write("L", "k", "v2", 2).ok());
  EXPECT_EQ(client_->Write("L", "k", "late", 1).code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  // w queues and withdraws.
  ASSERT_TRUE(client_->Acquire("w", "L", 1000).response.has_queued());
  ASSERT_TRUE(client_->Release("w", "L").ok());
  // c's lease on M lapses at 100.
  ASSERT_TRUE(client_->Acquire("c", "M", 100).response.has_granted());
  At(100);
  ASSERT_TRUE(client_->Inspect("M").ok());
  // x and y deadlock; y, the younger, is the victim; x gets B from the queue.
  ASSERT_TRUE(client_->Acquire("x", "A", 10000).response.has_granted());
  ASSERT_TRUE(client_->Acquire("y", "B", 10000).response.has_granted());
  ASSERT_TRUE(client_->Acquire("x", "B", 10000).response.has_queued());
  EXPECT_EQ(client_->Acquire("y", "A", 10000).code(),
            grpc::StatusCode::ABORTED);
  // An operator ends b's lease on L.
  {
    grpc::ClientContext context;
    pb::ForceReleaseRequest request;
    request.set_lock("L");
    request.set_reason("test");
    pb::ForceReleaseResponse response;
    ASSERT_TRUE(
        client_->stub().ForceRelease(&context, request, &response).ok());
    ASSERT_EQ(response.released_size(), 1);
    EXPECT_EQ(response.released(0).client_id(), "b");
    EXPECT_EQ(response.released(0).token(), 2u);
  }

  const Exposition m = Scrape();
  const std::map<std::string, double> expected = {
      {"leasekeeper_queue_grants_total", 2},  // b, then x
      {"leasekeeper_lease_lapses_total", 1},  // c
      {"leasekeeper_renewals_total", 1},
      {"leasekeeper_releases_total", 2},     // a, and b by force
      {"leasekeeper_withdrawals_total", 1},  // w
      {"leasekeeper_deadlock_victims_total", 1},
      {"leasekeeper_stale_writes_refused_total", 1},
      {"leasekeeper_forced_releases_total", 1},
      {"leasekeeper_sessions_lost_total", 0},
      {"leasekeeper_leases_held", 2},  // x holds A and B
      {"leasekeeper_waiters", 0},
      {"leasekeeper_waiting_calls", 0},
      {"leasekeeper_sessions_open", 0},
  };
  for (const auto& [name, value] : expected) {
    EXPECT_EQ(Value(m, name), value) << name;
  }
  EXPECT_EQ(
      Value(m, "leasekeeper_acquisitions_total", {{"outcome", "granted"}}),
      4);  // a, c, x, y
  EXPECT_EQ(Value(m, "leasekeeper_acquisitions_total", {{"outcome", "queued"}}),
            3);  // b, w, x
  EXPECT_EQ(
      Value(m, "leasekeeper_acquisitions_total", {{"outcome", "deadlock"}}), 1);

  // Per-RPC series: 8 Acquire calls, 7 OK and 1 ABORTED, all timed.
  EXPECT_EQ(Value(m, "leasekeeper_rpcs_total",
                  {{"method", "Acquire"}, {"code", "OK"}}),
            7);
  EXPECT_EQ(Value(m, "leasekeeper_rpcs_total",
                  {{"method", "Acquire"}, {"code", "ABORTED"}}),
            1);
  EXPECT_EQ(Value(m, "leasekeeper_rpc_duration_seconds_count",
                  {{"method", "Acquire"}}),
            8);
  EXPECT_EQ(Value(m, "leasekeeper_rpcs_total",
                  {{"method", "Write"}, {"code", "FAILED_PRECONDITION"}}),
            1);
  EXPECT_EQ(Value(m, "leasekeeper_rpcs_total",
                  {{"method", "ForceRelease"}, {"code", "OK"}}),
            1);
  EXPECT_EQ(m.families().at("leasekeeper_rpc_duration_seconds").type,
            "histogram");
  // Lock names and client ids are never labels.
  for (const metrics::testing::Sample& sample : m.samples()) {
    for (const auto& [label, value] : sample.labels) {
      EXPECT_NE(label, "lock") << sample.name;
      EXPECT_NE(label, "client_id") << sample.name;
      EXPECT_NE(value, "L") << sample.name;
      EXPECT_NE(value, "x") << sample.name;
    }
  }
}

TEST_F(ServerMetricsTest, RefusalsAreCountedByCode) {
  StartWithMetrics();
  EXPECT_EQ(client_->Acquire("", "L", 1000).code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(client_->Release("nobody", "L").code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  const Exposition m = Scrape();
  EXPECT_EQ(Value(m, "leasekeeper_rpcs_total",
                  {{"method", "Acquire"}, {"code", "INVALID_ARGUMENT"}}),
            1);
  EXPECT_EQ(Value(m, "leasekeeper_rpcs_total",
                  {{"method", "Release"}, {"code", "FAILED_PRECONDITION"}}),
            1);
  // Refused requests changed nothing and count as no acquisition.
  EXPECT_EQ(
      Value(m, "leasekeeper_acquisitions_total", {{"outcome", "granted"}}), 0);
  EXPECT_EQ(Value(m, "leasekeeper_releases_total"), 0);
}

TEST_F(ServerMetricsTest, LostSessionIsCountedWhenItsGraceRunsOut) {
  StartWithMetrics();
  {
    grpc::ClientContext context;
    auto stream = client_->stub().Session(&context);
    pb::SessionRequest open;
    open.mutable_open()->set_client_id("s");
    ASSERT_TRUE(stream->Write(open));
    pb::SessionResponse opened;
    ASSERT_TRUE(stream->Read(&opened));
    ASSERT_TRUE(opened.has_opened());
    ASSERT_TRUE(client_->Acquire("s", "S", 60'000).response.has_granted());
    EXPECT_EQ(Value(Scrape(), "leasekeeper_sessions_open"), 1);
    context.TryCancel();  // the stream drops without `close`
    stream->Finish().IgnoreError();
  }
  // The grace (2 s) starts when the server notices the drop; wait for that
  // (at tick 0) before moving the clock, or the grace would start later.
  ASSERT_TRUE(Eventually([&] {
    return client_->Status("s").response.session() ==
           pb::SESSION_STATE_GRACE;
  }));
  ASSERT_TRUE(Eventually([&] {
    At(2'000);
    return owner().GetCounters().sessions_lost == 1;
  }));
  const Exposition m = Scrape();
  EXPECT_EQ(Value(m, "leasekeeper_sessions_lost_total"), 1);
  EXPECT_EQ(Value(m, "leasekeeper_sessions_open"), 0);
  EXPECT_EQ(Value(m, "leasekeeper_releases_total"), 1);  // S, by the loss
  EXPECT_EQ(Value(m, "leasekeeper_leases_held"), 0);
}

TEST_F(ServerMetricsTest, StorageSeriesAppearWithADataDir) {
  std::string dir = ::testing::TempDir() + "/leasekeeper-metrics-XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  server::ServerConfig config = DefaultConfig();
  config.durability.data_dir = dir;
  StartWithMetrics(config);
  ASSERT_TRUE(client_->Acquire("a", "L", 1000).response.has_granted());
  ASSERT_TRUE(client_->Write("L", "k", "v", 1).ok());
  ASSERT_TRUE(client_->Release("a", "L").ok());
  const Exposition m = Scrape();
  EXPECT_GE(Value(m, "leasekeeper_log_records_total"), 3);
  EXPECT_GE(Value(m, "leasekeeper_fsyncs_total"), 1);
  EXPECT_GE(Value(m, "leasekeeper_fsync_duration_seconds_count"), 1);
  EXPECT_GE(Value(m, "leasekeeper_fsync_batch_records_count"), 1);
  EXPECT_EQ(Value(m, "leasekeeper_storage_healthy"), 1);
  EXPECT_EQ(m.families().at("leasekeeper_fsync_duration_seconds").type,
            "histogram");
  Restart(DefaultConfig());  // release the data dir before removing it
  std::system(("rm -rf '" + dir + "'").c_str());
}

TEST_F(ServerMetricsTest, AnUnbindableMetricsAddressFailsStart) {
  server::ServerConfig config = DefaultConfig();
  config.metrics_listen = "127.0.0.1:0";
  Restart(config);
  const int taken = server_->metrics_port();
  config.metrics_listen = "127.0.0.1:" + std::to_string(taken);
  server::FakeClock clock(0);
  server::LeasekeeperServer second(config, clock);
  absl::Status started = second.Start();
  EXPECT_EQ(started.code(), absl::StatusCode::kUnavailable) << started;
}

}  // namespace
}  // namespace leasekeeper::testing
