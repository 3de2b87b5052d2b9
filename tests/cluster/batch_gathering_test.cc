#include "cluster/batch_gathering.h"

#include <chrono>

#include "gtest/gtest.h"

namespace leasekeeper::storage {
namespace {

using std::chrono::microseconds;
using Clock = BatchGathering::Clock;

constexpr size_t kMaxBytes = 1000;
const Clock::time_point kT0 = Clock::time_point() + std::chrono::hours(1);

TEST(BatchGatheringTest, NothingPendingIsNeverCut) {
  BatchGathering gathering(microseconds(1000), kMaxBytes);
  EXPECT_FALSE(gathering.CutNow(0, 0, kT0));
  gathering.Committed(3, 0, microseconds(2000), kT0);
  EXPECT_FALSE(gathering.CutNow(0, 0, kT0 + std::chrono::seconds(1)));
}

TEST(BatchGatheringTest, BeforeAnyCommitARecordIsCutAtOnce) {
  BatchGathering gathering(microseconds(1000), kMaxBytes);
  EXPECT_TRUE(gathering.CutNow(1, 10, kT0));
}

TEST(BatchGatheringTest, OneCallerAtATimeIsNeverDelayed) {
  BatchGathering gathering(microseconds(1000), kMaxBytes);
  gathering.Committed(/*answered=*/1, /*pending=*/0, microseconds(2000), kT0);
  EXPECT_TRUE(gathering.CutNow(1, 10, kT0 + microseconds(1)));
}

TEST(BatchGatheringTest, TheAnsweredCallersAndThePendingRecordsAreAwaited) {
  BatchGathering gathering(microseconds(1000), kMaxBytes);
  gathering.Committed(/*answered=*/30, /*pending=*/30, microseconds(2000), kT0);
  EXPECT_FALSE(gathering.CutNow(30, 300, kT0 + microseconds(10)));
  EXPECT_FALSE(gathering.CutNow(59, 590, kT0 + microseconds(500)));
  EXPECT_TRUE(gathering.CutNow(60, 600, kT0 + microseconds(500)));
}

TEST(BatchGatheringTest, LingeringEndsAfterTheLongestLinger) {
  BatchGathering gathering(microseconds(1000), kMaxBytes);
  gathering.Committed(30, 30, microseconds(10'000), kT0);
  EXPECT_EQ(gathering.LingerEnd(), kT0 + microseconds(1000));
  EXPECT_FALSE(gathering.CutNow(31, 310, kT0 + microseconds(999)));
  EXPECT_TRUE(gathering.CutNow(31, 310, kT0 + microseconds(1000)));
}

TEST(BatchGatheringTest, LingeringNeverExceedsTheCommitsDuration) {
  BatchGathering gathering(microseconds(1000), kMaxBytes);
  gathering.Committed(30, 30, microseconds(400), kT0);
  EXPECT_EQ(gathering.LingerEnd(), kT0 + microseconds(400));
  EXPECT_FALSE(gathering.CutNow(31, 310, kT0 + microseconds(399)));
  EXPECT_TRUE(gathering.CutNow(31, 310, kT0 + microseconds(400)));
}

TEST(BatchGatheringTest, ARecordAfterTheLingerIsCutAtOnce) {
  BatchGathering gathering(microseconds(1000), kMaxBytes);
  gathering.Committed(64, 0, microseconds(3000), kT0);
  EXPECT_TRUE(gathering.CutNow(1, 10, kT0 + std::chrono::seconds(5)));
}

TEST(BatchGatheringTest, AFullBatchIsCutWithoutLingering) {
  BatchGathering gathering(microseconds(1000), kMaxBytes);
  gathering.Committed(64, 0, microseconds(3000), kT0);
  EXPECT_FALSE(gathering.CutNow(2, kMaxBytes - 1, kT0));
  EXPECT_TRUE(gathering.CutNow(2, kMaxBytes, kT0));
}

TEST(BatchGatheringTest, ZeroMaxLingerNeverLingers) {
  BatchGathering gathering(microseconds(0), kMaxBytes);
  gathering.Committed(64, 0, microseconds(3000), kT0);
  EXPECT_TRUE(gathering.CutNow(1, 10, kT0));
}

TEST(BatchGatheringTest, EachCommitSetsTheNextExpectation) {
  BatchGathering gathering(microseconds(1000), kMaxBytes);
  gathering.Committed(64, 0, microseconds(3000), kT0);
  gathering.Committed(2, 1, microseconds(3000), kT0 + microseconds(5000));
  EXPECT_TRUE(gathering.CutNow(3, 30, kT0 + microseconds(5001)));
}

}  // namespace
}  // namespace leasekeeper::storage
