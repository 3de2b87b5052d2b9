// Backoff: bounded, doubling, jittered delays between retries.
#include "client/internal/backoff.h"

#include <set>

#include "gtest/gtest.h"

namespace leasekeeper::client::internal {
namespace {

TEST(BackoffTest, NominalDelayDoublesUpToTheCap) {
  Backoff backoff(absl::Milliseconds(100), absl::Seconds(1));
  const absl::Duration expected[] = {
      absl::Milliseconds(100), absl::Milliseconds(200), absl::Milliseconds(400),
      absl::Milliseconds(800), absl::Seconds(1),        absl::Seconds(1)};
  for (absl::Duration nominal : expected) {
    EXPECT_EQ(backoff.nominal(), nominal);
    (void)backoff.Next();
  }
}

TEST(BackoffTest, EachDelayIsBetweenHalfAndAllOfTheNominalDelay) {
  Backoff backoff(absl::Milliseconds(100), absl::Seconds(1));
  for (int i = 0; i < 200; ++i) {
    const absl::Duration nominal = backoff.nominal();
    const absl::Duration delay = backoff.Next();
    EXPECT_GE(delay, nominal / 2);
    EXPECT_LE(delay, nominal);
  }
}

TEST(BackoffTest, DelaysAreJitteredSoClientsDoNotRetryInLockstep) {
  std::set<int64_t> first_delays_us;
  for (int client = 0; client < 50; ++client) {
    Backoff backoff(absl::Seconds(1), absl::Seconds(1));
    first_delays_us.insert(absl::ToInt64Microseconds(backoff.Next()));
  }
  // 50 draws from half a second of microseconds: nearly all differ.
  EXPECT_GT(first_delays_us.size(), 40u);
}

TEST(BackoffTest, ResetStartsOverAtTheFirstDelay) {
  Backoff backoff(absl::Milliseconds(100), absl::Seconds(1));
  for (int i = 0; i < 5; ++i) (void)backoff.Next();
  backoff.Reset();
  EXPECT_EQ(backoff.nominal(), absl::Milliseconds(100));
  EXPECT_LE(backoff.Next(), absl::Milliseconds(100));
}

}  // namespace
}  // namespace leasekeeper::client::internal
