// Direct tests of the core's C++ API (LockTable, FencedStore, StateMachine)
// for what the replay format cannot show: events, NextExpiry, Withdraw,
// ReleaseAll/RenewAll, ActiveLocks, configuration, snapshots.
#include "core/lock_table.h"

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/errors.h"
#include "core/fenced_store.h"
#include "core/state_machine.h"
#include "core/types.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/core/acquire_helpers.h"

namespace leasekeeper {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr LockMode kX = LockMode::kExclusive;
constexpr LockMode kS = LockMode::kShared;

std::string KindName(Event::Kind kind) {
  switch (kind) {
    case Event::Kind::kLapsed:
      return "lapsed";
    case Event::Kind::kGrantedFromQueue:
      return "granted";
    case Event::Kind::kAbortedWaiter:
      return "aborted-waiter";
    case Event::Kind::kAbortedHolder:
      return "aborted-holder";
    case Event::Kind::kReleasedByOwner:
      return "released-by-owner";
    case Event::Kind::kWithdrawnByOwner:
      return "withdrawn-by-owner";
  }
  return "?";
}

// "granted@10 b L #2 exclusive ->30": the fields each kind documents.
std::string Describe(const Event& e) {
  std::string out = KindName(e.kind) + "@" + std::to_string(e.at) + " " +
                    e.client + " " + e.lock;
  switch (e.kind) {
    case Event::Kind::kGrantedFromQueue:
      return out + " #" + std::to_string(e.token) + " " +
             std::string(LockModeName(e.mode)) + " ->" +
             std::to_string(e.expires_at);
    case Event::Kind::kLapsed:
    case Event::Kind::kAbortedHolder:
    case Event::Kind::kReleasedByOwner:
      return out + " #" + std::to_string(e.token);
    case Event::Kind::kAbortedWaiter:
    case Event::Kind::kWithdrawnByOwner:
      return out;
  }
  return out;
}

std::vector<std::string> Describe(const std::vector<Event>& events) {
  std::vector<std::string> out;
  for (const Event& e : events) out.push_back(Describe(e));
  return out;
}

// Only the events of the given kinds, described.
std::vector<std::string> DescribeKinds(const std::vector<Event>& events,
                                       std::vector<Event::Kind> kinds) {
  std::vector<std::string> out;
  for (const Event& e : events) {
    for (Event::Kind kind : kinds) {
      if (e.kind == kind) out.push_back(Describe(e));
    }
  }
  return out;
}

// "client lock #token exclusive ->expires_at" for each holder.
std::vector<std::string> Holders(const LockView& view) {
  std::vector<std::string> out;
  for (const HolderView& h : view.holders) {
    out.push_back(h.client + " " + h.lock + " #" + std::to_string(h.token) +
                  " " + std::string(LockModeName(h.mode)) + " ->" +
                  std::to_string(h.expires_at));
  }
  return out;
}
std::vector<std::string> Holds(const ClientView& view) {
  return Holders(LockView{view.holds, {}});
}
std::vector<std::string> Queue(const LockView& view) {
  std::vector<std::string> out;
  for (const WaiterView& w : view.queue) out.push_back(w.client);
  return out;
}

// --- Events ---------------------------------------------------------------

TEST(LockTableEvents, CallersOwnOutcomesAreNotEvents) {
  LockTable t;
  ExpectGranted(MustAcquire(t, 0, "a", "L", 10), 1, 10);
  ExpectQueued(MustAcquire(t, 1, "b", "L", 20), 1);
  ASSERT_TRUE(t.Renew(2, "a", "L", 10).ok());
  EXPECT_FALSE(t.Release(3, "c", "L").ok());
  EXPECT_THAT(t.TakeEvents(), IsEmpty());
}

TEST(LockTableEvents, GrantedFromQueueCarriesTheHandOverInstant) {
  LockTable t;
  MustAcquire(t, 0, "a", "L", 10);
  MustAcquire(t, 1, "b", "L", 20);
  t.TakeEvents();
  // Noticed at 25, happened at 10.
  LockView view = t.Inspect(25, "L");
  EXPECT_THAT(Holders(view), ElementsAre("b L #2 exclusive ->30"));
  EXPECT_THAT(
      Describe(t.TakeEvents()),
      ElementsAre("lapsed@10 a L #1", "granted@10 b L #2 exclusive ->30"));
  EXPECT_THAT(t.TakeEvents(), IsEmpty()) << "TakeEvents drains";
  EXPECT_TRUE(t.CheckInvariants().ok()) << t.CheckInvariants();
}

TEST(LockTableEvents, ReleaseHandsOverAtTheReleaseInstantWithoutALapse) {
  LockTable t;
  MustAcquire(t, 0, "a", "L", 10);
  MustAcquire(t, 1, "b", "L", 20);
  t.TakeEvents();
  absl::StatusOr<ReleaseOutcome> released = t.Release(4, "a", "L");
  ASSERT_TRUE(released.ok());
  EXPECT_EQ(*released, ReleaseOutcome::kReleased);
  EXPECT_THAT(Describe(t.TakeEvents()),
              ElementsAre("granted@4 b L #2 exclusive ->24"));
}

TEST(LockTableEvents, LapseChainsAcrossSeveralLocksAreProcessedInTimeOrder) {
  // L1: a [0,10) -> b [10,20) -> c [20,30).
  // L2: x [0,15) -> y [15,25) -> z [25,35).
  LockTable t;
  MustAcquire(t, 0, "a", "L1", 10);
  MustAcquire(t, 0, "x", "L2", 15);
  MustAcquire(t, 1, "b", "L1", 10);
  MustAcquire(t, 1, "y", "L2", 10);
  MustAcquire(t, 2, "c", "L1", 10);
  MustAcquire(t, 2, "z", "L2", 10);
  t.TakeEvents();
  t.AdvanceTo(100);
  EXPECT_THAT(
      Describe(t.TakeEvents()),
      ElementsAre("lapsed@10 a L1 #1", "granted@10 b L1 #2 exclusive ->20",
                  "lapsed@15 x L2 #1", "granted@15 y L2 #2 exclusive ->25",
                  "lapsed@20 b L1 #2", "granted@20 c L1 #3 exclusive ->30",
                  "lapsed@25 y L2 #2", "granted@25 z L2 #3 exclusive ->35",
                  "lapsed@30 c L1 #3", "lapsed@35 z L2 #3"));
  EXPECT_EQ(t.held_lease_count(), 0u);
  EXPECT_EQ(t.waiter_count(), 0u);
}

TEST(LockTableEvents, SharedRunAtTheHeadIsGrantedTogetherAtTheLapse) {
  LockTable t;
  MustAcquire(t, 0, "w", "S", 10);
  MustAcquire(t, 1, "r1", "S", 5, kS);
  MustAcquire(t, 2, "r2", "S", 7, kS);
  MustAcquire(t, 3, "w2", "S", 10);
  t.TakeEvents();
  t.AdvanceTo(11);
  EXPECT_THAT(Describe(t.TakeEvents()),
              ElementsAre("lapsed@10 w S #1", "granted@10 r1 S #2 shared ->15",
                          "granted@10 r2 S #3 shared ->17"));
}

TEST(LockTableEvents, AbortedWaiterThenAbortedHolderForAVictimThatDoesBoth) {
  // Part 3 example 1: bob waits for L1 and holds L2; alice's request aborts
  // him: first his wait goes, then his lease.
  LockTable t;
  MustAcquire(t, 0, "alice", "L1", 100);
  MustAcquire(t, 1, "bob", "L2", 100);
  MustAcquire(t, 2, "bob", "L1", 100);
  t.TakeEvents();
  AcquireOutcome out = MustAcquire(t, 3, "alice", "L2", 100);
  ExpectGranted(out, 2, 103);
  EXPECT_THAT(out.aborted, ElementsAre("bob"));
  EXPECT_THAT(
      DescribeKinds(t.TakeEvents(),
                    {Event::Kind::kAbortedWaiter, Event::Kind::kAbortedHolder}),
      ElementsAre("aborted-waiter@3 bob L1", "aborted-holder@3 bob L2 #1"));
  EXPECT_FALSE(t.Status(4, "bob").age.has_value());
  EXPECT_TRUE(t.CheckInvariants().ok()) << t.CheckInvariants();
}

TEST(LockTableEvents, AbortedRequesterReleasesInAscendingLockNameOrder) {
  // Z (the youngest) holds b, a, c (taken in that order), each with a
  // waiter, and its request for m closes a cycle through H. Its leases go
  // in the order a, b, c, each handed to the head waiter at 11 before the
  // next one goes.
  LockTable t;
  MustAcquire(t, 0, "H", "m", 100);
  MustAcquire(t, 1, "p1", "q1", 100);
  MustAcquire(t, 2, "p2", "q2", 100);
  MustAcquire(t, 3, "p3", "q3", 100);
  MustAcquire(t, 4, "Z", "b", 100);
  MustAcquire(t, 5, "Z", "a", 100);
  MustAcquire(t, 6, "Z", "c", 100);
  MustAcquire(t, 7, "p1", "a", 10);
  MustAcquire(t, 8, "p2", "b", 20);
  MustAcquire(t, 9, "p3", "c", 30);
  ExpectQueued(MustAcquire(t, 10, "H", "c", 40), 2);
  t.TakeEvents();
  AcquireOutcome out = MustAcquire(t, 11, "Z", "m", 100);
  EXPECT_EQ(out.kind, AcquireOutcome::Kind::kDeadlock);
  EXPECT_THAT(out.aborted, ElementsAre("Z"));
  EXPECT_THAT(
      DescribeKinds(t.TakeEvents(), {Event::Kind::kAbortedHolder,
                                     Event::Kind::kGrantedFromQueue}),
      ElementsAre(
          "aborted-holder@11 Z a #1", "granted@11 p1 a #2 exclusive ->21",
          "aborted-holder@11 Z b #1", "granted@11 p2 b #2 exclusive ->31",
          "aborted-holder@11 Z c #1", "granted@11 p3 c #2 exclusive ->41"));
  EXPECT_TRUE(t.CheckInvariants().ok()) << t.CheckInvariants();
}

TEST(LockTableEvents, NoEventsAreKeptWhenRecordingIsOff) {
  LockTable t(CoreConfig{.record_events = false});
  MustAcquire(t, 0, "a", "L", 10);
  MustAcquire(t, 1, "b", "L", 20);
  t.AdvanceTo(50);
  EXPECT_THAT(t.TakeEvents(), IsEmpty());
  EXPECT_EQ(t.held_lease_count(), 0u);
}

// --- NextExpiry -----------------------------------------------------------

TEST(LockTable, NextExpiryIsTheEarliestHeldLease) {
  LockTable t;
  EXPECT_EQ(t.NextExpiry(), std::nullopt);
  MustAcquire(t, 0, "a", "L", 10);
  EXPECT_EQ(t.NextExpiry(), std::optional<Tick>(10));
  MustAcquire(t, 2, "b", "M", 5);
  EXPECT_EQ(t.NextExpiry(), std::optional<Tick>(7));
  ASSERT_TRUE(t.Renew(3, "b", "M", 20).ok());  // b now ends at 23
  EXPECT_EQ(t.NextExpiry(), std::optional<Tick>(10));
  ASSERT_TRUE(t.Release(4, "a", "L").ok());
  EXPECT_EQ(t.NextExpiry(), std::optional<Tick>(23));
  t.AdvanceTo(23);
  EXPECT_EQ(t.NextExpiry(), std::nullopt);
}

TEST(LockTable, NextExpiryIncludesLeasesHandedOverFromTheQueue) {
  LockTable t;
  MustAcquire(t, 0, "a", "L", 10);
  MustAcquire(t, 1, "b", "L", 20);
  EXPECT_EQ(t.NextExpiry(), std::optional<Tick>(10));
  t.AdvanceTo(10);
  EXPECT_EQ(t.NextExpiry(), std::optional<Tick>(30));
}

// --- Withdraw -------------------------------------------------------------

TEST(LockTable, WithdrawNeverEndsALease) {
  LockTable t;
  MustAcquire(t, 0, "a", "L", 10);
  MustAcquire(t, 1, "b", "L", 10);
  MustAcquire(t, 2, "c", "M", 10);
  MustAcquire(t, 3, "d", "M", 10);
  EXPECT_FALSE(t.Withdraw(4, "a", "L"));  // a holds L
  EXPECT_FALSE(t.Withdraw(4, "d", "L"));  // d waits for M, not L
  EXPECT_FALSE(t.Withdraw(4, "x", "L"));  // a stranger
  LockView view = t.Inspect(4, "L");
  EXPECT_THAT(Holders(view), ElementsAre("a L #1 exclusive ->10"));
  EXPECT_THAT(Queue(view), ElementsAre("b"));
  EXPECT_THAT(Queue(t.Inspect(4, "M")), ElementsAre("d"));

  EXPECT_TRUE(t.Withdraw(5, "b", "L"));
  EXPECT_FALSE(t.Withdraw(5, "b", "L"));
  view = t.Inspect(5, "L");
  EXPECT_THAT(Holders(view), ElementsAre("a L #1 exclusive ->10"));
  EXPECT_THAT(Queue(view), IsEmpty());
  EXPECT_EQ(t.Status(5, "b").waiting, std::nullopt);
  EXPECT_EQ(t.Status(5, "b").age, std::optional<uint64_t>(2));
  EXPECT_TRUE(t.CheckInvariants().ok()) << t.CheckInvariants();
}

TEST(LockTable, WithdrawOfABlockingWriterGrantsReadersAtNow) {
  LockTable t;
  MustAcquire(t, 0, "r1", "S", 100, kS);
  MustAcquire(t, 1, "w", "S", 10);
  MustAcquire(t, 2, "r2", "S", 20, kS);
  t.TakeEvents();
  EXPECT_TRUE(t.Withdraw(5, "w", "S"));
  EXPECT_THAT(Describe(t.TakeEvents()),
              ElementsAre("granted@5 r2 S #2 shared ->25"));
  EXPECT_THAT(Holders(t.Inspect(5, "S")),
              ElementsAre("r1 S #1 shared ->100", "r2 S #2 shared ->25"));
}

// --- ReleaseAll / RenewAll ------------------------------------------------

TEST(LockTable,
     ReleaseAllReleasesInAscendingLockNameOrderAndKeepsRegistration) {
  LockTable t;
  MustAcquire(t, 0, "o", "c", 100);
  MustAcquire(t, 0, "o", "a", 100);
  MustAcquire(t, 0, "o", "b", 100);
  MustAcquire(t, 0, "w", "d", 100);
  MustAcquire(t, 1, "x", "a", 10);
  MustAcquire(t, 1, "y", "b", 20);
  MustAcquire(t, 1, "z", "c", 30);
  ExpectQueued(MustAcquire(t, 2, "o", "d", 100), 1);
  t.TakeEvents();

  EXPECT_EQ(t.ReleaseAll(5, "o"), 3);
  const std::vector<Event> events = t.TakeEvents();
  EXPECT_THAT(
      DescribeKinds(events, {Event::Kind::kReleasedByOwner,
                             Event::Kind::kGrantedFromQueue}),
      ElementsAre(
          "released-by-owner@5 o a #1", "granted@5 x a #2 exclusive ->15",
          "released-by-owner@5 o b #1", "granted@5 y b #2 exclusive ->25",
          "released-by-owner@5 o c #1", "granted@5 z c #2 exclusive ->35"));
  EXPECT_THAT(DescribeKinds(events, {Event::Kind::kWithdrawnByOwner}),
              ElementsAre("withdrawn-by-owner@5 o d"));

  ClientView o = t.Status(5, "o");
  EXPECT_EQ(o.age, std::optional<uint64_t>(1));
  EXPECT_THAT(o.holds, IsEmpty());
  EXPECT_EQ(o.waiting, std::nullopt);
  EXPECT_THAT(Queue(t.Inspect(5, "d")), IsEmpty());
  EXPECT_TRUE(t.CheckInvariants().ok()) << t.CheckInvariants();
}

TEST(LockTable, ReleaseAllOfAnUnknownClientDoesNothing) {
  LockTable t;
  MustAcquire(t, 0, "a", "L", 10);
  EXPECT_EQ(t.ReleaseAll(1, "nobody"), 0);
  EXPECT_THAT(Holders(t.Inspect(1, "L")), ElementsAre("a L #1 exclusive ->10"));
  EXPECT_EQ(t.registered_client_count(), 1u);
}

TEST(LockTable, RenewAllUsesEachLeasesOwnLastTtl) {
  LockTable t;
  MustAcquire(t, 0, "a", "L1", 10);
  MustAcquire(t, 0, "a", "L2", 50);
  MustAcquire(t, 0, "a", "L3", 5);
  ASSERT_TRUE(t.Renew(2, "a", "L1", 30).ok());
  // L3 lapsed at 5; L1 is renewed with 30 (its last renewal), L2 with 50.
  EXPECT_EQ(t.RenewAll(20, "a"), 2);
  EXPECT_THAT(Holds(t.Status(20, "a")),
              ElementsAre("a L1 #1 exclusive ->50", "a L2 #1 exclusive ->70"));
  EXPECT_EQ(t.RenewAll(20, "nobody"), 0);
}

// --- ActiveLocks ----------------------------------------------------------

TEST(LockTable, ActiveLocksHonoursPrefixAfterAndLimit) {
  LockTable t;
  MustAcquire(t, 0, "a", "a/1", 100);
  MustAcquire(t, 0, "b", "a/2", 100);
  MustAcquire(t, 0, "c", "b/1", 100);
  MustAcquire(t, 0, "d", "a/3", 100);
  MustAcquire(t, 0, "e", "a/0", 5);
  MustAcquire(t, 0, "f", "a/2", 100);  // a waiter on a held lock
  ASSERT_TRUE(t.Release(1, "d", "a/3").ok());
  t.AdvanceTo(6);  // a/0 lapses

  using V = std::vector<std::string>;
  EXPECT_EQ(t.ActiveLocks("a/", "", 10), (V{"a/1", "a/2"}));
  EXPECT_EQ(t.ActiveLocks("a/", "a/1", 10), (V{"a/2"}));
  EXPECT_EQ(t.ActiveLocks("a/", "", 1), (V{"a/1"}));
  EXPECT_EQ(t.ActiveLocks("", "", 10), (V{"a/1", "a/2", "b/1"}));
  EXPECT_EQ(t.ActiveLocks("", "a/2", 10), (V{"b/1"}));
  EXPECT_EQ(t.ActiveLocks("c", "", 10), V{});
  EXPECT_EQ(t.ActiveLocks("", "", 0), V{});
}

// --- Configuration, errors and time ---------------------------------------

TEST(LockTable, MaxTtlIsConfigurableInMilliseconds) {
  LockTable t(CoreConfig{.max_ttl = 86'400'000});
  ExpectGranted(MustAcquire(t, 0, "a", "L", 86'400'000), 1, 86'400'000);
  EXPECT_EQ(ErrorCodeOf(t.Acquire(0, "b", "M", 86'400'001, kX).status()),
            ErrorCode::kInvalidTtl);
  EXPECT_EQ(ErrorCodeOf(t.Renew(1, "a", "L", 86'400'001).status()),
            ErrorCode::kInvalidTtl);
  absl::StatusOr<RenewOutcome> renewed = t.Renew(1, "a", "L", 86'400'000);
  ASSERT_TRUE(renewed.ok());
  EXPECT_EQ(renewed->expires_at, 86'400'001);
  EXPECT_EQ(ErrorCodeOf(t.Acquire(1, "b", "M", 0, kX).status()),
            ErrorCode::kInvalidTtl);
}

TEST(LockTable, DefaultMaxTtlIs86400) {
  LockTable t;
  EXPECT_EQ(ErrorCodeOf(t.Acquire(0, "a", "L", 86'401, kX).status()),
            ErrorCode::kInvalidTtl);
  ExpectGranted(MustAcquire(t, 0, "a", "L", 86'400), 1, 86'400);
}

TEST(LockTable, MaxTtlIsCappedAtThe32BitLeaseTtl) {
  // A lease keeps its ttl in 32 bits (kMaxCoreTtl); a larger max_ttl is
  // treated as that.
  LockTable t(CoreConfig{.max_ttl = int64_t{1} << 40});
  EXPECT_EQ(ErrorCodeOf(t.Acquire(0, "a", "L", kMaxCoreTtl + 1, kX).status()),
            ErrorCode::kInvalidTtl);
  ExpectGranted(MustAcquire(t, 0, "a", "L", kMaxCoreTtl), 1, kMaxCoreTtl);
  EXPECT_EQ(ErrorCodeOf(t.Renew(1, "a", "L", kMaxCoreTtl + 1).status()),
            ErrorCode::kInvalidTtl);
  // RenewAll reuses the full ttl kept with the lease.
  EXPECT_EQ(t.RenewAll(2, "a"), 1);
  EXPECT_EQ(t.NextExpiry(), 2 + kMaxCoreTtl);
  ExpectQueued(MustAcquire(t, 3, "w", "L", kMaxCoreTtl), 1);
  EXPECT_THAT(Queue(t.Inspect(3, "L")), ElementsAre("w"));
  EXPECT_EQ(t.Inspect(3, "L").queue[0].ttl, kMaxCoreTtl);
}

TEST(LockTable, SharedHoldersLeaveInAnyOrderAndStayInTokenOrder) {
  // The lowest-token holder is kept apart from the others: releases and
  // lapses of the lowest, a middle and the highest token must all keep the
  // holders in token order and the writer waiting until the last one goes.
  LockTable t;
  for (int i = 1; i <= 5; ++i) {
    const std::string client = absl::StrCat("s", i);
    // s1 lapses first, at 10; the others last until 100.
    ExpectGranted(MustAcquire(t, 0, client, "S", i == 1 ? 10 : 100, kS), i,
                  i == 1 ? 10 : 100);
  }
  ExpectQueued(MustAcquire(t, 1, "w", "S", 50), 1);
  auto tokens = [&](Tick now) {
    std::vector<FencingToken> out;
    for (const HolderView& h : t.Inspect(now, "S").holders) {
      out.push_back(h.token);
    }
    return out;
  };
  EXPECT_THAT(tokens(1), ElementsAre(1, 2, 3, 4, 5));
  EXPECT_THAT(tokens(10), ElementsAre(2, 3, 4, 5));  // the lowest lapsed
  ASSERT_TRUE(t.CheckInvariants().ok()) << t.CheckInvariants();
  ASSERT_TRUE(t.Release(11, "s4", "S").ok());  // a middle one
  EXPECT_THAT(tokens(11), ElementsAre(2, 3, 5));
  ASSERT_TRUE(t.Release(12, "s5", "S").ok());  // the highest
  EXPECT_THAT(tokens(12), ElementsAre(2, 3));
  ASSERT_TRUE(t.Release(13, "s2", "S").ok());  // the lowest
  EXPECT_THAT(tokens(13), ElementsAre(3));
  ASSERT_TRUE(t.CheckInvariants().ok()) << t.CheckInvariants();
  EXPECT_EQ(t.QueueLength("S"), 1u);
  EXPECT_EQ(t.WaitingFor("w"), "S");
  ASSERT_TRUE(t.Release(14, "s3", "S").ok());
  EXPECT_THAT(Holders(t.Inspect(14, "S")),
              ElementsAre("w S #6 exclusive ->64"));
  EXPECT_EQ(t.QueueLength("S"), 0u);
  EXPECT_EQ(t.WaitingFor("w"), std::nullopt);
  // A new reader queues behind nobody and waits for the writer.
  ExpectQueued(MustAcquire(t, 15, "r", "S", 5, kS), 1);
  EXPECT_EQ(t.QueueLength("S"), 1u);
  ASSERT_TRUE(t.CheckInvariants().ok()) << t.CheckInvariants();
}

TEST(LockTable, QueueLengthAndWaitingForOfUnknownNames) {
  LockTable t;
  EXPECT_EQ(t.QueueLength("nope"), 0u);
  EXPECT_EQ(t.WaitingFor("nobody"), std::nullopt);
  MustAcquire(t, 0, "a", "L", 10);
  EXPECT_EQ(t.QueueLength("L"), 0u);
  EXPECT_EQ(t.WaitingFor("a"), std::nullopt);  // holds, does not wait
}

TEST(LockTable, ErrorsCarryTheContractTextAndFamily) {
  LockTable t;
  absl::Status invalid = t.Acquire(0, "", "L", 10, kX).status();
  EXPECT_EQ(ErrorCodeOf(invalid), ErrorCode::kInvalidArguments);
  EXPECT_EQ(invalid.message(), "invalid arguments");
  EXPECT_EQ(invalid.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ErrorCodeOf(t.Acquire(0, "a", "", 10, kX).status()),
            ErrorCode::kInvalidArguments);

  MustAcquire(t, 0, "a", "L", 10);
  absl::Status busy = t.Acquire(1, "a", "L", 10, kX).status();
  EXPECT_EQ(ErrorCodeOf(busy), ErrorCode::kClientBusy);
  EXPECT_EQ(busy.message(), "client busy");
  EXPECT_EQ(busy.code(), absl::StatusCode::kFailedPrecondition);

  absl::Status not_holder = t.Renew(1, "b", "L", 10).status();
  EXPECT_EQ(ErrorCodeOf(not_holder), ErrorCode::kNotHolder);
  EXPECT_EQ(not_holder.message(), "not holder");
  EXPECT_EQ(ErrorCodeOf(t.Release(1, "b", "L").status()),
            ErrorCode::kNotHolder);
  EXPECT_EQ(ErrorCodeOf(t.Release(1, "", "L").status()),
            ErrorCode::kInvalidArguments);
  // The failed calls registered nobody.
  EXPECT_EQ(t.registered_client_count(), 1u);
}

TEST(LockTable, NowIsMinTickBeforeTheFirstCall) {
  LockTable t;
  EXPECT_EQ(t.now(), kMinTick);
  t.AdvanceTo(7);
  EXPECT_EQ(t.now(), 7);
}

TEST(LockTable, SmallerNowIsTreatedAsTheLatestNow) {
  LockTable t;
  ExpectGranted(MustAcquire(t, 10, "a", "L", 5), 1, 15);
  ExpectGranted(MustAcquire(t, 5, "b", "M", 5), 1, 15);
  EXPECT_EQ(t.now(), 10);
}

TEST(LockTable, CountsFollowTheTable) {
  LockTable t;
  MustAcquire(t, 0, "a", "L", 10);
  MustAcquire(t, 1, "b", "L", 10);
  MustAcquire(t, 2, "c", "L", 10);
  MustAcquire(t, 3, "d", "M", 10, kS);
  MustAcquire(t, 3, "e", "M", 10, kS);
  EXPECT_EQ(t.held_lease_count(), 3u);
  EXPECT_EQ(t.waiter_count(), 2u);
  EXPECT_EQ(t.registered_client_count(), 5u);
  t.AdvanceTo(13);  // a -> b on L at 10; d, e lapse on M at 13
  EXPECT_EQ(t.held_lease_count(), 1u);
  EXPECT_EQ(t.waiter_count(), 1u);
  EXPECT_EQ(t.registered_client_count(), 5u);
}

// --- FencedStore ----------------------------------------------------------

TEST(FencedStore, HighWaterNeverFallsAndARejectedWriteChangesNothing) {
  FencedStore store;
  EXPECT_EQ(store.HighWater("L"), 0u);
  ASSERT_TRUE(store.Write("L", "k", "v5", 5).ok());
  EXPECT_EQ(store.HighWater("L"), 5u);
  EXPECT_EQ(ErrorCodeOf(store.Write("L", "k", "v3", 3)),
            ErrorCode::kStaleToken);
  EXPECT_EQ(ErrorCodeOf(store.Write("L", "k2", "v3", 3)),
            ErrorCode::kStaleToken);
  EXPECT_EQ(store.HighWater("L"), 5u);
  EXPECT_EQ(store.Read("L", "k"), std::optional<std::string>("v5"));
  EXPECT_EQ(store.Read("L", "k2"), std::nullopt);
  ASSERT_TRUE(store.Write("L", "k2", "again", 5).ok());
  ASSERT_TRUE(store.Write("L", "k", "v9", 9).ok());
  EXPECT_EQ(store.HighWater("L"), 9u);
  EXPECT_EQ(store.HighWater("M"), 0u);
}

TEST(FencedStore, InvalidWritesAreRefused) {
  FencedStore store;
  EXPECT_EQ(ErrorCodeOf(store.Write("", "k", "v", 1)),
            ErrorCode::kInvalidArguments);
  EXPECT_EQ(ErrorCodeOf(store.Write("L", "", "v", 1)),
            ErrorCode::kInvalidArguments);
  EXPECT_EQ(ErrorCodeOf(store.Write("L", "k", "", 1)),
            ErrorCode::kInvalidArguments);
  EXPECT_EQ(ErrorCodeOf(store.Write("L", "k", "v", 0)),
            ErrorCode::kInvalidArguments);
  EXPECT_EQ(store.HighWater("L"), 0u);
}

// --- StateMachine ---------------------------------------------------------

TEST(StateMachine, FailedOperationStillRetiresLapsedLeases) {
  // Rule 1 applies to operations that then fail validation; the hand-over
  // is at the expiry (10), not at the failing operation (15).
  StateMachine sm;
  ASSERT_TRUE(sm.Apply({0, op::Acquire{"a", "L", 10}}).ok());
  ASSERT_TRUE(sm.Apply({1, op::Acquire{"b", "L", 20}}).ok());
  sm.TakeEvents();
  absl::StatusOr<Reply> failed = sm.Apply({15, op::Acquire{"", "L", 5}});
  EXPECT_EQ(ErrorCodeOf(failed.status()), ErrorCode::kInvalidArguments);
  EXPECT_EQ(sm.table().now(), 15);
  EXPECT_THAT(
      Describe(sm.TakeEvents()),
      ElementsAre("lapsed@10 a L #1", "granted@10 b L #2 exclusive ->30"));
  EXPECT_EQ(sm.table().registered_client_count(), 2u);
}

TEST(StateMachine, FailedWriteStillRetiresLapsedLeases) {
  StateMachine sm;
  ASSERT_TRUE(sm.Apply({0, op::Acquire{"a", "L", 10}}).ok());
  sm.TakeEvents();
  EXPECT_EQ(ErrorCodeOf(sm.Apply({12, op::Write{"L", "k", "v", 0}}).status()),
            ErrorCode::kInvalidArguments);
  EXPECT_THAT(Describe(sm.TakeEvents()),
              ElementsAre("lapsed@10 a L #1"));
  EXPECT_EQ(sm.store().HighWater("L"), 0u);
}

TEST(StateMachine, ApplyAnswersEachKindOfOperation) {
  StateMachine sm;
  absl::StatusOr<Reply> r = sm.Apply({0, op::Acquire{"a", "L", 10, kX}});
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(std::holds_alternative<AcquireOutcome>(*r));
  ExpectGranted(std::get<AcquireOutcome>(*r), 1, 10);

  r = sm.Apply({1, op::Acquire{"b", "L", 10, kS}});
  ASSERT_TRUE(r.ok());
  ExpectQueued(std::get<AcquireOutcome>(*r), 1);

  r = sm.Apply({2, op::Renew{"a", "L", 20}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(std::get<RenewOutcome>(*r).token, 1u);
  EXPECT_EQ(std::get<RenewOutcome>(*r).expires_at, 22);

  // The store does not look at leases: token 2 is accepted.
  r = sm.Apply({3, op::Write{"L", "k", "v", 2}});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(std::holds_alternative<std::monostate>(*r));
  EXPECT_EQ(sm.store().HighWater("L"), 2u);

  r = sm.Apply({4, op::Withdraw{"b", "L"}});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(std::get<bool>(*r));

  r = sm.Apply({5, op::RenewAll{"a"}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(std::get<int>(*r), 1);

  r = sm.Apply({6, op::Release{"a", "L"}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(std::get<ReleaseOutcome>(*r), ReleaseOutcome::kReleased);

  ASSERT_TRUE(sm.Apply({7, op::Acquire{"a", "L", 10}}).ok());
  r = sm.Apply({8, op::ReleaseAll{"a"}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(std::get<int>(*r), 1);

  EXPECT_EQ(ErrorCodeOf(sm.Apply({9, op::Write{"L", "k", "old", 1}}).status()),
            ErrorCode::kStaleToken);
  EXPECT_EQ(sm.store().HighWater("L"), 2u);
}

TEST(StateMachine, AdvanceRetiresLeasesAndNothingElse) {
  StateMachine sm;
  ASSERT_TRUE(sm.Apply({0, op::Acquire{"a", "L", 10}}).ok());
  ASSERT_TRUE(sm.Apply({1, op::Acquire{"b", "L", 10}}).ok());
  absl::StatusOr<Reply> r = sm.Apply({10, op::Advance{}});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(std::holds_alternative<std::monostate>(*r));
  absl::StatusOr<LockView> view = sm.Inspect(10, "L");
  ASSERT_TRUE(view.ok());
  EXPECT_THAT(Holders(*view), ElementsAre("b L #2 exclusive ->20"));
}

TEST(StateMachine, QueriesRejectEmptyNames) {
  StateMachine sm;
  EXPECT_EQ(ErrorCodeOf(sm.Read(0, "", "k").status()),
            ErrorCode::kInvalidArguments);
  EXPECT_EQ(ErrorCodeOf(sm.Read(0, "L", "").status()),
            ErrorCode::kInvalidArguments);
  EXPECT_EQ(ErrorCodeOf(sm.Inspect(0, "").status()),
            ErrorCode::kInvalidArguments);
  EXPECT_EQ(ErrorCodeOf(sm.Status(0, "").status()),
            ErrorCode::kInvalidArguments);
  absl::StatusOr<std::optional<std::string>> read = sm.Read(0, "L", "k");
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(*read, std::nullopt);
}

// --- Snapshots ------------------------------------------------------------

// Applies the same operations to both machines and expects the same answers
// and the same views.
void ExpectSameFuture(StateMachine& a, StateMachine& b) {
  const std::vector<Operation> ops = {
      {20, op::Acquire{"n", "L", 10}},     {21, op::Acquire{"o", "idle", 10}},
      {22, op::Release{"w", "L"}},         {23, op::Write{"L", "k", "x", 2}},
      {60, op::Acquire{"p", "S", 10, kS}}, {61, op::Acquire{"q", "L", 10}},
  };
  for (const Operation& op : ops) {
    absl::StatusOr<Reply> ra = a.Apply(op);
    absl::StatusOr<Reply> rb = b.Apply(op);
    ASSERT_EQ(ra.ok(), rb.ok()) << "at " << op.at;
    if (!ra.ok()) {
      EXPECT_EQ(ra.status(), rb.status());
      continue;
    }
    if (std::holds_alternative<AcquireOutcome>(*ra)) {
      const auto& x = std::get<AcquireOutcome>(*ra);
      const auto& y = std::get<AcquireOutcome>(*rb);
      EXPECT_EQ(x.kind, y.kind) << "at " << op.at;
      EXPECT_EQ(x.token, y.token) << "at " << op.at;
      EXPECT_EQ(x.expires_at, y.expires_at) << "at " << op.at;
      EXPECT_EQ(x.position, y.position) << "at " << op.at;
    }
  }
  for (const char* lock : {"L", "S", "idle"}) {
    absl::StatusOr<LockView> va = a.Inspect(70, lock);
    absl::StatusOr<LockView> vb = b.Inspect(70, lock);
    ASSERT_TRUE(va.ok() && vb.ok());
    EXPECT_EQ(Holders(*va), Holders(*vb)) << lock;
    EXPECT_EQ(Queue(*va), Queue(*vb)) << lock;
  }
  for (const char* client : {"a", "n", "o", "p", "q", "w"}) {
    absl::StatusOr<ClientView> sa = a.Status(70, client);
    absl::StatusOr<ClientView> sb = b.Status(70, client);
    ASSERT_TRUE(sa.ok() && sb.ok());
    EXPECT_EQ(sa->age, sb->age) << client;
    EXPECT_EQ(Holds(*sa), Holds(*sb)) << client;
  }
}

TEST(Snapshot, RestoredMachineContinuesExactlyLikeTheOriginal) {
  StateMachine original;
  ASSERT_TRUE(original.Apply({0, op::Acquire{"a", "idle", 10}}).ok());
  ASSERT_TRUE(original.Apply({1, op::Release{"a", "idle"}}).ok());
  ASSERT_TRUE(original.Apply({2, op::Acquire{"a", "L", 15}}).ok());
  ASSERT_TRUE(original.Apply({3, op::Acquire{"w", "L", 10}}).ok());
  ASSERT_TRUE(original.Apply({4, op::Acquire{"r", "S", 30, kS}}).ok());
  ASSERT_TRUE(original.Apply({5, op::Write{"L", "k", "v", 1}}).ok());

  StateMachine restored;
  ASSERT_TRUE(restored.Restore(original.Snapshot()).ok());
  EXPECT_TRUE(restored.table().CheckInvariants().ok());
  EXPECT_EQ(restored.table().now(), original.table().now());
  EXPECT_EQ(restored.store().HighWater("L"), 1u);
  ExpectSameFuture(original, restored);

  // The idle lock's counter survived the snapshot: o got token 2 at 21.
  absl::StatusOr<ClientView> o = restored.Status(70, "o");
  ASSERT_TRUE(o.ok());
  ASSERT_EQ(o->holds.size(), 0u);  // [21, 31) is over by 70
  absl::StatusOr<Reply> again =
      restored.Apply({71, op::Acquire{"z", "idle", 5}});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(std::get<AcquireOutcome>(*again).token, 3u);
}

TEST(Snapshot, SharedHoldersListedInAnyOrderAreRestoredInTokenOrder) {
  StateMachine original;
  for (const char* client : {"a", "b", "c"}) {
    ASSERT_TRUE(original.Apply({0, op::Acquire{client, "S", 10, kS}}).ok());
  }
  ASSERT_TRUE(original.Apply({1, op::Acquire{"w", "S", 10}}).ok());
  CoreSnapshot snapshot = original.Snapshot();
  ASSERT_EQ(snapshot.locks.size(), 1u);
  std::swap(snapshot.locks[0].holders[0], snapshot.locks[0].holders[2]);
  StateMachine restored;
  ASSERT_TRUE(restored.Restore(snapshot).ok());
  EXPECT_TRUE(restored.table().CheckInvariants().ok());
  absl::StatusOr<LockView> view = restored.Inspect(2, "S");
  ASSERT_TRUE(view.ok());
  EXPECT_THAT(Holders(*view),
              ElementsAre("a S #1 shared ->10", "b S #2 shared ->10",
                          "c S #3 shared ->10"));
  EXPECT_THAT(Queue(*view), ElementsAre("w"));
  // A holder listed twice is refused.
  snapshot.locks[0].holders.push_back(snapshot.locks[0].holders[1]);
  EXPECT_EQ(restored.Restore(snapshot).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(Snapshot, InconsistentSnapshotIsRefusedAndLeavesTheMachineEmpty) {
  StateMachine sm;
  ASSERT_TRUE(sm.Apply({0, op::Acquire{"a", "L", 10}}).ok());
  CoreSnapshot snapshot = sm.Snapshot();
  snapshot.clients.clear();  // the holder is no longer a registered client
  EXPECT_EQ(sm.Restore(snapshot).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(sm.table().held_lease_count(), 0u);
  EXPECT_EQ(sm.table().registered_client_count(), 0u);
}


// --- Paged views ----------------------------------------------------------

// Pages of every size walk the holders by token and then the queue by
// position, each entry exactly once, and end with no cursor: the same
// entries the unpaged Inspect shows.
TEST(LockTablePages, InspectPagesCoverHoldersThenQueueExactlyOnce) {
  LockTable t;
  for (const char* client : {"a", "b", "c", "d", "e"}) {
    MustAcquire(t, 0, client, "L", 100, kS);
  }
  ASSERT_TRUE(t.Release(1, "b", "L").ok());  // a gap in the tokens
  for (const char* client : {"w1", "w2", "w3"}) {
    MustAcquire(t, 1, client, "L", 100, kX);
  }
  const LockView whole = t.Inspect(2, "L");
  ASSERT_EQ(whole.holders.size(), 4u);
  ASSERT_EQ(whole.queue.size(), 3u);
  for (size_t limit = 1; limit <= 8; ++limit) {
    SCOPED_TRACE(limit);
    LockView seen;
    std::vector<int64_t> positions;
    InspectCursor cursor;
    for (int pages = 0;; ++pages) {
      ASSERT_LT(pages, 10);
      LockPage page = t.InspectPage(2, "L", cursor, limit);
      EXPECT_LE(page.holders.size() + page.queue.size(), limit);
      for (const HolderView& h : page.holders) seen.holders.push_back(h);
      for (size_t i = 0; i < page.queue.size(); ++i) {
        seen.queue.push_back(page.queue[i]);
        positions.push_back(page.first_position + static_cast<int64_t>(i));
      }
      if (!page.next.has_value()) break;
      cursor = *page.next;
    }
    EXPECT_EQ(Holders(seen), Holders(whole));
    EXPECT_EQ(Queue(seen), Queue(whole));
    EXPECT_EQ(positions, (std::vector<int64_t>{1, 2, 3}));
  }
}

TEST(LockTablePages, InspectPageOfAnUnknownLockIsAnEmptyLastPage) {
  LockTable t;
  const LockPage page = t.InspectPage(0, "nobody", InspectCursor{}, 10);
  EXPECT_TRUE(page.holders.empty());
  EXPECT_TRUE(page.queue.empty());
  EXPECT_FALSE(page.next.has_value());
}

TEST(LockTablePages, StatusPagesCoverHoldsByLockNameExactlyOnce) {
  LockTable t;
  for (const char* lock : {"d", "a", "c", "b", "e"}) {
    MustAcquire(t, 0, "x", lock, 100);
  }
  MustAcquire(t, 0, "y", "q", 100);
  MustAcquire(t, 1, "x", "q", 100);  // x waits for q
  const ClientView whole = t.Status(2, "x");
  for (size_t limit = 1; limit <= 6; ++limit) {
    SCOPED_TRACE(limit);
    std::vector<HolderView> seen;
    std::string after;
    for (int pages = 0;; ++pages) {
      ASSERT_LT(pages, 10);
      ClientPage page = t.StatusPage(2, "x", after, limit);
      EXPECT_EQ(page.age, whole.age);
      EXPECT_EQ(page.waiting, whole.waiting);
      EXPECT_LE(page.holds.size(), limit);
      seen.insert(seen.end(), page.holds.begin(), page.holds.end());
      if (!page.next_after.has_value()) break;
      after = *page.next_after;
    }
    EXPECT_EQ(Holders(LockView{seen, {}}), Holds(whole));
  }
  EXPECT_FALSE(t.StatusPage(2, "stranger", "", 3).age.has_value());
}

// Registration ages are distinct; a snapshot that gives two clients one age
// (a damaged or forged file whose checksum holds) is refused, not restored
// into a table whose idle index would merge them.
TEST(Snapshot, TwoClientsOfOneAgeAreRefused) {
  StateMachine sm;
  ASSERT_TRUE(sm.Apply({0, op::Acquire{"a", "L", 10}}).ok());
  ASSERT_TRUE(sm.Apply({0, op::Acquire{"b", "M", 10}}).ok());
  CoreSnapshot snapshot = sm.Snapshot();
  ASSERT_EQ(snapshot.clients.size(), 2u);
  snapshot.clients[1].age = snapshot.clients[0].age;
  EXPECT_EQ(sm.Restore(snapshot).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(sm.table().registered_client_count(), 0u);
}

}  // namespace
}  // namespace leasekeeper
