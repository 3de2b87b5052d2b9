// The contract's worked examples, verbatim, through run(operations).
//
// Each example's operations and expected results are copied character for
// character from the contract (003, "Lease Locks"). Results are compared as
// serialized JSON so that key order ({"holders", "queue"} and {"age",
// "holds", "waiting"}) is checked too.
#include <string_view>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "replay/replay.h"
#include "tests/core/expect_run.h"

namespace leasekeeper {
namespace {

// Part 1: the incident review's audit log and what the rules require.
TEST(ContractExamples, IncidentReviewInc5127) {
  ExpectRunGives(
      R"([["acquire", 0, "etl-a", "exports/daily", 30],
 ["acquire", 5, "etl-b", "exports/daily", 20],
 ["acquire", 8, "etl-c", "exports/daily", 15],
 ["write", 20, "exports/daily", "part-1", "a:rows 1-100", 1],
 ["renew", 30, "etl-a", "exports/daily", 30],
 ["write", 31, "exports/daily", "part-1", "b:rows 1-100", 2],
 ["write", 32, "exports/daily", "part-1", "a:rows 101-200", 1],
 ["inspect", 55, "exports/daily"],
 ["read", 56, "exports/daily", "part-1"]])",
      R"([["granted", 1, 30], ["queued", 1], ["queued", 2], "ok", "error: not holder", "ok",
 "error: stale token",
 {"holders": [["etl-c", "exclusive", 3, 65]], "queue": []},
 "b:rows 1-100"])");
}

// Part 2: a writer behind readers starts when the last reader's lease ends.
TEST(ContractExamples, SharedAndExclusiveLocksPart2) {
  ExpectRunGives(
      R"([["acquire", 0, "r1", "cfg", 50, "shared"],
 ["acquire", 1, "r2", "cfg", 20, "shared"],
 ["acquire", 2, "w1", "cfg", 30],
 ["acquire", 3, "r3", "cfg", 10, "shared"],
 ["inspect", 4, "cfg"],
 ["inspect", 50, "cfg"],
 ["inspect", 80, "cfg"]])",
      R"([["granted", 1, 50], ["granted", 2, 21], ["queued", 1], ["queued", 2],
 {"holders": [["r1", "shared", 1, 50], ["r2", "shared", 2, 21]], "queue": [["w1", "exclusive"], ["r3", "shared"]]},
 {"holders": [["w1", "exclusive", 3, 80]], "queue": [["r3", "shared"]]},
 {"holders": [["r3", "shared", 4, 90]], "queue": []}])");
}

// Part 3, example 1: the younger of two jobs is aborted.
TEST(ContractExamples, YoungerOfTwoJobsIsAbortedPart3Example1) {
  ExpectRunGives(
      R"([["acquire", 0, "alice", "L1", 100],
 ["acquire", 1, "bob", "L2", 100],
 ["acquire", 2, "bob", "L1", 100],
 ["acquire", 3, "alice", "L2", 100],
 ["status", 4, "bob"],
 ["status", 4, "alice"],
 ["inspect", 4, "L1"]])",
      R"([["granted", 1, 100], ["granted", 1, 101], ["queued", 1], ["granted", 2, 103, ["bob"]],
 {"age": null, "holds": [], "waiting": null},
 {"age": 1, "holds": [["L1", "exclusive", 1, 100], ["L2", "exclusive", 2, 103]], "waiting": null},
 {"holders": [["alice", "exclusive", 1, 100]], "queue": []}])");
}

// Part 3, example 2: a waiter ahead of the requester is on the cycle.
TEST(ContractExamples, WaiterAheadOfTheRequesterIsOnTheCyclePart3Example2) {
  ExpectRunGives(
      R"([["acquire", 0, "H", "L", 100],
 ["acquire", 1, "Z", "M", 100],
 ["acquire", 2, "Y", "L", 100],
 ["acquire", 3, "H", "M", 100],
 ["acquire", 4, "Z", "L", 100]])",
      R"([["granted", 1, 100], ["granted", 1, 101], ["queued", 1], ["queued", 1], ["deadlock", ["Y", "Z"]]])");
}

// Example 2 goes on to say "M passes to H": the lease starts at the
// acquire's ts (4) with H's own ttl, token 2.
TEST(ContractExamples, Part3Example2MPassesToHAtTheAcquireTs) {
  ExpectRunGives(
      R"([["acquire", 0, "H", "L", 100],
 ["acquire", 1, "Z", "M", 100],
 ["acquire", 2, "Y", "L", 100],
 ["acquire", 3, "H", "M", 100],
 ["acquire", 4, "Z", "L", 100],
 ["inspect", 5, "M"],
 ["inspect", 5, "L"],
 ["status", 5, "Y"],
 ["status", 5, "Z"],
 ["status", 5, "H"]])",
      R"([["granted", 1, 100], ["granted", 1, 101], ["queued", 1], ["queued", 1], ["deadlock", ["Y", "Z"]],
 {"holders": [["H", "exclusive", 2, 104]], "queue": []},
 {"holders": [["H", "exclusive", 1, 100]], "queue": []},
 {"age": null, "holds": [], "waiting": null},
 {"age": null, "holds": [], "waiting": null},
 {"age": 1, "holds": [["L", "exclusive", 1, 100], ["M", "exclusive", 2, 104]], "waiting": null}])");
}

}  // namespace
}  // namespace leasekeeper
