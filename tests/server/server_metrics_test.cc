// /metrics of a real in-process leasekeeperd (127.0.0.1, port 0, fake
// clock): scraped over HTTP, parsed strictly, and checked after a known
// sequence of operations.
#include <stdlib.h>

#include <chrono>
#include <iterator>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "metrics/testing/exposition_parser.h"
#include "metrics/testing/http_get.h"
#include "metrics/testing/slow_clients.h"
#include "server/rpc_metrics.h"
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
  // The series exist anyway (for tests and a later scrape endpoint).
  absl::StatusOr<Exposition> rendered =
      Exposition::Parse(server_->RenderMetrics());
  ASSERT_TRUE(rendered.ok()) << rendered.status();
  EXPECT_EQ(rendered->Value("leasekeeper_leases_held"), 0);
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
      {"leasekeeper_watchers", 0},
      {"leasekeeper_watchers_cut_total", 0},
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

TEST_F(ServerMetricsTest, OpenWatchStreamsAreCountedUntilTheyEnd) {
  StartWithMetrics();
  grpc::ClientContext context;
  pb::WatchRequest request;
  request.set_lock("W");
  auto stream = client_->stub().Watch(&context, request);
  pb::WatchResponse synced;
  ASSERT_TRUE(stream->Read(&synced));
  ASSERT_TRUE(synced.has_synced());
  const Exposition open = Scrape();
  EXPECT_EQ(Value(open, "leasekeeper_watchers"), 1);
  EXPECT_EQ(Value(open, "leasekeeper_watchers_cut_total"), 0);
  context.TryCancel();
  pb::WatchResponse rest;
  while (stream->Read(&rest)) {
  }
  stream->Finish().IgnoreError();
  EXPECT_TRUE(Eventually([&] {
    return owner().watch_hub().GetStats().watchers == 0;
  }));
  EXPECT_EQ(Value(Scrape(), "leasekeeper_watchers"), 0);
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
    return owner().GetStats().counters.sessions_lost == 1;
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

TEST_F(ServerMetricsTest, AcquireWaitCountsGrantedCallsByTheirTimeInTheQueue) {
  StartWithMetrics();
  // a and c are granted at once (a wait of 0); b waits parked from tick 0
  // until a releases at 700.
  ASSERT_TRUE(client_->Acquire("a", "L", 60'000).response.has_granted());
  std::unique_ptr<AsyncAcquire> b =
      client_->StartAcquire(AcquireRequest("b", "L", 60'000, 10'000));
  ASSERT_TRUE(ParkedCallsAre(1));
  At(700);
  ASSERT_TRUE(client_->Acquire("c", "M", 60'000).response.has_granted());
  ASSERT_TRUE(client_->Release("a", "L").ok());
  Result<pb::AcquireResponse> granted = b->Get();
  ASSERT_TRUE(granted.ok()) << granted.status.error_message();
  ASSERT_EQ(granted.response.granted().waited_ms(), 700);
  // d asks without waiting: it is answered "queued", so no granted call
  // waited, even once the queue grants it.
  ASSERT_TRUE(client_->Acquire("d", "L", 60'000).response.has_queued());
  ASSERT_TRUE(client_->Release("b", "L").ok());

  const Exposition m = Scrape();
  EXPECT_EQ(Value(m, "leasekeeper_acquire_wait_seconds_count"), 3);
  EXPECT_DOUBLE_EQ(Value(m, "leasekeeper_acquire_wait_seconds_sum"), 0.7);
  EXPECT_EQ(m.families().at("leasekeeper_acquire_wait_seconds").type,
            "histogram");
  for (const auto& [bound, count] :
       m.Buckets("leasekeeper_acquire_wait_seconds")) {
    EXPECT_EQ(count, bound < 0.7 ? 2 : 3) << "le=" << bound;
  }
  // The RPC latency still counts every Acquire call, waits included.
  EXPECT_EQ(Value(m, "leasekeeper_rpc_duration_seconds_count",
                  {{"method", "Acquire"}}),
            4);
}

// Deletes count beside writes: accepted ones by op, stale ones among the
// stale writes; the store's size gauges follow both.
TEST_F(ServerMetricsTest, DeletesCountBesideWritesAndFreeTheStoreGauges) {
  StartWithMetrics();
  ASSERT_TRUE(client_->Acquire("r1", "L", 60'000, pb::LOCK_MODE_SHARED).ok());
  ASSERT_TRUE(client_->Acquire("r2", "L", 60'000, pb::LOCK_MODE_SHARED).ok());
  ASSERT_TRUE(client_->Write(WriteRequest("L", "k1", "v", 2, "r2", true)).ok());
  ASSERT_TRUE(client_->Write(WriteRequest("L", "k2", "vv", 2, "r2", true)).ok());
  Exposition m = Scrape();
  EXPECT_EQ(Value(m, "leasekeeper_store_keys"), 2);
  EXPECT_EQ(Value(m, "leasekeeper_store_bytes"), 1 + 2 + 1 + 2 + 2);
  ASSERT_TRUE(client_->Delete(DeleteRequest("L", "k1", 2, "r2")).ok());
  ASSERT_TRUE(client_->Delete(DeleteRequest("L", "absent", 2, "r2")).ok());
  EXPECT_EQ(client_->Delete(DeleteRequest("L", "k2", 1, "r1")).reason,
            "STALE_TOKEN");
  m = Scrape();
  EXPECT_EQ(
      Value(m, "leasekeeper_store_mutations_total", {{"op", "write"}}), 2);
  EXPECT_EQ(
      Value(m, "leasekeeper_store_mutations_total", {{"op", "delete"}}), 2);
  EXPECT_EQ(Value(m, "leasekeeper_stale_writes_refused_total"), 1);
  EXPECT_EQ(Value(m, "leasekeeper_store_keys"), 1);
  EXPECT_EQ(Value(m, "leasekeeper_store_bytes"), 1 + 2 + 2);
  EXPECT_EQ(Value(m, "leasekeeper_rpcs_total",
                  {{"method", "Delete"}, {"code", "OK"}}),
            2);
  EXPECT_EQ(Value(m, "leasekeeper_rpcs_total",
                  {{"method", "Delete"}, {"code", "FAILED_PRECONDITION"}}),
            1);
}

class ServerLimitMetricsTest : public ServerMetricsTest {
 protected:
  void SetUp() override {
    ServerMetricsTest::SetUp();
    server::ServerConfig config = DefaultConfig();
    config.limits.max_client_id_bytes = 16;
    config.limits.max_lock_name_bytes = 16;
    config.limits.max_key_bytes = 8;
    config.limits.max_value_bytes = 1024;
    config.limits.max_label_bytes = 8;
    config.limits.max_request_id_bytes = 8;
    config.limits.max_waiters_per_lock = 1;
    config.limits.max_locks_per_client = 1;
    config.limits.max_sessions = 1;
    config.limits.max_keys_per_lock = 1;
    config.limits.max_store_bytes = 1000;
    StartWithMetrics(config);
  }

  // Opens a session for `client` on `context`; the stream, or null if the
  // server refused it (then `refusal` is its status).
  std::unique_ptr<grpc::ClientReaderWriter<pb::SessionRequest,
                                           pb::SessionResponse>>
  OpenSession(grpc::ClientContext& context, const std::string& client,
              grpc::Status& refusal) {
    auto stream = client_->stub().Session(&context);
    pb::SessionRequest open;
    open.mutable_open()->set_client_id(client);
    // A stream counts against --max-sessions from its start, so a refused
    // one may be closed before this write goes out: the answer decides.
    stream->Write(open);
    pb::SessionResponse opened;
    if (stream->Read(&opened) && opened.has_opened()) return stream;
    refusal = stream->Finish();
    return nullptr;
  }

  static double Refusals(const Exposition& m, const std::string& limit) {
    return Value(m, "leasekeeper_limit_refusals_total", {{"limit", limit}});
  }
};

TEST_F(ServerLimitMetricsTest, EveryLimitIsExposedAtZeroFromTheStart) {
  const Exposition m = Scrape();
  for (const char* limit : server::kLimitFlagNames) {
    EXPECT_EQ(Refusals(m, limit), 0) << limit;
  }
}

TEST_F(ServerLimitMetricsTest, EveryRefusalOfEveryLimitIsCountedUnderItsFlag) {
  const std::string too_long(17, 'x');
  // Sizes checked at the gRPC edge.
  EXPECT_EQ(client_->Acquire(too_long, "L", 1000).code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(client_->Acquire("a", too_long, 1000).code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(client_->Write("L", "k123456789", "v", 1).code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(client_->Write("L", "k", std::string(1025, 'v'), 1).code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  pb::AcquireRequest labelled = AcquireRequest("a", "L", 1000);
  labelled.set_holder_label("label-too-long");
  EXPECT_EQ(client_->Acquire(labelled).code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  pb::AcquireRequest with_id = AcquireRequest("a", "L", 1000);
  with_id.set_request_id("request-id-too-long");
  EXPECT_EQ(client_->Acquire(with_id).code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  {
    grpc::ClientContext context;
    pb::ForceReleaseRequest request;
    request.set_lock("L");
    request.set_reason("reason-too-long");
    pb::ForceReleaseResponse response;
    EXPECT_EQ(
        client_->stub().ForceRelease(&context, request, &response).error_code(),
        grpc::StatusCode::RESOURCE_EXHAUSTED);
  }
  // State limits, checked in the core's owner.
  ASSERT_TRUE(client_->Acquire("a", "L", 60'000).response.has_granted());
  EXPECT_EQ(client_->Acquire("a", "M", 60'000).code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);  // max-locks-per-client
  EXPECT_EQ(client_->Write("L", "k1", std::string(1000, 'v'), 1).code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);  // max-store-bytes
  ASSERT_TRUE(client_->Write("L", "k1", "v", 1).ok());
  EXPECT_EQ(client_->Write("L", "k2", "v", 1).code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);  // max-keys-per-lock
  ASSERT_TRUE(client_->Acquire("w1", "L", 60'000).response.has_queued());
  EXPECT_EQ(client_->Acquire("w2", "L", 60'000).code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);  // max-waiters-per-lock
  grpc::ClientContext first_context;
  grpc::Status refusal;
  auto first = OpenSession(first_context, "s1", refusal);
  ASSERT_NE(first, nullptr);
  grpc::ClientContext second_context;
  EXPECT_EQ(OpenSession(second_context, "s2", refusal), nullptr);
  EXPECT_EQ(refusal.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  // A refusal answering one call inside a Session stream.
  pb::SessionRequest call;
  call.mutable_call()->set_call_id(7);
  *call.mutable_call()->mutable_acquire() = AcquireRequest("s1", too_long, 1000);
  ASSERT_TRUE(first->Write(call));
  pb::SessionResponse answer;
  ASSERT_TRUE(first->Read(&answer));
  ASSERT_TRUE(answer.has_call_result());
  EXPECT_EQ(answer.call_result().error().code(),
            static_cast<int>(grpc::StatusCode::RESOURCE_EXHAUSTED));
  first_context.TryCancel();
  first->Finish().IgnoreError();

  const Exposition m = Scrape();
  const std::map<std::string, double> expected = {
      {"max-client-id-bytes", 1},  {"max-lock-name-bytes", 2},
      {"max-key-bytes", 1},        {"max-value-bytes", 1},
      {"max-label-bytes", 2},      {"max-request-id-bytes", 1},
      {"max-waiters-per-lock", 1}, {"max-sessions", 1},
      {"max-locks-per-client", 1}, {"max-store-bytes", 1},
      {"max-keys-per-lock", 1},
  };
  for (const auto& [limit, count] : expected) {
    EXPECT_EQ(Refusals(m, limit), count) << limit;
  }
  // Every limit of the list is covered above.
  EXPECT_EQ(expected.size(), std::size(server::kLimitFlagNames));
}

TEST_F(ServerMetricsTest, BuildInfoNamesTheVersionAndCommit) {
  StartWithMetrics();
  const Exposition m = Scrape();
  int series = 0;
  for (const metrics::testing::Sample& sample : m.samples()) {
    if (sample.name != "leasekeeper_build_info") continue;
    ++series;
    EXPECT_EQ(sample.value, 1);
    ASSERT_EQ(sample.labels.size(), 2u);
    const std::string& version = sample.labels.at("version");
    const std::string& commit = sample.labels.at("commit");
    EXPECT_TRUE(std::regex_match(version, std::regex(R"(\d+\.\d+\.\d+)")))
        << version;
    EXPECT_TRUE(commit == "unknown" ||
                std::regex_match(commit, std::regex("[0-9a-f]{7,40}(-dirty)?")))
        << commit;
  }
  EXPECT_EQ(series, 1);
}

TEST_F(ServerMetricsTest, ProcessSeriesDescribeTheDaemon) {
  StartWithMetrics();
  const Exposition m = Scrape();
  EXPECT_GT(Value(m, "process_resident_memory_bytes"), 0);
  EXPECT_GE(Value(m, "process_virtual_memory_bytes"),
            Value(m, "process_resident_memory_bytes"));
  EXPECT_GT(Value(m, "process_open_fds"), 3);  // at least two listeners
  EXPECT_GT(Value(m, "process_max_fds"), 0);
  EXPECT_GE(Value(m, "process_cpu_seconds_total"), 0);
  const double now = absl::ToUnixSeconds(absl::Now());
  EXPECT_LE(Value(m, "process_start_time_seconds"), now + 1);
  EXPECT_GT(Value(m, "process_start_time_seconds"), now - 3600);
}

// Lock names, client ids and other per-request data never become labels:
// the series are the same whatever the server holds.
TEST_F(ServerMetricsTest, SeriesDoNotDependOnLocksOrClients) {
  StartWithMetrics();
  auto series = [](const Exposition& m) {
    std::set<std::string> names;
    for (const metrics::testing::Sample& sample : m.samples()) {
      std::string key = sample.name;
      for (const auto& [label, value] : sample.labels) {
        if (label != "quantile") absl::StrAppend(&key, ",", label, "=", value);
      }
      names.insert(key);
    }
    return names;
  };
  const std::set<std::string> before = series(Scrape());
  for (int i = 0; i < 20; ++i) {
    const std::string client = absl::StrCat("client-", i);
    const std::string lock = absl::StrCat("lock-", i);
    pb::AcquireRequest request = AcquireRequest(client, lock, 60'000);
    request.set_holder_label(absl::StrCat("label-", i));
    request.set_request_id(absl::StrCat("request-", i));
    ASSERT_TRUE(client_->Acquire(request).response.has_granted());
    ASSERT_TRUE(client_->Write(lock, "k", "v", 1).ok());
  }
  const Exposition m = Scrape();
  EXPECT_EQ(series(m), before);
  static constexpr const char* kForbidden[] = {
      "lock",    "lock_name", "name",       "key",        "client",
      "client_id", "session", "session_id", "request_id", "holder",
      "holder_label", "identity", "peer"};
  for (const metrics::testing::Sample& sample : m.samples()) {
    for (const auto& [label, value] : sample.labels) {
      for (const char* forbidden : kForbidden) {
        EXPECT_NE(label, forbidden) << sample.name;
      }
      for (const char* prefix : {"lock-", "client-", "label-", "request-"}) {
        EXPECT_FALSE(absl::StartsWith(value, prefix)) << sample.name;
      }
    }
  }
}

// Connections that never finish their request (stalled scrapers, port
// scanners, peers that vanished mid-request) hold no thread: a scrape is
// answered at once next to them.
TEST_F(ServerMetricsTest, ScrapesAreAnsweredWhileFortySlowClientsStall) {
  StartWithMetrics();
  metrics::testing::SlowClients slow(server_->metrics_port(), 40);
  ASSERT_EQ(slow.connected(), 40);
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<metrics::testing::HttpResponse> response =
      metrics::testing::HttpGet(server_->metrics_port(), "/metrics");
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 200);
  EXPECT_TRUE(Exposition::Parse(response->body).ok());
  // Well under the 2 s header timeout that closes the stalled ones.
  EXPECT_LT(elapsed, std::chrono::seconds(2));
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
