#include "metrics/families.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "metrics/testing/exposition_parser.h"
#include "prometheus/text_serializer.h"

namespace leasekeeper::metrics {
namespace {

using prometheus::MetricType;
using testing::Exposition;

Exposition Render(const std::vector<prometheus::MetricFamily>& families) {
  absl::StatusOr<Exposition> parsed =
      Exposition::Parse(prometheus::TextSerializer().Serialize(families));
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  return parsed.ok() ? *parsed : Exposition{};
}

TEST(FamiliesTest, CountersAndGaugesCarryTheirValueLabelsAndHelp) {
  std::vector<prometheus::MetricFamily> families;
  families.push_back(
      MakeFamily(MetricType::Counter, "x_total", "Things counted."));
  AddValue(families.back(), 3, {{"outcome", "granted"}});
  AddValue(families.back(), 4, {{"outcome", "queued"}});
  families.push_back(MakeFamily(MetricType::Gauge, "y_bytes", "A level."));
  AddValue(families.back(), 2.5);

  const Exposition m = Render(families);
  EXPECT_EQ(m.Value("x_total", {{"outcome", "granted"}}), 3);
  EXPECT_EQ(m.Value("x_total", {{"outcome", "queued"}}), 4);
  EXPECT_EQ(m.Value("y_bytes"), 2.5);
  EXPECT_EQ(m.families().at("x_total").type, "counter");
  EXPECT_EQ(m.families().at("x_total").help, "Things counted.");
  EXPECT_EQ(m.families().at("y_bytes").type, "gauge");
}

TEST(FamiliesTest, HistogramFromPerBucketCountsIsCumulativeUpToInf) {
  std::vector<prometheus::MetricFamily> families;
  families.push_back(
      MakeFamily(MetricType::Histogram, "wait_seconds", "Waits."));
  // 2 at or below 0.5, 0 in (0.5, 1], 3 in (1, 5], 1 above 5.
  const std::vector<double> bounds = {0.5, 1, 5};
  const std::vector<uint64_t> counts = {2, 0, 3, 1};
  AddHistogram(families.back(), bounds, counts, 21.5);

  const Exposition m = Render(families);
  const std::vector<std::pair<double, double>> buckets =
      m.Buckets("wait_seconds");
  ASSERT_EQ(buckets.size(), 4u);
  EXPECT_EQ(buckets[0], (std::pair<double, double>{0.5, 2}));
  EXPECT_EQ(buckets[1], (std::pair<double, double>{1, 2}));
  EXPECT_EQ(buckets[2], (std::pair<double, double>{5, 5}));
  EXPECT_EQ(buckets[3].second, 6);  // +Inf
  EXPECT_EQ(m.Value("wait_seconds_count"), 6);
  EXPECT_EQ(m.Value("wait_seconds_sum"), 21.5);
}

}  // namespace
}  // namespace leasekeeper::metrics
