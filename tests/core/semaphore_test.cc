// Counting semaphores in the core (LockTable, daemon-only): capacity, FIFO,
// hand-over instants, mismatches, withdrawal, snapshots, and deadlock
// detection under the AND-OR rule (core/lock_table.h). Time is the tick
// each call passes; nothing reads a clock.
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/errors.h"
#include "core/lock_table.h"
#include "core/snapshot.h"
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
constexpr LockMode kSem = LockMode::kSemaphore;

// "client #token ->expires_at" per holder of `lock` as of `now`.
std::vector<std::string> Holders(LockTable& t, Tick now,
                                 const std::string& lock) {
  std::vector<std::string> out;
  for (const HolderView& h : t.Inspect(now, lock).holders) {
    out.push_back(h.client + " #" + std::to_string(h.token) + " ->" +
                  std::to_string(h.expires_at));
  }
  return out;
}
std::vector<std::string> Queue(LockTable& t, Tick now,
                               const std::string& lock) {
  std::vector<std::string> out;
  for (const WaiterView& w : t.Inspect(now, lock).queue) {
    out.push_back(w.client);
  }
  return out;
}

// "granted@at client #token ->expires_at" per queue grant, "lapsed@at
// client #token" per lapse.
std::vector<std::string> Handovers(LockTable& t) {
  std::vector<std::string> out;
  for (const Event& e : t.TakeEvents()) {
    if (e.kind == Event::Kind::kGrantedFromQueue) {
      out.push_back("granted@" + std::to_string(e.at) + " " + e.client +
                    " #" + std::to_string(e.token) + " ->" +
                    std::to_string(e.expires_at));
    } else if (e.kind == Event::Kind::kLapsed) {
      out.push_back("lapsed@" + std::to_string(e.at) + " " + e.client + " #" +
                    std::to_string(e.token));
    }
  }
  return out;
}

AcquireOutcome Sem(LockTable& t, Tick now, const std::string& client,
                   const std::string& lock, int64_t ttl, uint32_t capacity) {
  return MustAcquire(t, now, client, lock, ttl, kSem, capacity);
}

std::optional<ErrorCode> AcquireError(LockTable& t, Tick now,
                                      const std::string& client,
                                      const std::string& lock, LockMode mode,
                                      uint32_t capacity) {
  absl::StatusOr<AcquireOutcome> out =
      t.Acquire(now, client, lock, 10, mode, capacity);
  if (out.ok()) return std::nullopt;
  return ErrorCodeOf(out.status());
}

// --- Capacity -------------------------------------------------------------

TEST(Semaphore, UpToCapacityHoldersEachWithOwnLeaseAndToken) {
  LockTable t;
  ExpectGranted(Sem(t, 0, "a", "S", 10, 3), 1, 10);
  ExpectGranted(Sem(t, 1, "b", "S", 20, 3), 2, 21);
  ExpectGranted(Sem(t, 2, "c", "S", 5, 3), 3, 7);
  ExpectQueued(Sem(t, 3, "d", "S", 5, 3), 1);
  EXPECT_THAT(Holders(t, 3, "S"),
              ElementsAre("a #1 ->10", "b #2 ->21", "c #3 ->7"));
  EXPECT_EQ(t.Inspect(3, "S").capacity, 3u);
  // Renewing one holder's lease moves only that lease.
  absl::StatusOr<RenewOutcome> renewed = t.Renew(4, "b", "S", 50);
  ASSERT_TRUE(renewed.ok());
  EXPECT_EQ(renewed->token, 2u);
  EXPECT_EQ(renewed->expires_at, 54);
  EXPECT_THAT(Holders(t, 4, "S"),
              ElementsAre("a #1 ->10", "b #2 ->54", "c #3 ->7"));
  EXPECT_TRUE(t.CheckInvariants().ok()) << t.CheckInvariants();
}

TEST(Semaphore, CapacityReachedQueuesAndAFreedPermitGrantsTheHeadAtOnce) {
  LockTable t;
  Sem(t, 0, "a", "S", 100, 2);
  Sem(t, 0, "b", "S", 100, 2);
  ExpectQueued(Sem(t, 1, "c", "S", 30, 2), 1);
  ExpectQueued(Sem(t, 2, "d", "S", 30, 2), 2);
  t.TakeEvents();
  ASSERT_EQ(t.Release(7, "b", "S").value(), ReleaseOutcome::kReleased);
  // One permit freed: exactly the head is granted, at the release instant.
  EXPECT_THAT(Handovers(t), ElementsAre("granted@7 c #3 ->37"));
  EXPECT_THAT(Queue(t, 7, "S"), ElementsAre("d"));
  ASSERT_EQ(t.Release(8, "a", "S").value(), ReleaseOutcome::kReleased);
  EXPECT_THAT(Handovers(t), ElementsAre("granted@8 d #4 ->38"));
  EXPECT_THAT(Holders(t, 8, "S"), ElementsAre("c #3 ->37", "d #4 ->38"));
  EXPECT_TRUE(t.CheckInvariants().ok()) << t.CheckInvariants();
}

TEST(Semaphore, NewcomerNeverOvertakesTheQueueEvenWithAPermitFreeAtItsTurn) {
  // Capacity 2: a holds, b holds, c waits. When a's lease lapses at 10 the
  // permit goes to c (the head) at 10, not to e who asks at 10.
  LockTable t;
  Sem(t, 0, "a", "S", 10, 2);
  Sem(t, 0, "b", "S", 100, 2);
  ExpectQueued(Sem(t, 1, "c", "S", 40, 2), 1);
  ExpectQueued(Sem(t, 10, "e", "S", 40, 2), 1);
  EXPECT_THAT(Holders(t, 10, "S"), ElementsAre("b #2 ->100", "c #3 ->50"));
  EXPECT_THAT(Queue(t, 10, "S"), ElementsAre("e"));
}

TEST(Semaphore, FifoWithMixedTtlsGrantsInArrivalOrder) {
  // Capacity 1 with waiters whose ttls differ: each is granted in arrival
  // order at the instant the lease before it ended, and keeps its own ttl.
  LockTable t;
  Sem(t, 0, "a", "S", 10, 1);
  Sem(t, 1, "long", "S", 50, 1);
  Sem(t, 2, "short", "S", 1, 1);
  Sem(t, 3, "mid", "S", 7, 1);
  t.TakeEvents();
  EXPECT_THAT(Holders(t, 62, "S"), ElementsAre("mid #4 ->68"));
  EXPECT_THAT(Handovers(t),
              ElementsAre("lapsed@10 a #1", "granted@10 long #2 ->60",
                          "lapsed@60 long #2", "granted@60 short #3 ->61",
                          "lapsed@61 short #3", "granted@61 mid #4 ->68"));
}

TEST(Semaphore, LapsesInChainsHandPermitsOverAtTheExactInstants) {
  // Capacity 2: a [0,10), b [0,20); queue c ttl 5, d ttl 30, e ttl 1.
  // a lapses at 10: c gets [10,15). c lapses at 15: d gets [15,45). b lapses
  // at 20: e gets [20,21), which lapses at 21 with nobody left to wait. All
  // of it noticed by one inspect at 30.
  LockTable t;
  Sem(t, 0, "a", "S", 10, 2);
  Sem(t, 0, "b", "S", 20, 2);
  Sem(t, 1, "c", "S", 5, 2);
  Sem(t, 2, "d", "S", 30, 2);
  Sem(t, 3, "e", "S", 1, 2);
  t.TakeEvents();
  EXPECT_THAT(Holders(t, 30, "S"), ElementsAre("d #4 ->45"));
  EXPECT_THAT(Queue(t, 30, "S"), IsEmpty());
  EXPECT_THAT(Handovers(t),
              ElementsAre("lapsed@10 a #1", "granted@10 c #3 ->15",
                          "lapsed@15 c #3", "granted@15 d #4 ->45",
                          "lapsed@20 b #2", "granted@20 e #5 ->21",
                          "lapsed@21 e #5"));
  EXPECT_TRUE(t.CheckInvariants().ok()) << t.CheckInvariants();
}

// --- Kind and capacity of a lock -------------------------------------------

TEST(Semaphore, CapacityMismatchIsRefusedWhileTheLockHasHoldersOrWaiters) {
  LockTable t;
  Sem(t, 0, "a", "S", 10, 1);
  EXPECT_EQ(AcquireError(t, 1, "b", "S", kSem, 2),
            ErrorCode::kCapacityMismatch);
  ExpectQueued(Sem(t, 1, "b", "S", 100, 1), 1);
  ASSERT_TRUE(t.Release(2, "a", "S").ok());
  // b holds now (a waiter alone would be enough to keep the capacity).
  EXPECT_EQ(AcquireError(t, 3, "c", "S", kSem, 5),
            ErrorCode::kCapacityMismatch);
  // A refusal changes nothing: c is not registered and not queued.
  EXPECT_FALSE(t.Status(3, "c").age.has_value());
  EXPECT_THAT(Queue(t, 3, "S"), IsEmpty());
  EXPECT_EQ(t.registered_client_count(), 2u);
}

TEST(Semaphore, CapacityStandsAcrossAHandOver) {
  // At 10 a lapses and b is granted at that instant: the lock is never idle
  // in between, so it stays a semaphore of 1.
  LockTable t;
  Sem(t, 0, "a", "S", 10, 1);
  Sem(t, 1, "b", "S", 10, 1);
  EXPECT_EQ(AcquireError(t, 15, "c", "S", kSem, 3),
            ErrorCode::kCapacityMismatch);
  EXPECT_THAT(Holders(t, 15, "S"), ElementsAre("b #2 ->20"));
}

TEST(Semaphore, FirstAcquirerOfAnIdleLockSetsTheCapacityAndTheKind) {
  LockTable t;
  Sem(t, 0, "a", "S", 10, 1);
  ASSERT_TRUE(t.Release(1, "a", "S").ok());
  EXPECT_EQ(t.Inspect(1, "S").capacity, 0u);  // idle: no capacity
  // Idle again: another capacity, and then another kind, are fine; the
  // fencing counter carries on through all of them.
  ExpectGranted(Sem(t, 2, "a", "S", 10, 4), 2, 12);
  ExpectGranted(Sem(t, 2, "b", "S", 10, 4), 3, 12);
  EXPECT_EQ(t.Inspect(2, "S").capacity, 4u);
  EXPECT_THAT(Holders(t, 12, "S"), IsEmpty());  // both lapsed at 12
  ExpectGranted(MustAcquire(t, 13, "c", "S", 10), 4, 23);
  EXPECT_EQ(t.Inspect(13, "S").capacity, 0u);
}

TEST(Semaphore, PlainRequestOnASemaphoreAndTheReverseAreModeMismatch) {
  LockTable t;
  Sem(t, 0, "a", "S", 10, 2);
  EXPECT_EQ(AcquireError(t, 1, "b", "S", kX, 0), ErrorCode::kModeMismatch);
  EXPECT_EQ(AcquireError(t, 1, "b", "S", kS, 0), ErrorCode::kModeMismatch);
  MustAcquire(t, 0, "a", "R", 10, kS);
  MustAcquire(t, 0, "a", "W", 10, kX);
  EXPECT_EQ(AcquireError(t, 1, "b", "R", kSem, 2), ErrorCode::kModeMismatch);
  EXPECT_EQ(AcquireError(t, 1, "b", "W", kSem, 1), ErrorCode::kModeMismatch);
  EXPECT_FALSE(t.Status(1, "b").age.has_value());
  EXPECT_TRUE(t.CheckInvariants().ok()) << t.CheckInvariants();
}

TEST(Semaphore, MismatchesKeepTheContractsTextAndDetailTheLocksKind) {
  LockTable t;
  Sem(t, 0, "a", "S", 10, 4);
  MustAcquire(t, 0, "a", "R", 10, kS);
  MustAcquire(t, 0, "a", "W", 10, kX);
  struct Case {
    std::string lock;
    LockMode mode;
    uint32_t capacity;
    std::string message;
    std::string detail;
  } cases[] = {
      {"S", kSem, 3, "capacity mismatch", "S is a semaphore of 4, asked 3"},
      {"S", kX, 0, "mode mismatch", "S is a semaphore of 4"},
      {"R", kSem, 2, "mode mismatch", "R is held shared"},
      {"W", kSem, 2, "mode mismatch", "W is held exclusive"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<AcquireOutcome> out =
        t.Acquire(1, "b", c.lock, 10, c.mode, c.capacity);
    ASSERT_FALSE(out.ok()) << c.detail;
    EXPECT_EQ(out.status().message(), c.message) << "the contract's text";
    EXPECT_EQ(ErrorDetailOf(out.status()), c.detail);
  }
  EXPECT_EQ(ErrorDetailOf(MakeError(ErrorCode::kNotHolder)), "");
}

TEST(Semaphore, CapacityOutOfRangeOrOnAPlainModeIsInvalidArguments) {
  LockTable t;
  EXPECT_EQ(AcquireError(t, 0, "a", "S", kSem, 0),
            ErrorCode::kInvalidArguments);
  EXPECT_EQ(AcquireError(t, 0, "a", "S", kSem, kMaxSemaphoreCapacity + 1),
            ErrorCode::kInvalidArguments);
  EXPECT_EQ(AcquireError(t, 0, "a", "S", kX, 3), ErrorCode::kInvalidArguments);
  // Arguments before the ttl: a bad capacity with a bad ttl says arguments.
  absl::StatusOr<AcquireOutcome> both = t.Acquire(0, "a", "S", 0, kSem, 0);
  EXPECT_EQ(ErrorCodeOf(both.status()), ErrorCode::kInvalidArguments);
  EXPECT_EQ(t.registered_client_count(), 0u);
  ExpectGranted(Sem(t, 0, "a", "S", 10, kMaxSemaphoreCapacity), 1, 10);
}

TEST(Semaphore, BusyIsCheckedBeforeTheMismatch) {
  LockTable t;
  Sem(t, 0, "a", "S", 10, 2);
  EXPECT_EQ(AcquireError(t, 1, "a", "S", kSem, 3), ErrorCode::kClientBusy);
}

// --- Withdrawal and session loss ------------------------------------------

TEST(Semaphore, WithdrawnWaiterLetsThoseBehindMoveUpAndTheNextPermitGoesOn) {
  LockTable t;
  Sem(t, 0, "a", "S", 100, 1);
  Sem(t, 1, "b", "S", 10, 1);
  Sem(t, 2, "c", "S", 20, 1);
  ASSERT_EQ(t.Release(3, "b", "S").value(), ReleaseOutcome::kWithdrawn);
  EXPECT_THAT(Queue(t, 3, "S"), ElementsAre("c"));
  t.TakeEvents();
  ASSERT_EQ(t.Release(5, "a", "S").value(), ReleaseOutcome::kReleased);
  EXPECT_THAT(Handovers(t), ElementsAre("granted@5 c #2 ->25"));
}

TEST(Semaphore, LastWaiterWithdrawnLeavesTheLockIdleForAnyCapacity) {
  // A lock with only a waiter left is not idle; once it withdraws (and the
  // holder is gone) the next acquirer may choose any capacity.
  LockTable t;
  Sem(t, 0, "a", "S", 10, 1);
  Sem(t, 1, "b", "S", 100, 1);
  EXPECT_TRUE(t.Withdraw(2, "b", "S"));
  ASSERT_TRUE(t.Release(3, "a", "S").ok());
  ExpectGranted(Sem(t, 4, "c", "S", 10, 7), 2, 14);
  EXPECT_EQ(t.Inspect(4, "S").capacity, 7u);
}

TEST(Semaphore, ReleaseAllFreesEveryPermitTheClientHeldAtThatInstant) {
  LockTable t;
  Sem(t, 0, "a", "S", 100, 1);
  Sem(t, 0, "a", "T", 100, 1);
  Sem(t, 1, "b", "S", 10, 1);
  Sem(t, 1, "c", "T", 10, 1);
  t.TakeEvents();
  EXPECT_EQ(t.ReleaseAll(5, "a"), 2);
  EXPECT_THAT(Handovers(t),
              ElementsAre("granted@5 b #2 ->15", "granted@5 c #2 ->15"));
}

// --- Deadlocks: the AND-OR rule -------------------------------------------

TEST(SemaphoreDeadlock, CycleThroughASemaphoreWithAFreeHolderAbortsNobody) {
  // S has capacity 2, held by a and f; c holds X. a waits for X (a -> c).
  // c's request for S closes the cycle c -> a -> c, but f waits for nothing
  // and will release its permit, which goes to c, who then releases X to a.
  LockTable t;
  Sem(t, 0, "a", "S", 100, 2);
  Sem(t, 0, "f", "S", 100, 2);
  MustAcquire(t, 0, "c", "X", 100);
  ExpectQueued(MustAcquire(t, 1, "a", "X", 100), 1);
  AcquireOutcome out = Sem(t, 2, "c", "S", 100, 2);
  ExpectQueued(out, 1);
  EXPECT_THAT(out.aborted, IsEmpty());
  EXPECT_TRUE(t.CheckInvariants().ok()) << t.CheckInvariants();
  // And it does resolve: f releases, c gets S, c releases X, a gets X.
  ASSERT_TRUE(t.Release(3, "f", "S").ok());
  ASSERT_TRUE(t.Release(4, "c", "X").ok());
  EXPECT_THAT(Holders(t, 4, "S"), ElementsAre("a #1 ->100", "c #3 ->103"));
  EXPECT_THAT(Holders(t, 4, "X"), ElementsAre("a #2 ->104"));
}

TEST(SemaphoreDeadlock, FreeHolderWhoseOwnWaitDeadlocksAbortsTheYoungest) {
  // Continuing the free-holder cycle: f (the free holder) now asks for X.
  // Every holder of S waits for X, held by c, who waits for S: a true
  // deadlock, found by f's request. Ages: a 1, f 2, c 3; c is the youngest
  // on it and loses X (to a, the head) and its place in S's queue.
  LockTable t;
  Sem(t, 0, "a", "S", 100, 2);
  Sem(t, 0, "f", "S", 100, 2);
  MustAcquire(t, 0, "c", "X", 100);
  MustAcquire(t, 1, "a", "X", 100);
  Sem(t, 2, "c", "S", 100, 2);
  AcquireOutcome out = MustAcquire(t, 3, "f", "X", 50);
  ExpectQueued(out, 1);
  EXPECT_THAT(out.aborted, ElementsAre("c"));
  EXPECT_THAT(Holders(t, 3, "X"), ElementsAre("a #2 ->103"));
  EXPECT_THAT(Queue(t, 3, "X"), ElementsAre("f"));
  EXPECT_THAT(Queue(t, 3, "S"), IsEmpty());
  EXPECT_FALSE(t.Status(3, "c").age.has_value());
  EXPECT_TRUE(t.CheckInvariants().ok()) << t.CheckInvariants();
}

TEST(SemaphoreDeadlock, TrueDeadlockBetweenASemaphoreAndAnExclusiveLock) {
  // c 1 holds X; a 2 and b 3 hold both permits of S and wait for X
  // (a -> c, b -> a, c). c's request for S: its only way out is a holder of
  // S releasing, and both wait for c. C = {c, a, b}; b is the youngest:
  // its wait for X goes, its permit passes to c at 3 with c's ttl, and c no
  // longer waits: ["granted", 3, 33] with b aborted.
  LockTable t;
  MustAcquire(t, 0, "c", "X", 100);
  Sem(t, 0, "a", "S", 100, 2);
  Sem(t, 0, "b", "S", 100, 2);
  MustAcquire(t, 1, "a", "X", 100);
  MustAcquire(t, 2, "b", "X", 100);
  AcquireOutcome out = Sem(t, 3, "c", "S", 30, 2);
  ExpectGranted(out, 3, 33);
  EXPECT_THAT(out.aborted, ElementsAre("b"));
  EXPECT_THAT(Holders(t, 3, "S"), ElementsAre("a #1 ->100", "c #3 ->33"));
  EXPECT_THAT(Queue(t, 3, "X"), ElementsAre("a"));
  EXPECT_TRUE(t.CheckInvariants().ok()) << t.CheckInvariants();
}

TEST(SemaphoreDeadlock, RequesterIsTheVictimWhenItIsTheYoungest) {
  // a 1, b 2 hold S (capacity 2) and wait for X; c 3 holds X and asks for
  // S: c is the youngest, ["deadlock", ["c"]], and X passes to a at 3.
  LockTable t;
  Sem(t, 0, "a", "S", 100, 2);
  Sem(t, 0, "b", "S", 100, 2);
  MustAcquire(t, 0, "c", "X", 100);
  MustAcquire(t, 1, "a", "X", 100);
  MustAcquire(t, 2, "b", "X", 100);
  AcquireOutcome out = Sem(t, 3, "c", "S", 30, 2);
  EXPECT_EQ(out.kind, AcquireOutcome::Kind::kDeadlock);
  EXPECT_THAT(out.aborted, ElementsAre("c"));
  EXPECT_THAT(Holders(t, 3, "X"), ElementsAre("a #2 ->103"));
  EXPECT_THAT(Queue(t, 3, "X"), ElementsAre("b"));
  EXPECT_TRUE(t.CheckInvariants().ok()) << t.CheckInvariants();
}

TEST(SemaphoreDeadlock, WaitersAheadOnTheSemaphoreAreOnTheDeadlockToo) {
  // S capacity 1 held by h 1; w 2 waits for S; h's request for X, held by
  // z 3, is free (z waits for nothing). Then z asks for S behind w: z -> w
  // -> h -> z. Every client is stuck; w (age 2) is on it only as a waiter
  // ahead, z (age 3) is the youngest: the requester is aborted.
  LockTable t;
  Sem(t, 0, "h", "S", 100, 1);
  Sem(t, 1, "w", "S", 100, 1);
  MustAcquire(t, 1, "z", "X", 100);
  ExpectQueued(MustAcquire(t, 2, "h", "X", 100), 1);
  AcquireOutcome out = Sem(t, 3, "z", "S", 100, 1);
  EXPECT_EQ(out.kind, AcquireOutcome::Kind::kDeadlock);
  EXPECT_THAT(out.aborted, ElementsAre("z"));
  EXPECT_THAT(Holders(t, 3, "X"), ElementsAre("h #2 ->103"));
  EXPECT_TRUE(t.CheckInvariants().ok()) << t.CheckInvariants();
}

TEST(SemaphoreDeadlock, SharedHeadNeedsEveryHolderEvenWhenOneIsFree) {
  // The AND side keeps the contract: w waits for R, held shared by r1 (free)
  // and r2; then r2 asks for S (capacity 1), held by w: r2 -> w -> {r1, r2}.
  // r1 is free but w needs r2's release too: w and r2 are deadlocked, r1 is
  // not on it. Ages w 1, r1 2, r2 3: r2 is the youngest and the requester.
  LockTable t;
  Sem(t, 0, "w", "S", 100, 1);
  MustAcquire(t, 0, "r1", "R", 100, kS);
  MustAcquire(t, 0, "r2", "R", 100, kS);
  ExpectQueued(MustAcquire(t, 1, "w", "R", 100), 1);
  AcquireOutcome out = Sem(t, 2, "r2", "S", 100, 1);
  EXPECT_EQ(out.kind, AcquireOutcome::Kind::kDeadlock);
  EXPECT_THAT(out.aborted, ElementsAre("r2"));
  EXPECT_TRUE(t.CheckInvariants().ok()) << t.CheckInvariants();
}

TEST(SemaphoreDeadlock, SharedHeadIsFreeOnceEveryHolderIsFree) {
  // The AND side when it does resolve: R is held shared by r1 and r2, and
  // c's exclusive request on R waits for both. r1 waits for S (capacity 2),
  // held by f (free) and c: c -> r1 -> c is a cycle, but r1 is freed by f's
  // release and r2 waits for nothing, so every holder of R is free and so
  // is c. Nobody is aborted.
  LockTable t;
  Sem(t, 0, "f", "S", 100, 2);
  Sem(t, 0, "c", "S", 100, 2);
  MustAcquire(t, 0, "r1", "R", 100, kS);
  MustAcquire(t, 0, "r2", "R", 100, kS);
  ExpectQueued(Sem(t, 1, "r1", "S", 100, 2), 1);
  AcquireOutcome out = MustAcquire(t, 2, "c", "R", 100);
  ExpectQueued(out, 1);
  EXPECT_THAT(out.aborted, IsEmpty());
  EXPECT_TRUE(t.CheckInvariants().ok()) << t.CheckInvariants();
  // And it does resolve: f releases, r1 gets S and then lets R go, r2 too.
  ASSERT_TRUE(t.Release(3, "f", "S").ok());
  ASSERT_TRUE(t.Release(4, "r1", "R").ok());
  ASSERT_TRUE(t.Release(5, "r2", "R").ok());
  EXPECT_THAT(Holders(t, 5, "R"), ElementsAre("c #3 ->105"));
}

// --- Snapshots -------------------------------------------------------------

TEST(Semaphore, SnapshotKeepsTheCapacityOfAHeldSemaphore) {
  StateMachine sm;
  ASSERT_TRUE(sm.Apply({0, op::Acquire{"a", "S", 10, kSem, 3}}).ok());
  ASSERT_TRUE(sm.Apply({0, op::Acquire{"b", "S", 10, kSem, 3}}).ok());
  CoreSnapshot snapshot = sm.Snapshot();
  StateMachine restored;
  ASSERT_TRUE(restored.Restore(snapshot).ok());
  EXPECT_EQ(restored.Inspect(1, "S")->capacity, 3u);
  absl::StatusOr<Reply> mismatch =
      restored.Apply({1, op::Acquire{"c", "S", 10, kSem, 2}});
  EXPECT_EQ(ErrorCodeOf(mismatch.status()), ErrorCode::kCapacityMismatch);
  absl::StatusOr<Reply> third =
      restored.Apply({1, op::Acquire{"c", "S", 10, kSem, 3}});
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(std::get<AcquireOutcome>(*third).kind,
            AcquireOutcome::Kind::kGranted);
  EXPECT_TRUE(restored.table().CheckInvariants().ok());
}

TEST(Semaphore, RestoreRefusesAnInconsistentSemaphore) {
  StateMachine sm;
  ASSERT_TRUE(sm.Apply({0, op::Acquire{"a", "S", 10, kSem, 1}}).ok());
  ASSERT_TRUE(sm.Apply({0, op::Acquire{"b", "S", 10, kSem, 1}}).ok());
  const CoreSnapshot good = sm.Snapshot();
  ASSERT_TRUE(StateMachine().Restore(good).ok());

  auto lock_s = [](CoreSnapshot& s) -> CoreSnapshot::Lock& {
    for (CoreSnapshot::Lock& lock : s.locks) {
      if (lock.name == "S") return lock;
    }
    return s.locks.front();
  };
  CoreSnapshot plain_holder = good;
  lock_s(plain_holder).capacity = 0;  // semaphore holders on a plain lock
  EXPECT_FALSE(StateMachine().Restore(plain_holder).ok());
  CoreSnapshot too_big = good;
  lock_s(too_big).capacity = kMaxSemaphoreCapacity + 1;
  EXPECT_FALSE(StateMachine().Restore(too_big).ok());
  CoreSnapshot grantable = good;
  lock_s(grantable).capacity = 2;  // b would have been granted
  EXPECT_FALSE(StateMachine().Restore(grantable).ok());
  CoreSnapshot idle = good;
  lock_s(idle).holders.clear();
  lock_s(idle).queue.clear();  // an idle lock has no capacity
  EXPECT_FALSE(StateMachine().Restore(idle).ok());
}

}  // namespace
}  // namespace leasekeeper
