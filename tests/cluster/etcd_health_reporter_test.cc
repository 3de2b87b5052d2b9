// EtcdHealthReporter's rule on a fake time line: when etcd's trouble is
// told, how often again, and when its end is.
#include "cluster/etcd_health_reporter.h"

#include <chrono>
#include <optional>
#include <vector>

#include "gtest/gtest.h"

namespace leasekeeper::storage {
namespace {

using std::chrono::milliseconds;
using Kind = EtcdHealthReporter::Notice::Kind;

constexpr char kDown[] = "etcd Txn: UNAVAILABLE: connection refused";

EtcdHealthReporter::Clock::time_point At(int64_t ms) {
  return EtcdHealthReporter::Clock::time_point{} + milliseconds(1'000'000 + ms);
}

// Polls every 50 ms from `from` to `to` (exclusive) with a failing call
// before each poll; returns the times of the warnings.
std::vector<int64_t> FailAndPoll(EtcdHealthReporter& reporter, int64_t from,
                                 int64_t to) {
  std::vector<int64_t> warned;
  for (int64_t t = from; t < to; t += 50) {
    reporter.Record(At(t), kDown);
    if (std::optional<EtcdHealthReporter::Notice> notice =
            reporter.Poll(At(t))) {
      EXPECT_EQ(notice->kind, Kind::kTrouble);
      EXPECT_EQ(notice->error, kDown);
      EXPECT_EQ(notice->failing_for, milliseconds(t - from));
      warned.push_back(t - from);
    }
  }
  return warned;
}

TEST(EtcdHealthReporterTest,
     TroubleIsToldAfterWarnAfterThenWithDoublingBackoffCappedAtMaxRepeat) {
  EtcdHealthReporter reporter;  // 0.5 s, then 2, 4, 8, 10, 10 s
  EXPECT_EQ(FailAndPoll(reporter, 0, 36'000),
            (std::vector<int64_t>{500, 2500, 6500, 14500, 24500, 34500}));
  EXPECT_TRUE(reporter.in_trouble());
}

TEST(EtcdHealthReporterTest, RecoveryIsToldOnceAfterTroubleThatWasTold) {
  EtcdHealthReporter reporter;
  ASSERT_EQ(FailAndPoll(reporter, 0, 1500).size(), 1u);
  reporter.Record(At(1500), "");
  EXPECT_FALSE(reporter.in_trouble());
  std::optional<EtcdHealthReporter::Notice> notice = reporter.Poll(At(1500));
  ASSERT_TRUE(notice.has_value());
  EXPECT_EQ(notice->kind, Kind::kRecovered);
  EXPECT_EQ(notice->failing_for, milliseconds(1500));
  EXPECT_FALSE(reporter.Poll(At(1550)).has_value());
  EXPECT_FALSE(reporter.Poll(At(60'000)).has_value());
}

TEST(EtcdHealthReporterTest, ShortTroubleEndsSilently) {
  EtcdHealthReporter reporter;
  EXPECT_TRUE(FailAndPoll(reporter, 0, 450).empty());
  reporter.Record(At(450), "");
  EXPECT_FALSE(reporter.Poll(At(450)).has_value());
  EXPECT_FALSE(reporter.Poll(At(5000)).has_value());
}

TEST(EtcdHealthReporterTest,
     NewTroubleStartsTheBackoffAfreshAfterTheRecoveryNotice) {
  EtcdHealthReporter reporter;
  ASSERT_EQ(FailAndPoll(reporter, 0, 8000).size(), 3u);  // 0.5, 2.5, 6.5 s
  reporter.Record(At(8000), "");
  reporter.Record(At(8100), kDown);  // trouble again before anyone polled
  std::optional<EtcdHealthReporter::Notice> first = reporter.Poll(At(8100));
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->kind, Kind::kRecovered);
  EXPECT_EQ(first->failing_for, milliseconds(8000));
  EXPECT_EQ(FailAndPoll(reporter, 8100, 12'000),
            (std::vector<int64_t>{500, 2500}));
}

TEST(EtcdHealthReporterTest, AWarningCarriesTheLatestError) {
  EtcdHealthReporter reporter;
  reporter.Record(At(0), kDown);
  reporter.Record(At(300), "etcd Put: DEADLINE_EXCEEDED: Deadline Exceeded");
  EXPECT_FALSE(reporter.Poll(At(499)).has_value());
  std::optional<EtcdHealthReporter::Notice> notice = reporter.Poll(At(500));
  ASSERT_TRUE(notice.has_value());
  EXPECT_EQ(notice->error, "etcd Put: DEADLINE_EXCEEDED: Deadline Exceeded");
  EXPECT_EQ(notice->failing_for, milliseconds(500));
}

TEST(EtcdHealthReporterTest, NothingIsToldWhileEveryCallSucceeds) {
  EtcdHealthReporter reporter;
  for (int64_t t = 0; t < 30'000; t += 50) {
    reporter.Record(At(t), "");
    EXPECT_FALSE(reporter.Poll(At(t)).has_value());
  }
  EXPECT_FALSE(reporter.in_trouble());
}

}  // namespace
}  // namespace leasekeeper::storage
