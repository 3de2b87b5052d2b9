// OwnerCounters alone: what each applied operation and core event counts.
#include "server/owner_counters.h"

#include <string>
#include <utility>
#include <vector>

#include "core/errors.h"
#include "gtest/gtest.h"

namespace leasekeeper::server {
namespace {

Operation AcquireOp() { return Operation{10, op::Acquire{"c", "l", 1'000}}; }

Reply Acquired(AcquireOutcome::Kind kind,
               std::vector<std::string> aborted = {}) {
  AcquireOutcome outcome;
  outcome.kind = kind;
  outcome.aborted = std::move(aborted);
  return outcome;
}

Event CoreEvent(Event::Kind kind) {
  Event event;
  event.kind = kind;
  return event;
}

TEST(OwnerCountersTest, AGrantAtOnceCountsAsAWaitOfZero) {
  OwnerCounters counters;
  counters.CountApplied(AcquireOp(),
                        Acquired(AcquireOutcome::Kind::kGranted));
  EXPECT_EQ(counters.counts().acquired_at_once, 1u);
  EXPECT_EQ(counters.counts().acquire_waits[0], 1u);
  EXPECT_EQ(counters.counts().acquire_wait_ms_sum, 0u);
}

TEST(OwnerCountersTest, AWaitFallsIntoTheFirstBucketItDoesNotExceed) {
  OwnerCounters counters;
  counters.CountAcquireWait(5);      // <= 5: bucket 1
  counters.CountAcquireWait(6);      // <= 10: bucket 2
  counters.CountAcquireWait(4'000'000);  // above every bound: the last
  const OwnerCounters::Counts& counts = counters.counts();
  EXPECT_EQ(counts.acquire_waits[1], 1u);
  EXPECT_EQ(counts.acquire_waits[2], 1u);
  EXPECT_EQ(counts.acquire_waits.back(), 1u);
  EXPECT_EQ(counts.acquire_wait_ms_sum, 4'000'011u);
}

TEST(OwnerCountersTest, AbortsCountOncePerClientFromTheAcquiresAbortList) {
  OwnerCounters counters;
  counters.CountApplied(
      AcquireOp(), Acquired(AcquireOutcome::Kind::kDeadlock, {"a", "c"}));
  counters.CountEvent(CoreEvent(Event::Kind::kAbortedWaiter));
  counters.CountEvent(CoreEvent(Event::Kind::kAbortedHolder));
  EXPECT_EQ(counters.counts().acquired_deadlock, 1u);
  EXPECT_EQ(counters.counts().deadlock_victims, 2u);
}

TEST(OwnerCountersTest, AReleaseCountsWhatItEnded) {
  OwnerCounters counters;
  const Operation release{10, op::Release{"c", "l"}};
  counters.CountApplied(release, Reply{ReleaseOutcome::kReleased});
  counters.CountApplied(release, Reply{ReleaseOutcome::kWithdrawn});
  counters.CountApplied(Operation{10, op::Withdraw{"c", "l"}}, Reply{false});
  EXPECT_EQ(counters.counts().releases, 1u);
  EXPECT_EQ(counters.counts().withdrawals, 1u);
}

TEST(OwnerCountersTest, ARefusalCountsOnlyAStaleWrite) {
  OwnerCounters counters;
  op::Write write;
  write.lock = "l";
  write.key = "k";
  counters.CountApplied(Operation{10, write},
                        MakeError(ErrorCode::kStaleToken));
  counters.CountApplied(Operation{10, op::Renew{"c", "l", 1'000}},
                        MakeError(ErrorCode::kNotHolder));
  EXPECT_EQ(counters.counts().stale_writes_refused, 1u);
  EXPECT_EQ(counters.counts().renewals, 0u);
}

TEST(OwnerCountersTest, DeletesCountBesideWrites) {
  OwnerCounters counters;
  const Operation del{10, op::Delete{"l", "k", 1, "c"}};
  counters.CountApplied(del, Reply{true});
  counters.CountApplied(del, Reply{false});  // an absent key: accepted too
  counters.CountApplied(del, MakeError(ErrorCode::kStaleToken));
  counters.CountApplied(del, MakeError(ErrorCode::kNotHolder));
  counters.CountApplied(Operation{10, op::Write{"l", "k", "v", 1}},
                        Reply{std::monostate{}});
  EXPECT_EQ(counters.counts().store_deletes, 2u);
  EXPECT_EQ(counters.counts().store_writes, 1u);
  EXPECT_EQ(counters.counts().stale_writes_refused, 1u);
  EXPECT_EQ(counters.counts().withdrawals, 0u);
}

TEST(OwnerCountersTest, CoreEventsCountLapsesGrantsAndSessionLossEnds) {
  OwnerCounters counters;
  counters.CountEvent(CoreEvent(Event::Kind::kLapsed));
  counters.CountEvent(CoreEvent(Event::Kind::kGrantedFromQueue));
  counters.CountEvent(CoreEvent(Event::Kind::kReleasedByOwner));
  counters.CountEvent(CoreEvent(Event::Kind::kWithdrawnByOwner));
  const OwnerCounters::Counts& counts = counters.counts();
  EXPECT_EQ(counts.lapses, 1u);
  EXPECT_EQ(counts.granted_from_queue, 1u);
  EXPECT_EQ(counts.releases, 1u);
  EXPECT_EQ(counts.withdrawals, 1u);
}

}  // namespace
}  // namespace leasekeeper::server
