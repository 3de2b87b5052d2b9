// Part 3: wait-for cycles and deadlock victims, through run(operations).
//
// Ages are registration numbers (Part 3 rule 2); the comments give each
// client's age and the wait-for edges (rule 3) that the expected values
// follow from.
#include <string_view>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "replay/replay.h"
#include "tests/core/expect_run.h"

namespace leasekeeper {
namespace {

TEST(Deadlock, TwoClientCycleAbortsTheRequesterWhenItIsTheYoungest) {
  // alice 1, bob 2. alice waits for bob's L2; bob's request for L1 closes
  // bob -> alice -> bob. bob is the youngest: ["deadlock", ["bob"]], and L2
  // passes to alice at 3 with her own ttl 30.
  ExpectRunGives(R"([["acquire", 0, "alice", "L1", 100],
                     ["acquire", 1, "bob", "L2", 50],
                     ["acquire", 2, "alice", "L2", 30],
                     ["acquire", 3, "bob", "L1", 100],
                     ["inspect", 4, "L2"],
                     ["inspect", 4, "L1"],
                     ["status", 4, "bob"],
                     ["status", 4, "alice"]])",
                 R"([["granted", 1, 100],
                     ["granted", 1, 51],
                     ["queued", 1],
                     ["deadlock", ["bob"]],
                     {"holders": [["alice", "exclusive", 2, 33]], "queue": []},
                     {"holders": [["alice", "exclusive", 1, 100]], "queue": []},
                     {"age": null, "holds": [], "waiting": null},
                     {"age": 1, "holds": [["L1", "exclusive", 1, 100], ["L2", "exclusive", 2, 33]], "waiting": null}])");
}

TEST(Deadlock, VictimIsYoungestOnTheCycleNotTheRequester) {
  // a 1, b 2, c 3 hold L1, L2, L3. c waits for L1 (c -> a), b for L3
  // (b -> c); a's request for L2 closes a -> b -> c -> a. c is aborted: its
  // wait leaves L1's queue and L3 passes to b at 5 (ttl 40). a still waits
  // for b, who no longer waits: ["queued", 1, ["c"]].
  ExpectRunGives(R"([["acquire", 0, "a", "L1", 100],
                     ["acquire", 1, "b", "L2", 100],
                     ["acquire", 2, "c", "L3", 100],
                     ["acquire", 3, "c", "L1", 100],
                     ["acquire", 4, "b", "L3", 40],
                     ["acquire", 5, "a", "L2", 100],
                     ["inspect", 6, "L3"],
                     ["inspect", 6, "L1"],
                     ["inspect", 6, "L2"],
                     ["status", 6, "c"],
                     ["status", 6, "b"]])",
                 R"([["granted", 1, 100],
                     ["granted", 1, 101],
                     ["granted", 1, 102],
                     ["queued", 1],
                     ["queued", 1],
                     ["queued", 1, ["c"]],
                     {"holders": [["b", "exclusive", 2, 45]], "queue": []},
                     {"holders": [["a", "exclusive", 1, 100]], "queue": []},
                     {"holders": [["b", "exclusive", 1, 101]], "queue": [["a", "exclusive"]]},
                     {"age": null, "holds": [], "waiting": null},
                     {"age": 2, "holds": [["L2", "exclusive", 1, 101], ["L3", "exclusive", 2, 45]], "waiting": null}])");
}

TEST(Deadlock, ThreeClientCycleClosedByTheYoungest) {
  // a -> b (L2), b -> c (L3), then c -> a (L1) closes the cycle; c (3) is
  // the requester and the youngest. L3 passes to b at 5 (ttl 30).
  ExpectRunGives(R"([["acquire", 0, "a", "L1", 100],
                     ["acquire", 1, "b", "L2", 100],
                     ["acquire", 2, "c", "L3", 100],
                     ["acquire", 3, "a", "L2", 100],
                     ["acquire", 4, "b", "L3", 30],
                     ["acquire", 5, "c", "L1", 100],
                     ["inspect", 6, "L3"],
                     ["inspect", 6, "L1"]])",
                 R"([["granted", 1, 100],
                     ["granted", 1, 101],
                     ["granted", 1, 102],
                     ["queued", 1],
                     ["queued", 1],
                     ["deadlock", ["c"]],
                     {"holders": [["b", "exclusive", 2, 35]], "queue": []},
                     {"holders": [["a", "exclusive", 1, 100]], "queue": []}])");
}

TEST(Deadlock, WaitersAheadOnTheSameLockAreNotACycleByThemselves) {
  // Everyone waits behind a, who waits for nothing: no cycle, no abort.
  ExpectRunGives(R"([["acquire", 0, "a", "L", 100],
                     ["acquire", 1, "b", "L", 100],
                     ["acquire", 2, "c", "L", 100],
                     ["acquire", 3, "b2", "M", 100],
                     ["acquire", 4, "a", "M", 100],
                     ["acquire", 5, "d", "L", 100]])",
                 R"([["granted", 1, 100],
                     ["queued", 1],
                     ["queued", 2],
                     ["granted", 1, 103],
                     ["queued", 1],
                     ["queued", 3]])");
}

TEST(Deadlock, WaitersBehindAreNotEdges) {
  // H 1 holds L, R 2 holds M, W 3 holds N. R waits for L (R -> H); W waits
  // for L behind R (W -> H, W -> R). H's request for M closes H -> R -> H.
  // W is the youngest client but nobody on the cycle waits behind it or
  // for it, so the cycle is {H, R} and R is aborted; M passes to H.
  ExpectRunGives(R"([["acquire", 0, "H", "L", 100],
                     ["acquire", 1, "R", "M", 100],
                     ["acquire", 2, "W", "N", 100],
                     ["acquire", 3, "R", "L", 100],
                     ["acquire", 4, "W", "L", 100],
                     ["acquire", 5, "H", "M", 100],
                     ["inspect", 6, "L"],
                     ["status", 6, "W"],
                     ["status", 6, "R"]])",
                 R"([["granted", 1, 100],
                     ["granted", 1, 101],
                     ["granted", 1, 102],
                     ["queued", 1],
                     ["queued", 2],
                     ["granted", 2, 105, ["R"]],
                     {"holders": [["H", "exclusive", 1, 100]], "queue": [["W", "exclusive"]]},
                     {"age": 3, "holds": [["N", "exclusive", 1, 102]], "waiting": "L"},
                     {"age": null, "holds": [], "waiting": null}])");
}

TEST(Deadlock, SharedHolderOnTheCycleIsTheVictimNotAYoungerOneOffIt) {
  // w 1 holds X; r1 2 and r2 3 share S. r1 waits for X (r1 -> w). w's
  // exclusive request for S has edges to both readers; only r1 leads back,
  // so C = {w, r1} and r1 (2) is aborted although r2 (3) is younger. S
  // keeps r2 as holder and w waits for it.
  ExpectRunGives(R"([["acquire", 0, "w", "X", 100],
                     ["acquire", 1, "r1", "S", 100, "shared"],
                     ["acquire", 2, "r2", "S", 100, "shared"],
                     ["acquire", 3, "r1", "X", 100],
                     ["acquire", 4, "w", "S", 100],
                     ["inspect", 5, "S"],
                     ["inspect", 5, "X"],
                     ["status", 5, "r1"],
                     ["status", 5, "r2"]])",
                 R"([["granted", 1, 100],
                     ["granted", 1, 101],
                     ["granted", 2, 102],
                     ["queued", 1],
                     ["queued", 1, ["r1"]],
                     {"holders": [["r2", "shared", 2, 102]], "queue": [["w", "exclusive"]]},
                     {"holders": [["w", "exclusive", 1, 100]], "queue": []},
                     {"age": null, "holds": [], "waiting": null},
                     {"age": 3, "holds": [["S", "shared", 2, 102]], "waiting": null}])");
}

TEST(Deadlock, AllSharedHoldersOnTheCycleAreAbortedYoungestFirst) {
  // Both readers wait for w's X (r2 behind r1). w's request for S: C =
  // {w, r1, r2}. r2 (3) goes first, then r1 (2); S is then free and w is
  // granted it at 5 with token 3.
  ExpectRunGives(R"([["acquire", 0, "w", "X", 100],
                     ["acquire", 1, "r1", "S", 100, "shared"],
                     ["acquire", 2, "r2", "S", 100, "shared"],
                     ["acquire", 3, "r1", "X", 100],
                     ["acquire", 4, "r2", "X", 100],
                     ["acquire", 5, "w", "S", 100],
                     ["inspect", 6, "S"],
                     ["inspect", 6, "X"]])",
                 R"([["granted", 1, 100],
                     ["granted", 1, 101],
                     ["granted", 2, 102],
                     ["queued", 1],
                     ["queued", 2],
                     ["granted", 3, 105, ["r2", "r1"]],
                     {"holders": [["w", "exclusive", 3, 105]], "queue": []},
                     {"holders": [["w", "exclusive", 1, 100]], "queue": []}])");
}

TEST(Deadlock, AbortsThatGrantTheRequesterReturnGrantedWithVictims) {
  // Z 1 holds M, H 2 holds L, Y 3 waits for L, H waits for M. Z's request
  // for L queues behind Y: C = {Z, H, Y}. Y is aborted (holds nothing);
  // then C = {Z, H} and H (2) is aborted: its wait for M goes, L passes to
  // Z, now at the head, at 4 with token 2.
  ExpectRunGives(R"([["acquire", 0, "Z", "M", 100],
                     ["acquire", 1, "H", "L", 100],
                     ["acquire", 2, "Y", "L", 100],
                     ["acquire", 3, "H", "M", 100],
                     ["acquire", 4, "Z", "L", 100],
                     ["inspect", 5, "L"],
                     ["inspect", 5, "M"],
                     ["status", 5, "H"],
                     ["status", 5, "Y"],
                     ["status", 5, "Z"]])",
                 R"([["granted", 1, 100],
                     ["granted", 1, 101],
                     ["queued", 1],
                     ["queued", 1],
                     ["granted", 2, 104, ["Y", "H"]],
                     {"holders": [["Z", "exclusive", 2, 104]], "queue": []},
                     {"holders": [["Z", "exclusive", 1, 100]], "queue": []},
                     {"age": null, "holds": [], "waiting": null},
                     {"age": null, "holds": [], "waiting": null},
                     {"age": 1, "holds": [["L", "exclusive", 2, 104], ["M", "exclusive", 1, 100]], "waiting": null}])");
}

TEST(Deadlock, QueuedRequesterReportsItsPositionAfterTheAborts) {
  // R 1 holds M; K 2 and H 3 share L; H waits for M (H -> R); V 4 waits
  // for L exclusively. R's exclusive request for L queues at 2 behind V:
  // C = {R, H, V} (K waits for nothing). V is aborted, R moves to 1; then
  // C = {R, H} and H is aborted: its wait for M and its share of L go. K
  // still holds L, so R waits: ["queued", 1, ["V", "H"]].
  ExpectRunGives(R"([["acquire", 0, "R", "M", 100],
                     ["acquire", 1, "K", "L", 100, "shared"],
                     ["acquire", 2, "H", "L", 100, "shared"],
                     ["acquire", 3, "H", "M", 100],
                     ["acquire", 4, "V", "L", 100],
                     ["acquire", 5, "R", "L", 100],
                     ["inspect", 6, "L"],
                     ["inspect", 6, "M"],
                     ["status", 6, "H"],
                     ["status", 6, "V"],
                     ["status", 6, "R"]])",
                 R"([["granted", 1, 100],
                     ["granted", 1, 101],
                     ["granted", 2, 102],
                     ["queued", 1],
                     ["queued", 1],
                     ["queued", 1, ["V", "H"]],
                     {"holders": [["K", "shared", 1, 101]], "queue": [["R", "exclusive"]]},
                     {"holders": [["R", "exclusive", 1, 100]], "queue": []},
                     {"age": null, "holds": [], "waiting": null},
                     {"age": null, "holds": [], "waiting": null},
                     {"age": 1, "holds": [["M", "exclusive", 1, 100]], "waiting": "L"}])");
}

TEST(Deadlock, AbortedWaiterLeavingTheQueueGrantsCompatibleRequestsBehindIt) {
  // R 1 holds M; K 2 shares S and waits for M; V 3 holds N and waits for S
  // exclusively; r 4 waits for S (shared) behind V. R's request for N:
  // C = {R, V, K} (r is not reachable from R). V is aborted: leaving S's
  // queue makes r compatible with K, so r is granted S at 6; releasing N
  // grants it to R at 6 (ttl 50).
  ExpectRunGives(R"([["acquire", 0, "R", "M", 100],
                     ["acquire", 1, "K", "S", 100, "shared"],
                     ["acquire", 2, "K", "M", 100],
                     ["acquire", 3, "V", "N", 100],
                     ["acquire", 4, "V", "S", 100],
                     ["acquire", 5, "r", "S", 100, "shared"],
                     ["acquire", 6, "R", "N", 50],
                     ["inspect", 7, "S"],
                     ["inspect", 7, "N"],
                     ["inspect", 7, "M"],
                     ["status", 7, "V"]])",
                 R"([["granted", 1, 100],
                     ["granted", 1, 101],
                     ["queued", 1],
                     ["granted", 1, 103],
                     ["queued", 1],
                     ["queued", 2],
                     ["granted", 2, 56, ["V"]],
                     {"holders": [["K", "shared", 1, 101], ["r", "shared", 2, 106]], "queue": []},
                     {"holders": [["R", "exclusive", 2, 56]], "queue": []},
                     {"holders": [["R", "exclusive", 1, 100]], "queue": [["K", "exclusive"]]},
                     {"age": null, "holds": [], "waiting": null}])");
}

TEST(Deadlock, AbortedRequesterPassesItsLocksOnAtTheAcquireTs) {
  // H 1 holds m; p1 2, p2 3, p3 4 register on q1..q3; Z 5 takes b, a, c
  // (in that order). p1 waits for a, p2 for b, p3 for c, H for c behind p3.
  // Z's request for m: C = {Z, H, p3}, Z is the youngest. Z's wait for m
  // goes, then a, b, c are released (ascending names), each passing to its
  // head waiter at 11 with that waiter's own ttl and the next token.
  ExpectRunGives(R"([["acquire", 0, "H", "m", 100],
                     ["acquire", 1, "p1", "q1", 100],
                     ["acquire", 2, "p2", "q2", 100],
                     ["acquire", 3, "p3", "q3", 100],
                     ["acquire", 4, "Z", "b", 100],
                     ["acquire", 5, "Z", "a", 100],
                     ["acquire", 6, "Z", "c", 100],
                     ["acquire", 7, "p1", "a", 10],
                     ["acquire", 8, "p2", "b", 20],
                     ["acquire", 9, "p3", "c", 30],
                     ["acquire", 10, "H", "c", 40],
                     ["acquire", 11, "Z", "m", 100],
                     ["inspect", 12, "a"],
                     ["inspect", 12, "b"],
                     ["inspect", 12, "c"],
                     ["inspect", 12, "m"],
                     ["status", 12, "Z"]])",
                 R"([["granted", 1, 100],
                     ["granted", 1, 101],
                     ["granted", 1, 102],
                     ["granted", 1, 103],
                     ["granted", 1, 104],
                     ["granted", 1, 105],
                     ["granted", 1, 106],
                     ["queued", 1],
                     ["queued", 1],
                     ["queued", 1],
                     ["queued", 2],
                     ["deadlock", ["Z"]],
                     {"holders": [["p1", "exclusive", 2, 21]], "queue": []},
                     {"holders": [["p2", "exclusive", 2, 31]], "queue": []},
                     {"holders": [["p3", "exclusive", 2, 41]], "queue": [["H", "exclusive"]]},
                     {"holders": [["H", "exclusive", 1, 100]], "queue": []},
                     {"age": null, "holds": [], "waiting": null}])");
}

TEST(Deadlock, AbortedClientsUnregisterAndReRegisterYounger) {
  // alice 1, bob 2, carol 3. bob is aborted (example 1 pattern) and
  // re-registers as 4, so in the next cycle with carol he is the younger
  // one and is aborted again; B passes to carol.
  ExpectRunGives(R"([["acquire", 0, "alice", "L1", 100],
                     ["acquire", 1, "bob", "L2", 100],
                     ["acquire", 2, "carol", "X", 100],
                     ["acquire", 3, "bob", "L1", 100],
                     ["acquire", 4, "alice", "L2", 100],
                     ["status", 5, "bob"],
                     ["acquire", 6, "bob", "B", 100],
                     ["status", 6, "bob"],
                     ["acquire", 7, "carol", "B", 100],
                     ["acquire", 8, "bob", "X", 100],
                     ["status", 9, "bob"],
                     ["status", 9, "carol"]])",
                 R"([["granted", 1, 100],
                     ["granted", 1, 101],
                     ["granted", 1, 102],
                     ["queued", 1],
                     ["granted", 2, 104, ["bob"]],
                     {"age": null, "holds": [], "waiting": null},
                     ["granted", 1, 106],
                     {"age": 4, "holds": [["B", "exclusive", 1, 106]], "waiting": null},
                     ["queued", 1],
                     ["deadlock", ["bob"]],
                     {"age": null, "holds": [], "waiting": null},
                     {"age": 3, "holds": [["B", "exclusive", 2, 108], ["X", "exclusive", 1, 102]], "waiting": null}])");
}

TEST(Deadlock, LapsedLeaseIsNotAnEdgeInTheWaitForGraph) {
  // alice's share of L1 lapses at 10; at 15 bob's exclusive request waits
  // only for carol, who waits for nothing: no cycle, although alice waits
  // for bob.
  ExpectRunGives(R"([["acquire", 0, "alice", "L1", 10, "shared"],
                     ["acquire", 1, "bob", "L2", 100],
                     ["acquire", 2, "carol", "L1", 100, "shared"],
                     ["acquire", 3, "alice", "L2", 100],
                     ["acquire", 15, "bob", "L1", 100],
                     ["inspect", 16, "L1"],
                     ["status", 16, "alice"]])",
                 R"([["granted", 1, 10],
                     ["granted", 1, 101],
                     ["granted", 2, 102],
                     ["queued", 1],
                     ["queued", 1],
                     {"holders": [["carol", "shared", 2, 102]], "queue": [["bob", "exclusive"]]},
                     {"age": 1, "holds": [], "waiting": "L2"}])");
}

TEST(Deadlock, AbortLeavesStorageAndCountersUntouched) {
  ExpectRunGives(R"([["acquire", 0, "alice", "L1", 100],
                     ["acquire", 1, "bob", "L2", 100],
                     ["write", 2, "L2", "k", "bob", 1],
                     ["acquire", 3, "bob", "L1", 100],
                     ["acquire", 4, "alice", "L2", 100],
                     ["read", 5, "L2", "k"],
                     ["write", 6, "L2", "k", "alice", 2],
                     ["write", 7, "L2", "k", "bob late", 1],
                     ["release", 8, "alice", "L2"],
                     ["acquire", 9, "carol", "L2", 100]])",
                 R"([["granted", 1, 100],
                     ["granted", 1, 101],
                     "ok",
                     ["queued", 1],
                     ["granted", 2, 104, ["bob"]],
                     "bob",
                     "ok",
                     "error: stale token",
                     "released",
                     ["granted", 3, 109]])");
}

TEST(Deadlock, BusyRequestIsRefusedBeforeAnyCycleCheck) {
  // a waits for b's L2, c waits for a's L1. a's request for c's L4 would
  // close a -> c -> a, but a already waits: client busy, nobody aborted,
  // nothing changes.
  ExpectRunGives(R"([["acquire", 0, "a", "L1", 100],
                     ["acquire", 1, "b", "L2", 100],
                     ["acquire", 2, "c", "L4", 100],
                     ["acquire", 3, "a", "L2", 100],
                     ["acquire", 4, "c", "L1", 100],
                     ["acquire", 5, "a", "L4", 100],
                     ["status", 6, "a"],
                     ["status", 6, "c"]])",
                 R"([["granted", 1, 100],
                     ["granted", 1, 101],
                     ["granted", 1, 102],
                     ["queued", 1],
                     ["queued", 1],
                     "error: client busy",
                     {"age": 1, "holds": [["L1", "exclusive", 1, 100]], "waiting": "L2"},
                     {"age": 3, "holds": [["L4", "exclusive", 1, 102]], "waiting": "L1"}])");
}

}  // namespace
}  // namespace leasekeeper
