#include "metrics/registry.h"

#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "metrics/testing/exposition_parser.h"

namespace leasekeeper::metrics {
namespace {

using testing::Exposition;

TEST(RegistryTest, RendersHelpTypeAndSeriesInRegistrationOrder) {
  Registry registry;
  Counter* granted =
      *registry.AddCounter("leasekeeper_acquisitions_total",
                           "Acquire outcomes.", {{"outcome", "granted"}});
  Counter* queued =
      *registry.AddCounter("leasekeeper_acquisitions_total",
                           "Acquire outcomes.", {{"outcome", "queued"}});
  Gauge* held = *registry.AddGauge("leasekeeper_locks_held", "Locks held.");
  granted->Increment(3);
  queued->Increment();
  held->Set(2);
  EXPECT_EQ(registry.Render(),
            "# HELP leasekeeper_acquisitions_total Acquire outcomes.\n"
            "# TYPE leasekeeper_acquisitions_total counter\n"
            "leasekeeper_acquisitions_total{outcome=\"granted\"} 3\n"
            "leasekeeper_acquisitions_total{outcome=\"queued\"} 1\n"
            "# HELP leasekeeper_locks_held Locks held.\n"
            "# TYPE leasekeeper_locks_held gauge\n"
            "leasekeeper_locks_held 2\n");
}

TEST(RegistryTest, FamilySeriesStayTogetherWhenRegisteredInterleaved) {
  Registry registry;
  ASSERT_TRUE(registry.AddCounter("a_total", "A.", {{"x", "1"}}).ok());
  ASSERT_TRUE(registry.AddGauge("b", "B.").ok());
  ASSERT_TRUE(registry.AddCounter("a_total", "A.", {{"x", "2"}}).ok());
  EXPECT_EQ(registry.Render(),
            "# HELP a_total A.\n# TYPE a_total counter\n"
            "a_total{x=\"1\"} 0\na_total{x=\"2\"} 0\n"
            "# HELP b B.\n# TYPE b gauge\nb 0\n");
}

TEST(RegistryTest, HistogramRendersCumulativeBucketsSumAndCount) {
  Registry registry;
  Histogram* latency =
      *registry.AddHistogram("leasekeeper_rpc_duration_seconds", "RPC latency.",
                             {0.25, 0.5, 1}, {{"method", "Acquire"}});
  latency->Observe(0.125);
  latency->Observe(0.25);  // on the bound: le is inclusive
  latency->Observe(0.75);
  latency->Observe(3);
  EXPECT_EQ(
      registry.Render(),
      "# HELP leasekeeper_rpc_duration_seconds RPC latency.\n"
      "# TYPE leasekeeper_rpc_duration_seconds histogram\n"
      "leasekeeper_rpc_duration_seconds_bucket{method=\"Acquire\",le=\"0.25\"} "
      "2\n"
      "leasekeeper_rpc_duration_seconds_bucket{method=\"Acquire\",le=\"0.5\"} "
      "2\n"
      "leasekeeper_rpc_duration_seconds_bucket{method=\"Acquire\",le=\"1\"} 3\n"
      "leasekeeper_rpc_duration_seconds_bucket{method=\"Acquire\",le=\"+Inf\"} "
      "4\n"
      "leasekeeper_rpc_duration_seconds_sum{method=\"Acquire\"} 4.125\n"
      "leasekeeper_rpc_duration_seconds_count{method=\"Acquire\"} 4\n");
  absl::StatusOr<Exposition> parsed = Exposition::Parse(registry.Render());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->families().at("leasekeeper_rpc_duration_seconds").type,
            "histogram");
}

TEST(RegistryTest, CounterNamesMustEndInTotal) {
  Registry registry;
  EXPECT_EQ(registry.AddCounter("leasekeeper_grants", "x").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(registry.AddCounter("leasekeeper_grants_total", "x").ok());
}

TEST(RegistryTest, ReservedSuffixesAndBadNamesAreRefused) {
  Registry registry;
  for (const char* name : {"g_total", "g_bucket", "g_sum", "g_count", "",
                           "9starts_with_digit", "has-dash", "has space"}) {
    EXPECT_EQ(registry.AddGauge(name, "x").status().code(),
              absl::StatusCode::kInvalidArgument)
        << name;
  }
  EXPECT_EQ(registry.AddHistogram("h_count", "x", {1}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(registry.AddGauge("ns:level_seconds", "x").ok());
  EXPECT_EQ(registry.Render().find("g_total"), std::string::npos);
}

TEST(RegistryTest, LockNamesAndClientIdsAreNeverLabels) {
  Registry registry;
  for (const char* label : kForbiddenLabelNames) {
    absl::StatusOr<Counter*> counter =
        registry.AddCounter("x_total", "x", {{label, "v"}});
    EXPECT_EQ(counter.status().code(), absl::StatusCode::kInvalidArgument)
        << label;
    EXPECT_NE(counter.status().message().find("never labels"),
              std::string::npos);
  }
  EXPECT_EQ(registry.Render(), "");
}

TEST(RegistryTest, BadLabelNamesAreRefused) {
  Registry registry;
  const metrics::Labels cases[] = {{{"__reserved", "v"}},
                                   {{"has-dash", "v"}},
                                   {{"", "v"}},
                                   {{"a", "1"}, {"a", "2"}}};
  for (const Labels& labels : cases) {
    EXPECT_EQ(registry.AddCounter("x_total", "x", labels).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(registry.AddHistogram("h_seconds", "x", {1}, {{"le", "1"}})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(RegistryTest, SameSeriesTwiceIsAlreadyExistsAndRegistersNothing) {
  Registry registry;
  ASSERT_TRUE(registry.AddCounter("x_total", "x", {{"a", "1"}}).ok());
  EXPECT_EQ(registry.AddCounter("x_total", "x", {{"a", "1"}}).status().code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(registry.Render(),
            "# HELP x_total x\n# TYPE x_total counter\nx_total{a=\"1\"} 0\n");
}

TEST(RegistryTest, FamilyMembersMustAgree) {
  Registry registry;
  ASSERT_TRUE(registry.AddCounter("x_total", "x", {{"a", "1"}}).ok());
  // Different help, different label names, different type.
  EXPECT_EQ(registry.AddCounter("x_total", "y", {{"a", "2"}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.AddCounter("x_total", "x", {{"b", "2"}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(registry.AddHistogram("h", "h", {1, 2}, {{"a", "1"}}).ok());
  EXPECT_EQ(
      registry.AddHistogram("h", "h", {1, 3}, {{"a", "2"}}).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.AddGauge("h", "h", {{"a", "2"}}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(RegistryTest, LabelValuesAndHelpAreEscaped) {
  Registry registry;
  ASSERT_TRUE(registry
                  .AddCounter("x_total", "line one\nback\\slash \"quoted\"",
                              {{"v", "a\"b\\c\nd"}})
                  .ok());
  const std::string text = registry.Render();
  EXPECT_EQ(text,
            "# HELP x_total line one\\nback\\\\slash \"quoted\"\n"
            "# TYPE x_total counter\n"
            "x_total{v=\"a\\\"b\\\\c\\nd\"} 0\n");
  absl::StatusOr<Exposition> parsed = Exposition::Parse(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->Value("x_total", {{"v", "a\"b\\c\nd"}}), 0);
}

TEST(RegistryTest, CallbackGaugeIsReadAtEachRender) {
  Registry registry;
  double level = 1.5;
  ASSERT_TRUE(
      registry.AddCallbackGauge("x_ratio", "x", [&level] { return level; })
          .ok());
  EXPECT_NE(registry.Render().find("x_ratio 1.5\n"), std::string::npos);
  level = 7;
  EXPECT_NE(registry.Render().find("x_ratio 7\n"), std::string::npos);
  EXPECT_EQ(registry.AddCallbackGauge("y", "y", nullptr).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(RegistryTest, CallbackCounterAndHistogramAreReadAtEachRender) {
  Registry registry;
  uint64_t fsyncs = 3;
  ASSERT_TRUE(registry
                  .AddCallbackCounter("x_fsyncs_total", "Fsyncs.",
                                      [&fsyncs] { return fsyncs; })
                  .ok());
  Histogram::Snapshot batches{{1, 4, 5}, 5, 12};
  ASSERT_TRUE(registry
                  .AddCallbackHistogram("x_batch_records", "Batch sizes.",
                                        {1, 8}, [&batches] { return batches; })
                  .ok());
  EXPECT_EQ(registry.Render(),
            "# HELP x_fsyncs_total Fsyncs.\n"
            "# TYPE x_fsyncs_total counter\n"
            "x_fsyncs_total 3\n"
            "# HELP x_batch_records Batch sizes.\n"
            "# TYPE x_batch_records histogram\n"
            "x_batch_records_bucket{le=\"1\"} 1\n"
            "x_batch_records_bucket{le=\"8\"} 4\n"
            "x_batch_records_bucket{le=\"+Inf\"} 5\n"
            "x_batch_records_sum 12\n"
            "x_batch_records_count 5\n");
  fsyncs = 4;
  batches = {{2, 5, 6}, 6, 13};
  absl::StatusOr<Exposition> parsed = Exposition::Parse(registry.Render());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->Value("x_fsyncs_total"), 4);
  EXPECT_EQ(parsed->Value("x_batch_records_count"), 6);
  // A snapshot of the wrong size renders no series, and stays parseable.
  batches = {{1}, 1, 1};
  parsed = Exposition::Parse(registry.Render());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_FALSE(parsed->Value("x_batch_records_count").has_value());
  EXPECT_EQ(registry.AddCallbackCounter("y_total", "y", nullptr).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.AddCallbackCounter("y", "y", [] { return 0; }).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(registry
                .AddCallbackHistogram("z", "z", {2, 1},
                                      [] { return Histogram::Snapshot{}; })
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(RegistryTest, NegativeGaugesAndSpecialValuesRender) {
  Registry registry;
  Gauge* gauge = *registry.AddGauge("g", "g");
  gauge->Add(-5);
  ASSERT_TRUE(
      registry.AddCallbackGauge("inf", "i", [] { return 1.0 / 0.0; }).ok());
  const std::string text = registry.Render();
  EXPECT_NE(text.find("g -5\n"), std::string::npos);
  EXPECT_NE(text.find("inf +Inf\n"), std::string::npos);
  EXPECT_TRUE(Exposition::Parse(text).ok());
}

TEST(RegistryTest, ConcurrentUpdatesAreAllCountedAndRenderStaysParseable) {
  Registry registry;
  Counter* counter = *registry.AddCounter("x_total", "x");
  Histogram* histogram = *registry.AddHistogram("h_seconds", "h", {0.5, 1});
  constexpr int kThreads = 4;
  constexpr int kPerThread = 50'000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kPerThread; ++i) {
        counter->Increment();
        histogram->Observe(i % 3 * 0.5);
      }
    });
  }
  // Scrape while they run: every render must be a valid exposition.
  for (int i = 0; i < 50; ++i) {
    absl::StatusOr<Exposition> parsed = Exposition::Parse(registry.Render());
    ASSERT_TRUE(parsed.ok()) << parsed.status();
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(counter->Value(), uint64_t{kThreads} * kPerThread);
  absl::StatusOr<Exposition> parsed = Exposition::Parse(registry.Render());
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->Value("h_seconds_count"), kThreads * kPerThread);
}

TEST(ExpositionParserTest, RefusesWhatPrometheusWouldRefuse) {
  const char* bad[] = {
      "x 1\n",                                         // no TYPE
      "# TYPE x counter\n# TYPE x counter\nx 1\n",     // typed twice
      "# TYPE x gauge\nx{a=\"1\"} 1\nx{a=\"1\"} 2\n",  // duplicate
      "# TYPE x gauge\nx{a=1} 1\n",                    // unquoted
      "# TYPE x gauge\nx one\n",                       // bad value
      "# TYPE h histogram\nh_bucket{le=\"1\"} 2\n"
      "h_bucket{le=\"+Inf\"} 1\nh_sum 0\nh_count 1\n",  // not cumulative
      "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 0\nh_count 1\n",
  };
  for (const char* text : bad) {
    EXPECT_FALSE(Exposition::Parse(text).ok()) << text;
  }
}

}  // namespace
}  // namespace leasekeeper::metrics
