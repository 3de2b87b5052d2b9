#include "metrics/histogram.h"

#include <cmath>
#include <limits>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace leasekeeper::metrics {
namespace {

std::unique_ptr<Histogram> Make(std::vector<double> bounds) {
  absl::StatusOr<std::unique_ptr<Histogram>> histogram =
      Histogram::Create(std::move(bounds));
  EXPECT_TRUE(histogram.ok()) << histogram.status();
  return std::move(*histogram);
}

TEST(HistogramTest, ObservationLandsInFirstBucketWhoseBoundIsAtLeastIt) {
  struct Case {
    double value;
    std::vector<uint64_t> cumulative;  // le=1, le=2, +Inf
  };
  const Case cases[] = {
      {-5, {1, 1, 1}},
      {0, {1, 1, 1}},
      {1, {1, 1, 1}},
      {1.0001, {0, 1, 1}},
      {2, {0, 1, 1}},
      {2.5, {0, 0, 1}},
      {std::numeric_limits<double>::infinity(), {0, 0, 1}},
  };
  for (const Case& c : cases) {
    std::unique_ptr<Histogram> histogram = Make({1, 2});
    histogram->Observe(c.value);
    Histogram::Snapshot snapshot = histogram->Read();
    EXPECT_EQ(snapshot.cumulative, c.cumulative) << c.value;
    EXPECT_EQ(snapshot.count, 1u);
  }
}

TEST(HistogramTest, NanIsIgnored) {
  std::unique_ptr<Histogram> histogram = Make({1});
  histogram->Observe(std::nan(""));
  EXPECT_EQ(histogram->Read().count, 0u);
  EXPECT_EQ(histogram->Read().sum, 0);
}

TEST(HistogramTest, SumAndCountAccumulateAndDurationsAreSeconds) {
  std::unique_ptr<Histogram> histogram = Make(LatencyBucketsSeconds());
  histogram->ObserveDuration(absl::Milliseconds(250));
  histogram->ObserveDuration(absl::Milliseconds(500));
  Histogram::Snapshot snapshot = histogram->Read();
  EXPECT_EQ(snapshot.count, 2u);
  EXPECT_DOUBLE_EQ(snapshot.sum, 0.75);
  EXPECT_EQ(snapshot.cumulative.back(), snapshot.count);
}

TEST(HistogramTest, BoundsMustBeFiniteStrictlyIncreasingAndFew) {
  const std::vector<std::vector<double>> bad = {
      {},
      {1, 1},
      {2, 1},
      {1, std::numeric_limits<double>::infinity()},
      {std::nan("")},
      std::vector<double>(kMaxHistogramBuckets + 1, 0),
  };
  for (const std::vector<double>& bounds : bad) {
    EXPECT_EQ(Histogram::Create(bounds).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
  EXPECT_TRUE(
      Histogram::Create(ExponentialBuckets(1, 2, kMaxHistogramBuckets)).ok());
}

TEST(HistogramTest, ExponentialBucketsMultiplyByFactor) {
  EXPECT_EQ(ExponentialBuckets(1, 2, 5), (std::vector<double>{1, 2, 4, 8, 16}));
}

TEST(HistogramTest, LatencyBucketsAreValid) {
  EXPECT_TRUE(Histogram::Create(LatencyBucketsSeconds()).ok());
}

}  // namespace
}  // namespace leasekeeper::metrics
