// QueryAnswers alone, on a DurableStateMachine without a log and ticks as
// plain parameters: what each read-only answer shows of holders, waiters,
// labels and sessions, its pages, and what surely remains of a lease.
#include "server/query_answers.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace leasekeeper::server {
namespace {

class QueryAnswersTest : public ::testing::Test {
 protected:
  QueryAnswersTest()
      : machine_(CoreConfig{}, [] { return storage::ServerState{}; }),
        labels_(machine_) {}

  void Acquire(Tick at, const std::string& client, const std::string& lock,
               int64_t ttl = 1'000) {
    ASSERT_TRUE(
        machine_.Apply(Operation{at, op::Acquire{client, lock, ttl}}).ok());
  }

  QueryAnswers At(Tick now, int64_t rounding_ticks = 0) {
    return QueryAnswers(machine_, labels_, sessions_, now, rounding_ticks);
  }

  DurableStateMachine machine_;
  HolderLabels labels_;
  SessionTable sessions_;
};

TEST_F(QueryAnswersTest, InspectShowsHoldersWithLabelsAndWaitersInLine) {
  Acquire(10, "a", "L");
  Acquire(11, "b", "L");
  Acquire(12, "c", "L");
  labels_.Set({"a", "L"}, "holder");
  labels_.Set({"c", "L"}, "second");

  absl::StatusOr<InspectAnswer> answer = At(100).Inspect("L", {}, 10);
  ASSERT_TRUE(answer.ok()) << answer.status();
  ASSERT_EQ(answer->holders.size(), 1u);
  EXPECT_EQ(answer->holders[0].view.client, "a");
  EXPECT_EQ(answer->holders[0].label, "holder");
  EXPECT_EQ(answer->holders[0].expires_in_ms, 910);
  ASSERT_EQ(answer->queue.size(), 2u);
  EXPECT_EQ(answer->queue[0].view.client, "b");
  EXPECT_EQ(answer->queue[0].position, 1);
  EXPECT_EQ(answer->queue[0].label, "");
  EXPECT_EQ(answer->queue[1].view.client, "c");
  EXPECT_EQ(answer->queue[1].position, 2);
  EXPECT_EQ(answer->queue[1].label, "second");
  EXPECT_FALSE(answer->next.has_value());
}

TEST_F(QueryAnswersTest, AnInspectPageNumbersWaitersFromWhereItResumes) {
  Acquire(10, "a", "L");
  Acquire(11, "b", "L");
  Acquire(12, "c", "L");

  absl::StatusOr<InspectAnswer> first = At(100).Inspect("L", {}, 2);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(first->next.has_value());
  absl::StatusOr<InspectAnswer> second = At(100).Inspect("L", *first->next, 2);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(second->holders.empty());
  ASSERT_EQ(second->queue.size(), 1u);
  EXPECT_EQ(second->queue[0].view.client, "c");
  EXPECT_EQ(second->queue[0].position, 2);
}

TEST_F(QueryAnswersTest, AnEmptyNameIsInvalidForInspectAndStatus) {
  EXPECT_FALSE(At(1).Inspect("", {}, 10).ok());
  EXPECT_FALSE(At(1).Status("", "", 10).ok());
}

TEST_F(QueryAnswersTest, GrantRoundingIsTakenOffWhatSurelyRemains) {
  Acquire(10, "a", "L", /*ttl=*/100);
  absl::StatusOr<InspectAnswer> rounded =
      At(20, /*rounding_ticks=*/1).Inspect("L", {}, 10);
  ASSERT_TRUE(rounded.ok()) << rounded.status();
  EXPECT_EQ(rounded->holders[0].expires_in_ms, 89);
  EXPECT_EQ(SureLeftMs(/*expires_at=*/110, /*now=*/110, 1), 0);
}

TEST_F(QueryAnswersTest, StatusShowsTheClientsHoldsWaitAndSession) {
  Acquire(10, "a", "L");
  Acquire(10, "a", "M");
  Acquire(11, "b", "N");
  Acquire(11, "b", "M");
  labels_.Set({"b", "N"}, "mine");
  sessions_.Restore("s-1", "b", /*deadline=*/5'000);

  absl::StatusOr<StatusAnswer> answer = At(50).Status("b", "", 10);
  ASSERT_TRUE(answer.ok()) << answer.status();
  ASSERT_EQ(answer->holds.size(), 1u);
  EXPECT_EQ(answer->holds[0].view.lock, "N");
  EXPECT_EQ(answer->holds[0].label, "mine");
  EXPECT_EQ(answer->waiting, "M");
  EXPECT_EQ(answer->session, SessionState::kGrace);
  EXPECT_EQ(At(50).Status("a", "", 10)->session, SessionState::kNone);
}

TEST_F(QueryAnswersTest, StatusPagesHoldsByLockName) {
  Acquire(10, "a", "L1");
  Acquire(10, "a", "L2");
  Acquire(10, "a", "L3");
  absl::StatusOr<StatusAnswer> first = At(20).Status("a", "", 2);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ(first->holds.size(), 2u);
  ASSERT_EQ(first->next_after, "L2");
  absl::StatusOr<StatusAnswer> rest = At(20).Status("a", "L2", 2);
  ASSERT_TRUE(rest.ok()) << rest.status();
  ASSERT_EQ(rest->holds.size(), 1u);
  EXPECT_EQ(rest->holds[0].view.lock, "L3");
  EXPECT_FALSE(rest->next_after.has_value());
}

TEST_F(QueryAnswersTest, ListLocksPagesActiveLocksUnderAPrefix) {
  Acquire(10, "a", "jobs/1");
  Acquire(11, "b", "jobs/2");
  Acquire(12, "c", "jobs/2");
  Acquire(13, "d", "other");

  ListLocksAnswer first = At(20).ListLocks("jobs/", "", 1);
  ASSERT_EQ(first.locks.size(), 1u);
  EXPECT_EQ(first.locks[0].name, "jobs/1");
  ASSERT_EQ(first.next_after, "jobs/1");
  ListLocksAnswer rest = At(20).ListLocks("jobs/", "jobs/1", 1);
  ASSERT_EQ(rest.locks.size(), 1u);
  EXPECT_EQ(rest.locks[0].name, "jobs/2");
  EXPECT_EQ(rest.locks[0].holders[0].view.client, "b");
  EXPECT_EQ(rest.locks[0].queue_length, 1);
  EXPECT_FALSE(rest.next_after.has_value());
}

TEST_F(QueryAnswersTest, ListLocksTreatsALimitOfZeroAsOne) {
  Acquire(10, "a", "L");
  Acquire(10, "a", "M");
  ListLocksAnswer page = At(20).ListLocks("", "", 0);
  ASSERT_EQ(page.locks.size(), 1u);
  EXPECT_EQ(page.next_after, "L");
}

TEST_F(QueryAnswersTest, AWatchSnapshotListsOnlyLocksWithAHolderOrWaiter) {
  Acquire(10, "a", "w/1");
  Acquire(11, "b", "w/1");
  Acquire(12, "c", "w/2", /*ttl=*/3);

  // w/2's only lease lapsed at 15.
  std::vector<WatchStart::Lock> locks =
      At(20).WatchSnapshot(WatchTarget{.name = "w/", .prefix = true});
  ASSERT_EQ(locks.size(), 1u);
  EXPECT_EQ(locks[0].name, "w/1");
  ASSERT_EQ(locks[0].holders.size(), 1u);
  ASSERT_EQ(locks[0].queue.size(), 1u);
  EXPECT_EQ(locks[0].queue[0].position, 1);
  EXPECT_TRUE(At(20)
                  .WatchSnapshot(WatchTarget{.name = "w/2", .prefix = false})
                  .empty());
  EXPECT_EQ(
      At(20).WatchSnapshot(WatchTarget{.name = "w/1", .prefix = false}).size(),
      1u);
}

}  // namespace
}  // namespace leasekeeper::server
