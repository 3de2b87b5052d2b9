// The lease rules (contract rules 1-8) and their Part 2 and Part 3
// refinements, one test per rule, through run(operations).
//
// Every expected value below is derived by hand from the contract's text;
// the comments show the derivation where it is not obvious.
#include <string_view>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "replay/replay.h"
#include "tests/core/expect_run.h"

namespace leasekeeper {
namespace {

// --- Rule 2: leases -------------------------------------------------------

TEST(LeaseRules, LeaseIsUsableWhileTsIsBeforeItsExpiry) {
  ExpectRunGives(R"([["acquire", 0, "a", "L", 10],
                     ["renew", 9, "a", "L", 10],
                     ["inspect", 18, "L"]])",
                 R"([["granted", 1, 10],
                     ["renewed", 1, 19],
                     {"holders": [["a", "exclusive", 1, 19]], "queue": []}])");
}

TEST(LeaseRules, LeaseIsGoneAtItsExpiryInstant) {
  // [0, 10): at ts 10 renew fails, release is not holder, and another
  // client takes the lock on the spot.
  ExpectRunGives(R"([["acquire", 0, "a", "L", 10],
                     ["inspect", 9, "L"],
                     ["inspect", 10, "L"],
                     ["renew", 10, "a", "L", 10],
                     ["release", 10, "a", "L"],
                     ["acquire", 10, "b", "L", 5]])",
                 R"([["granted", 1, 10],
                     {"holders": [["a", "exclusive", 1, 10]], "queue": []},
                     {"holders": [], "queue": []},
                     "error: not holder",
                     "error: not holder",
                     ["granted", 2, 15]])");
}

TEST(LeaseRules, RenewMeasuresFromTheRenewNotTheOldExpiry) {
  // Renew at 4 for 10 -> 14 (not 10 + 10 = 20).
  ExpectRunGives(R"([["acquire", 0, "a", "L", 10],
                     ["renew", 4, "a", "L", 10],
                     ["inspect", 13, "L"],
                     ["inspect", 14, "L"]])",
                 R"([["granted", 1, 10],
                     ["renewed", 1, 14],
                     {"holders": [["a", "exclusive", 1, 14]], "queue": []},
                     {"holders": [], "queue": []}])");
}

TEST(LeaseRules, RenewCanShortenALease) {
  // [0, 100) renewed at 10 for 5 -> [.., 15). b queues at 14, is handed the
  // lock at 15 ([15, 25), token 2); c arriving at 15 queues behind b.
  ExpectRunGives(R"([["acquire", 0, "a", "L", 100],
                     ["renew", 10, "a", "L", 5],
                     ["acquire", 14, "b", "L", 10],
                     ["acquire", 15, "c", "L", 10],
                     ["inspect", 15, "L"]])",
                 R"([["granted", 1, 100],
                     ["renewed", 1, 15],
                     ["queued", 1],
                     ["queued", 1],
                     {"holders": [["b", "exclusive", 2, 25]], "queue": [["c", "exclusive"]]}])");
}

TEST(LeaseRules, RenewKeepsTheTokenAndChangesNothingElse) {
  ExpectRunGives(R"([["acquire", 0, "a", "L", 10],
                     ["acquire", 1, "b", "L", 10],
                     ["renew", 5, "a", "L", 20],
                     ["inspect", 6, "L"],
                     ["status", 6, "a"],
                     ["status", 6, "b"]])",
                 R"([["granted", 1, 10],
                     ["queued", 1],
                     ["renewed", 1, 25],
                     {"holders": [["a", "exclusive", 1, 25]], "queue": [["b", "exclusive"]]},
                     {"age": 1, "holds": [["L", "exclusive", 1, 25]], "waiting": null},
                     {"age": 2, "holds": [], "waiting": "L"}])");
}

TEST(LeaseRules, RenewByAWaiterOrAStrangerIsNotHolder) {
  ExpectRunGives(R"([["acquire", 0, "a", "L", 10],
                     ["acquire", 1, "b", "L", 10],
                     ["renew", 2, "b", "L", 10],
                     ["renew", 2, "c", "L", 10],
                     ["renew", 2, "a", "M", 10],
                     ["inspect", 3, "L"]])",
                 R"([["granted", 1, 10],
                     ["queued", 1],
                     "error: not holder",
                     "error: not holder",
                     "error: not holder",
                     {"holders": [["a", "exclusive", 1, 10]], "queue": [["b", "exclusive"]]}])");
}

// --- Rule 3: hand-over instant --------------------------------------------

TEST(LeaseRules, HandOverHappensAtTheLapseInstantNotTheObservingOp) {
  // a's lease ends at 10; b (ttl 20) holds [10, 30), not [25, 45).
  ExpectRunGives(R"([["acquire", 0, "a", "L", 10],
                     ["acquire", 1, "b", "L", 20],
                     ["inspect", 25, "L"],
                     ["inspect", 30, "L"]])",
                 R"([["granted", 1, 10],
                     ["queued", 1],
                     {"holders": [["b", "exclusive", 2, 30]], "queue": []},
                     {"holders": [], "queue": []}])");
}

TEST(LeaseRules, HandOverByReleaseStartsAtTheReleaseTs) {
  ExpectRunGives(R"([["acquire", 0, "a", "L", 10],
                     ["acquire", 1, "b", "L", 20],
                     ["release", 4, "a", "L"],
                     ["inspect", 5, "L"]])",
                 R"([["granted", 1, 10],
                     ["queued", 1],
                     "released",
                     {"holders": [["b", "exclusive", 2, 24]], "queue": []}])");
}

TEST(LeaseRules, LapseChainGrantsEachWaiterAtThePreviousExpiry) {
  // a [0, 10) -> b [10, 15) -> c [15, 22) -> d [22, 122), tokens 1..4.
  ExpectRunGives(R"([["acquire", 0, "a", "L", 10],
                     ["acquire", 1, "b", "L", 5],
                     ["acquire", 2, "c", "L", 7],
                     ["acquire", 3, "d", "L", 100],
                     ["inspect", 30, "L"],
                     ["status", 30, "d"]])",
                 R"([["granted", 1, 10],
                     ["queued", 1],
                     ["queued", 2],
                     ["queued", 3],
                     {"holders": [["d", "exclusive", 4, 122]], "queue": []},
                     {"age": 4, "holds": [["L", "exclusive", 4, 122]], "waiting": null}])");
}

TEST(LeaseRules, LapseChainEndsWhenNobodyWaits) {
  // a [0, 10) -> b [10, 15) -> free. The counter continues at 3.
  ExpectRunGives(R"([["acquire", 0, "a", "L", 10],
                     ["acquire", 1, "b", "L", 5],
                     ["inspect", 100, "L"],
                     ["acquire", 100, "e", "L", 10]])",
                 R"([["granted", 1, 10],
                     ["queued", 1],
                     {"holders": [], "queue": []},
                     ["granted", 3, 110]])");
}

TEST(LeaseRules, ChainedLeaseEndingAtTheCurrentTsIsAlreadyGone) {
  // b's handed-over lease is [10, 15); at ts 15 it is retired too, so c
  // finds the lock free and takes it on the spot with token 3.
  ExpectRunGives(R"([["acquire", 0, "a", "L", 10],
                     ["acquire", 1, "b", "L", 5],
                     ["acquire", 15, "c", "L", 3]])",
                 R"([["granted", 1, 10],
                     ["queued", 1],
                     ["granted", 3, 18]])");
}

TEST(LeaseRules, LapseChainsAcrossSeveralLocksAreProcessedInTimeOrder) {
  // L1: a [0,10) -> b [10,20) -> c [20,30).
  // L2: x [0,15) -> y [15,25) -> z [25,35).
  // The chains interleave (10, 15, 20, 25); at 27 each lock is held by the
  // lease its own chain reaches.
  ExpectRunGives(R"([["acquire", 0, "a", "L1", 10],
                     ["acquire", 0, "x", "L2", 15],
                     ["acquire", 1, "b", "L1", 10],
                     ["acquire", 1, "y", "L2", 10],
                     ["acquire", 2, "c", "L1", 10],
                     ["acquire", 2, "z", "L2", 10],
                     ["inspect", 27, "L1"],
                     ["inspect", 27, "L2"],
                     ["inspect", 40, "L1"],
                     ["inspect", 40, "L2"]])",
                 R"([["granted", 1, 10],
                     ["granted", 1, 15],
                     ["queued", 1],
                     ["queued", 1],
                     ["queued", 2],
                     ["queued", 2],
                     {"holders": [["c", "exclusive", 3, 30]], "queue": []},
                     {"holders": [["z", "exclusive", 3, 35]], "queue": []},
                     {"holders": [], "queue": []},
                     {"holders": [], "queue": []}])");
}

TEST(LeaseRules, MixedLapseChainFollowsEachHandOverInstant) {
  // w1 [0,10); at 10 readers r1 [10,15) and r2 [10,18) are granted
  // together; w2 waits for the last reader (18): [18,22); then r3 [22,25).
  ExpectRunGives(R"([["acquire", 0, "w1", "L", 10],
                     ["acquire", 1, "r1", "L", 5, "shared"],
                     ["acquire", 2, "r2", "L", 8, "shared"],
                     ["acquire", 3, "w2", "L", 4],
                     ["acquire", 4, "r3", "L", 3, "shared"],
                     ["inspect", 21, "L"],
                     ["inspect", 24, "L"],
                     ["inspect", 25, "L"]])",
                 R"([["granted", 1, 10],
                     ["queued", 1],
                     ["queued", 2],
                     ["queued", 3],
                     ["queued", 4],
                     {"holders": [["w2", "exclusive", 4, 22]], "queue": [["r3", "shared"]]},
                     {"holders": [["r3", "shared", 5, 25]], "queue": []},
                     {"holders": [], "queue": []}])");
}

// --- Rule 4: queue --------------------------------------------------------

TEST(LeaseRules, WaitersAreFifoAndPositionCountsTheRequester) {
  ExpectRunGives(R"([["acquire", 0, "a", "L", 10],
                     ["acquire", 1, "b", "L", 10],
                     ["acquire", 2, "c", "L", 10],
                     ["acquire", 3, "d", "L", 10],
                     ["release", 5, "a", "L"],
                     ["inspect", 6, "L"]])",
                 R"([["granted", 1, 10],
                     ["queued", 1],
                     ["queued", 2],
                     ["queued", 3],
                     "released",
                     {"holders": [["b", "exclusive", 2, 15]], "queue": [["c", "exclusive"], ["d", "exclusive"]]}])");
}

// --- Rule 5: fencing tokens -----------------------------------------------

TEST(LeaseRules, CounterSurvivesLongIdleGaps) {
  ExpectRunGives(R"([["acquire", 0, "a", "L", 10],
                     ["release", 5, "a", "L"],
                     ["acquire", 100000, "b", "L", 10],
                     ["inspect", 200000, "L"],
                     ["acquire", 1000000000, "c", "L", 10],
                     ["acquire", 1000000001, "d", "M", 10]])",
                 R"([["granted", 1, 10],
                     "released",
                     ["granted", 2, 100010],
                     {"holders": [], "queue": []},
                     ["granted", 3, 1000000010],
                     ["granted", 1, 1000000011]])");
}

TEST(LeaseRules, TokensNeverRepeatAfterReleaseAndReacquire) {
  ExpectRunGives(R"([["acquire", 0, "a", "L", 10],
                     ["release", 1, "a", "L"],
                     ["acquire", 2, "a", "L", 10],
                     ["release", 3, "a", "L"],
                     ["acquire", 4, "b", "L", 10],
                     ["release", 5, "b", "L"],
                     ["acquire", 6, "a", "L", 10]])",
                 R"([["granted", 1, 10],
                     "released",
                     ["granted", 2, 12],
                     "released",
                     ["granted", 3, 14],
                     "released",
                     ["granted", 4, 16]])");
}

TEST(LeaseRules, EachLockHasItsOwnCounter) {
  ExpectRunGives(R"([["acquire", 0, "a", "L1", 10],
                     ["acquire", 0, "b", "L2", 10],
                     ["release", 1, "a", "L1"],
                     ["acquire", 2, "a", "L1", 10],
                     ["acquire", 3, "c", "L3", 10]])",
                 R"([["granted", 1, 10],
                     ["granted", 1, 10],
                     "released",
                     ["granted", 2, 12],
                     ["granted", 1, 13]])");
}

TEST(LeaseRules, WithdrawnRequestTakesNoToken) {
  // Only grants take a number: b never held L, so c gets 2.
  ExpectRunGives(R"([["acquire", 0, "a", "L", 10],
                     ["acquire", 1, "b", "L", 10],
                     ["release", 2, "b", "L"],
                     ["release", 3, "a", "L"],
                     ["acquire", 4, "c", "L", 10]])",
                 R"([["granted", 1, 10],
                     ["queued", 1],
                     "withdrawn",
                     "released",
                     ["granted", 2, 14]])");
}

// --- Rule 6: storage ------------------------------------------------------

TEST(LeaseRules, WriteWithEqualTokenIsAccepted) {
  ExpectRunGives(R"([["acquire", 0, "a", "L", 10],
                     ["write", 1, "L", "k1", "v1", 1],
                     ["write", 2, "L", "k2", "v2", 1],
                     ["write", 3, "L", "k1", "v1b", 1],
                     ["read", 4, "L", "k1"],
                     ["read", 4, "L", "k2"]])",
                 R"([["granted", 1, 10], "ok", "ok", "ok", "v1b", "v2"])");
}

TEST(LeaseRules, WriteWithLowerTokenIsRejectedAndChangesNothing) {
  // The rejected write neither stores its value nor lowers the mark: token
  // 2 is still accepted afterwards, token 1 still refused for a new key.
  ExpectRunGives(
      R"([["write", 0, "L", "k", "new", 2],
                     ["write", 1, "L", "k", "old", 1],
                     ["read", 2, "L", "k"],
                     ["write", 3, "L", "k2", "x", 1],
                     ["read", 4, "L", "k2"],
                     ["write", 5, "L", "k", "newer", 2],
                     ["read", 6, "L", "k"]])",
      R"(["ok", "error: stale token", "new", "error: stale token", null,
                     "ok", "newer"])");
}

TEST(LeaseRules, WriteNeedsNoLockInTheTable) {
  ExpectRunGives(
      R"([["write", 0, "nolock", "k", "v", 7],
                     ["read", 1, "nolock", "k"],
                     ["inspect", 2, "nolock"],
                     ["write", 3, "nolock", "k", "w", 6],
                     ["acquire", 4, "a", "nolock", 10]])",
      R"(["ok", "v", {"holders": [], "queue": []}, "error: stale token",
                     ["granted", 1, 14]])");
}

TEST(LeaseRules, StoreNeverLooksAtLeases) {
  // a's lease lapsed at 10 and b holds token 2, but b has not written: the
  // store accepts a's token 1 (1 >= 0). Once b writes with 2, a is fenced.
  ExpectRunGives(R"([["acquire", 0, "a", "L", 10],
                     ["acquire", 1, "b", "L", 10],
                     ["write", 15, "L", "k", "from a", 1],
                     ["write", 16, "L", "k", "from b", 2],
                     ["write", 17, "L", "k", "from a again", 1],
                     ["read", 18, "L", "k"]])",
                 R"([["granted", 1, 10], ["queued", 1], "ok", "ok",
                     "error: stale token", "from b"])");
}

TEST(LeaseRules, ReadIsNullForAnythingNeverWritten) {
  ExpectRunGives(R"([["read", 0, "L", "k"],
                     ["write", 1, "L", "k", "v", 1],
                     ["read", 2, "L", "other"],
                     ["read", 2, "M", "k"],
                     ["read", 2, "L", "k"]])",
                 R"([null, "ok", null, null, "v"])");
}

// --- Rule 7: release ------------------------------------------------------

TEST(LeaseRules, ReleaseAfterLapseIsNotHolder) {
  ExpectRunGives(R"([["acquire", 0, "a", "L", 10],
                     ["release", 10, "a", "L"],
                     ["release", 20, "a", "L"],
                     ["acquire", 21, "b", "L", 5]])",
                 R"([["granted", 1, 10],
                     "error: not holder",
                     "error: not holder",
                     ["granted", 2, 26]])");
}

TEST(LeaseRules, ReleaseByAStrangerIsNotHolder) {
  ExpectRunGives(R"([["release", 0, "x", "L"],
                     ["acquire", 1, "a", "L", 10],
                     ["release", 2, "x", "L"],
                     ["release", 3, "a", "M"],
                     ["inspect", 4, "L"]])",
                 R"(["error: not holder",
                     ["granted", 1, 11],
                     "error: not holder",
                     "error: not holder",
                     {"holders": [["a", "exclusive", 1, 11]], "queue": []}])");
}

TEST(LeaseRules, ReleasedLeaseEndsNow) {
  ExpectRunGives(R"([["acquire", 0, "a", "L", 10],
                     ["release", 3, "a", "L"],
                     ["release", 3, "a", "L"],
                     ["renew", 3, "a", "L", 10],
                     ["inspect", 3, "L"]])",
                 R"([["granted", 1, 10], "released", "error: not holder",
                     "error: not holder", {"holders": [], "queue": []}])");
}

TEST(LeaseRules, WaiterReleaseWithdrawsAndThoseBehindMoveUp) {
  ExpectRunGives(R"([["acquire", 0, "a", "L", 10],
                     ["acquire", 1, "b", "L", 10],
                     ["acquire", 2, "c", "L", 10],
                     ["acquire", 3, "d", "L", 10],
                     ["release", 4, "c", "L"],
                     ["inspect", 4, "L"],
                     ["acquire", 5, "e", "L", 10],
                     ["release", 6, "b", "L"],
                     ["release", 7, "b", "L"],
                     ["inspect", 7, "L"]])",
                 R"([["granted", 1, 10],
                     ["queued", 1],
                     ["queued", 2],
                     ["queued", 3],
                     "withdrawn",
                     {"holders": [["a", "exclusive", 1, 10]], "queue": [["b", "exclusive"], ["d", "exclusive"]]},
                     ["queued", 3],
                     "withdrawn",
                     "error: not holder",
                     {"holders": [["a", "exclusive", 1, 10]], "queue": [["d", "exclusive"], ["e", "exclusive"]]}])");
}

// --- Rule 8 as replaced by Part 3 rule 1: the client rule -----------------

TEST(LeaseRules, ClientMayHoldManyLocksButWaitForOne) {
  ExpectRunGives(R"([["acquire", 0, "a", "L1", 100],
                     ["acquire", 1, "a", "L2", 100],
                     ["acquire", 2, "b", "L3", 100],
                     ["acquire", 3, "a", "L3", 100],
                     ["acquire", 4, "a", "L4", 100],
                     ["status", 5, "a"],
                     ["inspect", 5, "L4"]])",
                 R"([["granted", 1, 100],
                     ["granted", 1, 101],
                     ["granted", 1, 102],
                     ["queued", 1],
                     "error: client busy",
                     {"age": 1, "holds": [["L1", "exclusive", 1, 100], ["L2", "exclusive", 1, 101]], "waiting": "L3"},
                     {"holders": [], "queue": []}])");
}

TEST(LeaseRules, BusyWhenHoldingTheSameLock) {
  ExpectRunGives(R"([["acquire", 0, "a", "L", 100],
                     ["acquire", 1, "a", "L", 10],
                     ["acquire", 2, "a", "L", 10, "shared"],
                     ["acquire", 3, "r", "S", 10, "shared"],
                     ["acquire", 4, "r", "S", 10, "shared"],
                     ["inspect", 5, "L"],
                     ["inspect", 5, "S"]])",
                 R"([["granted", 1, 100],
                     "error: client busy",
                     "error: client busy",
                     ["granted", 1, 13],
                     "error: client busy",
                     {"holders": [["a", "exclusive", 1, 100]], "queue": []},
                     {"holders": [["r", "shared", 1, 13]], "queue": []}])");
}

TEST(LeaseRules, BusyWhenWaitingEvenForTheSameLock) {
  ExpectRunGives(R"([["acquire", 0, "a", "L", 100],
                     ["acquire", 1, "b", "L", 100],
                     ["acquire", 2, "b", "L", 100],
                     ["inspect", 3, "L"]])",
                 R"([["granted", 1, 100],
                     ["queued", 1],
                     "error: client busy",
                     {"holders": [["a", "exclusive", 1, 100]], "queue": [["b", "exclusive"]]}])");
}

TEST(LeaseRules, NotBusyOnceItsOwnLeaseLapsedOrItsWaitWasWithdrawn) {
  ExpectRunGives(R"([["acquire", 0, "a", "L", 10],
                     ["acquire", 10, "a", "L", 10],
                     ["acquire", 11, "b", "L", 10],
                     ["release", 12, "b", "L"],
                     ["acquire", 13, "b", "M", 10],
                     ["acquire", 14, "b", "L", 10]])",
                 R"([["granted", 1, 10],
                     ["granted", 2, 20],
                     ["queued", 1],
                     "withdrawn",
                     ["granted", 1, 23],
                     ["queued", 1]])");
}

// --- Part 3 rules 2 and 11: ages and status --------------------------------

TEST(LeaseRules, AgesCountRegistrationsAndAbortUnregisters) {
  // alice 1; x fails validation and does not register; bob 2; bob is
  // aborted by alice's acquire (the younger on the cycle) and loses his
  // age; carol registers next with 3.
  ExpectRunGives(R"([["acquire", 0, "alice", "L1", 100],
                     ["acquire", 1, "x", "L1", 0],
                     ["acquire", 2, "bob", "L2", 100],
                     ["acquire", 3, "bob", "L1", 100],
                     ["status", 4, "bob"],
                     ["status", 4, "x"],
                     ["acquire", 5, "alice", "L2", 100],
                     ["status", 6, "bob"],
                     ["acquire", 7, "carol", "L3", 100],
                     ["status", 8, "carol"]])",
                 R"([["granted", 1, 100],
                     "error: invalid ttl",
                     ["granted", 1, 102],
                     ["queued", 1],
                     {"age": 2, "holds": [["L2", "exclusive", 1, 102]], "waiting": "L1"},
                     {"age": null, "holds": [], "waiting": null},
                     ["granted", 2, 105, ["bob"]],
                     {"age": null, "holds": [], "waiting": null},
                     ["granted", 1, 107],
                     {"age": 3, "holds": [["L3", "exclusive", 1, 107]], "waiting": null}])");
}

TEST(LeaseRules, RegistrationSurvivesReleaseAndLapse) {
  ExpectRunGives(R"([["acquire", 0, "a", "L", 10],
                     ["release", 1, "a", "L"],
                     ["acquire", 2, "b", "M", 10],
                     ["status", 50, "a"],
                     ["status", 50, "b"],
                     ["acquire", 60, "a", "N", 10],
                     ["status", 61, "a"]])",
                 R"([["granted", 1, 10],
                     "released",
                     ["granted", 1, 12],
                     {"age": 1, "holds": [], "waiting": null},
                     {"age": 2, "holds": [], "waiting": null},
                     ["granted", 1, 70],
                     {"age": 1, "holds": [["N", "exclusive", 1, 70]], "waiting": null}])");
}

TEST(LeaseRules, ReRegisteredClientIsYounger) {
  // Registrations: alice 1, bob 2, (bob aborted), carol 3, bob again 4.
  ExpectRunGives(R"([["acquire", 0, "alice", "L1", 100],
                     ["acquire", 1, "bob", "L2", 100],
                     ["acquire", 2, "bob", "L1", 100],
                     ["acquire", 3, "alice", "L2", 100],
                     ["acquire", 4, "carol", "C", 100],
                     ["acquire", 5, "bob", "B", 100],
                     ["status", 6, "bob"],
                     ["status", 6, "carol"]])",
                 R"([["granted", 1, 100],
                     ["granted", 1, 101],
                     ["queued", 1],
                     ["granted", 2, 103, ["bob"]],
                     ["granted", 1, 104],
                     ["granted", 1, 105],
                     {"age": 4, "holds": [["B", "exclusive", 1, 105]], "waiting": null},
                     {"age": 3, "holds": [["C", "exclusive", 1, 104]], "waiting": null}])");
}

TEST(LeaseRules, StatusOfAnUnregisteredClientIsEmpty) {
  // Renew and release never register a client.
  ExpectRunGives(R"([["status", 0, "nobody"],
                     ["release", 1, "z", "L"],
                     ["renew", 2, "z", "L", 10],
                     ["status", 3, "z"]])",
                 R"([{"age": null, "holds": [], "waiting": null},
                     "error: not holder",
                     "error: not holder",
                     {"age": null, "holds": [], "waiting": null}])");
}

TEST(LeaseRules, StatusListsHoldsSortedByLockName) {
  // Plain string comparison: "B" < "a-lock" < "b-lock".
  ExpectRunGives(R"([["acquire", 0, "a", "b-lock", 100],
                     ["acquire", 1, "a", "a-lock", 50, "shared"],
                     ["acquire", 2, "a", "B", 10],
                     ["status", 3, "a"]])",
                 R"([["granted", 1, 100],
                     ["granted", 1, 51],
                     ["granted", 1, 12],
                     {"age": 1, "holds": [["B", "exclusive", 1, 12], ["a-lock", "shared", 1, 51], ["b-lock", "exclusive", 1, 100]], "waiting": null}])");
}

TEST(LeaseRules, StatusDropsLapsedLeases) {
  ExpectRunGives(R"([["acquire", 0, "a", "L", 10],
                     ["acquire", 0, "a", "M", 20],
                     ["status", 10, "a"]])",
                 R"([["granted", 1, 10],
                     ["granted", 1, 20],
                     {"age": 1, "holds": [["M", "exclusive", 1, 20]], "waiting": null}])");
}

// --- Part 2: shared and exclusive locks -----------------------------------

TEST(LeaseRules, DefaultModeIsExclusive) {
  ExpectRunGives(R"([["acquire", 0, "a", "L", 10],
                     ["acquire", 1, "b", "L", 10, "exclusive"],
                     ["inspect", 2, "L"]])",
                 R"([["granted", 1, 10],
                     ["queued", 1],
                     {"holders": [["a", "exclusive", 1, 10]], "queue": [["b", "exclusive"]]}])");
}

TEST(LeaseRules, SharedRequestsShareTheLockEachWithItsOwnToken) {
  ExpectRunGives(R"([["acquire", 0, "r1", "S", 10, "shared"],
                     ["acquire", 1, "r2", "S", 20, "shared"],
                     ["inspect", 2, "S"]])",
                 R"([["granted", 1, 10],
                     ["granted", 2, 21],
                     {"holders": [["r1", "shared", 1, 10], ["r2", "shared", 2, 21]], "queue": []}])");
}

TEST(LeaseRules, ExclusiveAndSharedAreIncompatible) {
  ExpectRunGives(R"([["acquire", 0, "w", "A", 10],
                     ["acquire", 1, "r", "A", 10, "shared"],
                     ["acquire", 2, "r2", "B", 10, "shared"],
                     ["acquire", 3, "w2", "B", 10, "exclusive"],
                     ["inspect", 4, "A"],
                     ["inspect", 4, "B"]])",
                 R"([["granted", 1, 10],
                     ["queued", 1],
                     ["granted", 1, 12],
                     ["queued", 1],
                     {"holders": [["w", "exclusive", 1, 10]], "queue": [["r", "shared"]]},
                     {"holders": [["r2", "shared", 1, 12]], "queue": [["w2", "exclusive"]]}])");
}

TEST(LeaseRules, SharedRequestNeverOvertakesQueuedWriter) {
  ExpectRunGives(R"([["acquire", 0, "r1", "S", 100, "shared"],
                     ["acquire", 1, "w", "S", 10],
                     ["acquire", 2, "r2", "S", 10, "shared"],
                     ["inspect", 3, "S"]])",
                 R"([["granted", 1, 100],
                     ["queued", 1],
                     ["queued", 2],
                     {"holders": [["r1", "shared", 1, 100]], "queue": [["w", "exclusive"], ["r2", "shared"]]}])");
}

TEST(LeaseRules, ConsecutiveSharedAtHeadAreGrantedTogether) {
  // w lapses at 10: r1, r2, r3 are granted at 10 in queue order (tokens
  // 2, 3, 4); w2 stops the run, and r4 behind it waits.
  ExpectRunGives(R"([["acquire", 0, "w", "S", 10],
                     ["acquire", 1, "r1", "S", 5, "shared"],
                     ["acquire", 2, "r2", "S", 7, "shared"],
                     ["acquire", 3, "r3", "S", 9, "shared"],
                     ["acquire", 4, "w2", "S", 10],
                     ["acquire", 5, "r4", "S", 10, "shared"],
                     ["inspect", 11, "S"]])",
                 R"([["granted", 1, 10],
                     ["queued", 1],
                     ["queued", 2],
                     ["queued", 3],
                     ["queued", 4],
                     ["queued", 5],
                     {"holders": [["r1", "shared", 2, 15], ["r2", "shared", 3, 17], ["r3", "shared", 4, 19]], "queue": [["w2", "exclusive"], ["r4", "shared"]]}])");
}

TEST(LeaseRules, WriterStartsWhenTheLastReaderLeaseEnds) {
  // r2 lapses at 11, r1 at 30: w holds [30, 40).
  ExpectRunGives(R"([["acquire", 0, "r1", "S", 30, "shared"],
                     ["acquire", 1, "r2", "S", 10, "shared"],
                     ["acquire", 2, "w", "S", 10],
                     ["inspect", 20, "S"],
                     ["inspect", 35, "S"]])",
                 R"([["granted", 1, 30],
                     ["granted", 2, 11],
                     ["queued", 1],
                     {"holders": [["r1", "shared", 1, 30]], "queue": [["w", "exclusive"]]},
                     {"holders": [["w", "exclusive", 3, 40]], "queue": []}])");
}

TEST(LeaseRules, WriterStartsWhenTheLastReaderLeaseEndsEvenIfThatIsALapse) {
  // r1 releases at 5, but r2 still holds until 11: w holds [11, 21).
  ExpectRunGives(R"([["acquire", 0, "r1", "S", 30, "shared"],
                     ["acquire", 1, "r2", "S", 10, "shared"],
                     ["acquire", 2, "w", "S", 10],
                     ["release", 5, "r1", "S"],
                     ["inspect", 6, "S"],
                     ["inspect", 12, "S"]])",
                 R"([["granted", 1, 30],
                     ["granted", 2, 11],
                     ["queued", 1],
                     "released",
                     {"holders": [["r2", "shared", 2, 11]], "queue": [["w", "exclusive"]]},
                     {"holders": [["w", "exclusive", 3, 21]], "queue": []}])");
}

TEST(LeaseRules, WithdrawnWriterLetsReadersBehindItIn) {
  // w withdraws at 5: r2 and r3 are now compatible with r1 and are granted
  // at 5 (tokens 2 and 3; w never held a token); w2 still waits.
  ExpectRunGives(R"([["acquire", 0, "r1", "S", 100, "shared"],
                     ["acquire", 1, "w", "S", 10],
                     ["acquire", 2, "r2", "S", 20, "shared"],
                     ["acquire", 3, "r3", "S", 30, "shared"],
                     ["acquire", 4, "w2", "S", 10],
                     ["release", 5, "w", "S"],
                     ["inspect", 6, "S"]])",
                 R"([["granted", 1, 100],
                     ["queued", 1],
                     ["queued", 2],
                     ["queued", 3],
                     ["queued", 4],
                     "withdrawn",
                     {"holders": [["r1", "shared", 1, 100], ["r2", "shared", 2, 25], ["r3", "shared", 3, 35]], "queue": [["w2", "exclusive"]]}])");
}

TEST(LeaseRules, EachSharedHolderIsRenewedReleasedAndRetiredOnItsOwn) {
  // Holders stay listed by token even when a later token expires earlier.
  ExpectRunGives(R"([["acquire", 0, "r1", "S", 10, "shared"],
                     ["acquire", 0, "r2", "S", 10, "shared"],
                     ["acquire", 0, "r3", "S", 10, "shared"],
                     ["renew", 5, "r1", "S", 20],
                     ["release", 6, "r2", "S"],
                     ["inspect", 7, "S"],
                     ["inspect", 10, "S"],
                     ["release", 11, "r3", "S"]])",
                 R"([["granted", 1, 10],
                     ["granted", 2, 10],
                     ["granted", 3, 10],
                     ["renewed", 1, 25],
                     "released",
                     {"holders": [["r1", "shared", 1, 25], ["r3", "shared", 3, 10]], "queue": []},
                     {"holders": [["r1", "shared", 1, 25]], "queue": []},
                     "error: not holder"])");
}

}  // namespace
}  // namespace leasekeeper
