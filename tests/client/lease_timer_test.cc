// The renewal schedule of client/lease_timer.h: the deadline counted from the
// send, a renewal every third of the ttl, retries after 100 ms doubling up to
// a sixth of the ttl.
#include "client/lease_timer.h"

#include <vector>

#include "gtest/gtest.h"

namespace leasekeeper::client {
namespace {

constexpr MonotonicTime kStart = absl::Seconds(1000);

// The deadline a send at `sent` gives a lease of `ttl`.
MonotonicTime DeadlineOf(MonotonicTime sent, absl::Duration ttl) {
  return sent + ttl - LeaseTimer::SafetyMargin(ttl);
}

TEST(LeaseTimerTest, SafetyMarginIsAMillisecondPlusATenthOfAPercent) {
  EXPECT_EQ(LeaseTimer::SafetyMargin(absl::Seconds(30)),
            absl::Milliseconds(31));
  EXPECT_EQ(LeaseTimer::SafetyMargin(absl::Milliseconds(300)),
            absl::Microseconds(1300));
}

TEST(LeaseTimerTest, FirstRenewalIsDueAThirdOfTheTtlAfterTheGrantWasSent) {
  const absl::Duration ttl = absl::Seconds(30);
  LeaseTimer timer(ttl, /*counted_from=*/kStart, /*lease_left=*/ttl);
  EXPECT_EQ(timer.deadline(), DeadlineOf(kStart, ttl));
  EXPECT_EQ(timer.next_attempt_at(), kStart + absl::Seconds(10));
}

TEST(LeaseTimerTest, RenewalCountsTheDeadlineFromItsSendNotItsAnswer) {
  const absl::Duration ttl = absl::Seconds(30);
  LeaseTimer timer(ttl, kStart, ttl);
  const MonotonicTime sent = kStart + absl::Seconds(10);
  timer.OnRenewed(sent);  // the answer may come much later: irrelevant
  EXPECT_EQ(timer.deadline(), DeadlineOf(sent, ttl));
  EXPECT_EQ(timer.next_attempt_at(), sent + absl::Seconds(10));
}

TEST(LeaseTimerTest, ShortenedGrantIsRenewedTwoThirdsOfATtlBeforeItsDeadline) {
  // A grant out of the queue may have less than a whole ttl left.
  const absl::Duration ttl = absl::Seconds(30);
  LeaseTimer timer(ttl, kStart, /*lease_left=*/absl::Seconds(12));
  EXPECT_EQ(timer.deadline(), DeadlineOf(kStart, absl::Seconds(12)) +
                                  LeaseTimer::SafetyMargin(absl::Seconds(12)) -
                                  LeaseTimer::SafetyMargin(ttl));
  EXPECT_EQ(timer.next_attempt_at(), kStart - absl::Seconds(8));  // due now
}

TEST(LeaseTimerTest, TransientFailuresRetryAfter100msDoublingUpToASixthOfTtl) {
  const absl::Duration ttl = absl::Seconds(6);  // a sixth: 1 s
  LeaseTimer timer(ttl, kStart, ttl);
  std::vector<absl::Duration> delays;
  MonotonicTime now = timer.next_attempt_at();
  for (int i = 0; i < 7; ++i) {
    timer.OnTransientFailure(now);
    delays.push_back(timer.next_attempt_at() - now);
    now = timer.next_attempt_at();
  }
  EXPECT_EQ(delays, (std::vector<absl::Duration>{
                        absl::Milliseconds(100), absl::Milliseconds(200),
                        absl::Milliseconds(400), absl::Milliseconds(800),
                        absl::Seconds(1), absl::Seconds(1), absl::Seconds(1)}));
}

TEST(LeaseTimerTest, ShortTtlRetriesEverySixthOfTheTtl) {
  const absl::Duration ttl = absl::Milliseconds(300);
  EXPECT_EQ(LeaseTimer::FirstRetryDelay(ttl), absl::Milliseconds(50));
  LeaseTimer timer(ttl, kStart, ttl);
  timer.OnTransientFailure(kStart);
  EXPECT_EQ(timer.next_attempt_at(), kStart + absl::Milliseconds(50));
  timer.OnTransientFailure(kStart);
  EXPECT_EQ(timer.next_attempt_at(), kStart + absl::Milliseconds(50));
}

TEST(LeaseTimerTest, SuccessAfterFailuresStartsTheRetryDelayOver) {
  const absl::Duration ttl = absl::Seconds(60);
  LeaseTimer timer(ttl, kStart, ttl);
  timer.OnTransientFailure(kStart);
  timer.OnTransientFailure(kStart);
  EXPECT_EQ(timer.retry_delay(), absl::Milliseconds(400));
  timer.OnRenewed(kStart + absl::Seconds(1));
  EXPECT_EQ(timer.retry_delay(), absl::Milliseconds(100));
}

TEST(LeaseTimerTest, OldRenewalAnsweredLateNeverShortensTheDeadline) {
  const absl::Duration ttl = absl::Seconds(30);
  LeaseTimer timer(ttl, kStart, ttl);
  timer.OnRenewed(kStart + absl::Seconds(20));
  timer.OnRenewed(kStart + absl::Seconds(10));  // sent earlier, answered later
  EXPECT_EQ(timer.deadline(), DeadlineOf(kStart + absl::Seconds(20), ttl));
}

TEST(LeaseTimerTest, LeaseIsExpiredAtItsDeadlineInstantNotBefore) {
  const absl::Duration ttl = absl::Seconds(30);
  LeaseTimer timer(ttl, kStart, ttl);
  const MonotonicTime deadline = DeadlineOf(kStart, ttl);
  EXPECT_FALSE(timer.ExpiredAt(deadline - absl::Nanoseconds(1)));
  EXPECT_TRUE(timer.ExpiredAt(deadline));
  EXPECT_LT(deadline, kStart + ttl) << "before the server's end";
}

TEST(LeaseTimerTest, FailuresNeverMoveTheDeadline) {
  const absl::Duration ttl = absl::Seconds(3);
  LeaseTimer timer(ttl, kStart, ttl);
  for (int i = 0; i < 50; ++i) {
    timer.OnTransientFailure(kStart + absl::Seconds(i));
  }
  EXPECT_EQ(timer.deadline(), DeadlineOf(kStart, ttl));
}

}  // namespace
}  // namespace leasekeeper::client
