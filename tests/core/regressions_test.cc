// Regression tests for the Part 1 follow-up reports. Each test rebuilds the
// scenario a report describes and asserts the answer the lease rules
// require.
#include <string_view>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "replay/replay.h"
#include "tests/core/expect_run.h"

namespace leasekeeper {
namespace {

// INC-5131: "job-7 took a lock that had sat idle overnight and its very
// first write was refused as stale." Rule 5: the counter survives periods
// when nobody holds or awaits the lock, so job-7 gets token 3, above the
// store's high-water mark 2.
TEST(Regressions, Inc5131FirstWriteAfterAnIdleNightIsNotStale) {
  ExpectRunGives(
      R"([["acquire", 0, "job-1", "exports/nightly", 600],
          ["write", 10, "exports/nightly", "manifest", "day-1", 1],
          ["release", 300, "job-1", "exports/nightly"],
          ["acquire", 3600, "job-2", "exports/nightly", 600],
          ["write", 3610, "exports/nightly", "manifest", "day-2", 2],
          ["acquire", 90000, "job-7", "exports/nightly", 600],
          ["write", 90010, "exports/nightly", "manifest", "night", 3],
          ["read", 90020, "exports/nightly", "manifest"]])",
      R"([["granted", 1, 600], "ok", "released", ["granted", 2, 4200], "ok",
          ["granted", 3, 90600], "ok", "night"])");
}

// INC-5133: "two different jobs holding the same lock with the same fencing
// token, one after the other." Rule 5: every grant, from the queue too,
// takes the next number.
TEST(Regressions, Inc5133SuccessiveHoldersNeverShareAToken) {
  // job-1 releases at 5: job-2 [5, 15) token 2; job-2 lapses at 15: job-3
  // [15, 25) token 3.
  ExpectRunGives(
      R"([["acquire", 0, "job-1", "L", 10],
          ["acquire", 1, "job-2", "L", 10],
          ["acquire", 2, "job-3", "L", 10],
          ["release", 5, "job-1", "L"],
          ["inspect", 6, "L"],
          ["inspect", 16, "L"],
          ["status", 16, "job-3"]])",
      R"([["granted", 1, 10], ["queued", 1], ["queued", 2], "released",
          {"holders": [["job-2", "exclusive", 2, 15]], "queue": [["job-3", "exclusive"]]},
          {"holders": [["job-3", "exclusive", 3, 25]], "queue": []},
          {"age": 3, "holds": [["L", "exclusive", 3, 25]], "waiting": null}])");
}

// INC-5133, seen from the store: since the tokens differ, the stalled
// predecessor is fenced out as soon as its successor writes.
TEST(Regressions, Inc5133PredecessorIsFencedOutByItsSuccessor) {
  ExpectRunGives(
      R"([["acquire", 0, "job-1", "L", 10],
          ["acquire", 1, "job-2", "L", 10],
          ["write", 12, "L", "k", "job-2", 2],
          ["write", 13, "L", "k", "job-1 late", 1],
          ["read", 14, "L", "k"]])",
      R"([["granted", 1, 10], ["queued", 1], "ok", "error: stale token",
          "job-2"])");
}

// INC-5138: "A job released its lock after its lease had run out and the
// next job in line got a second lease it should not have had." Rules 2 and
// 7: after the lapse the releasing job is not the holder; nothing changes.
TEST(Regressions, Inc5138ReleaseAfterLapseDoesNotHandOverAgain) {
  // job-a lapses at 10: job-b [10, 30) token 2. job-a's release at 12 is
  // not holder; job-b keeps its one lease and job-c keeps waiting, and is
  // granted at 30 with token 3.
  ExpectRunGives(
      R"([["acquire", 0, "job-a", "L", 10],
          ["acquire", 1, "job-b", "L", 20],
          ["acquire", 2, "job-c", "L", 20],
          ["release", 12, "job-a", "L"],
          ["inspect", 13, "L"],
          ["status", 13, "job-b"],
          ["status", 13, "job-c"],
          ["inspect", 31, "L"]])",
      R"([["granted", 1, 10], ["queued", 1], ["queued", 2],
          "error: not holder",
          {"holders": [["job-b", "exclusive", 2, 30]], "queue": [["job-c", "exclusive"]]},
          {"age": 2, "holds": [["L", "exclusive", 2, 30]], "waiting": null},
          {"age": 3, "holds": [], "waiting": "L"},
          {"holders": [["job-c", "exclusive", 3, 50]], "queue": []}])");
}

// INC-5138 variant: the late release comes exactly at the lapse instant.
TEST(Regressions, Inc5138ReleaseAtTheExpiryInstantIsNotHolder) {
  ExpectRunGives(
      R"([["acquire", 0, "job-a", "L", 10],
          ["acquire", 1, "job-b", "L", 20],
          ["release", 10, "job-a", "L"],
          ["inspect", 10, "L"]])",
      R"([["granted", 1, 10], ["queued", 1], "error: not holder",
          {"holders": [["job-b", "exclusive", 2, 30]], "queue": []}])");
}

// INC-5140: "The job that holds the lock can write one key but its second
// write with the same token is refused." Rule 6: token >= high-water mark.
TEST(Regressions, Inc5140SecondWriteWithTheSameTokenIsAccepted) {
  ExpectRunGives(
      R"([["acquire", 0, "job", "L", 60],
          ["write", 1, "L", "k1", "a", 1],
          ["write", 2, "L", "k2", "b", 1],
          ["write", 3, "L", "k1", "c", 1],
          ["read", 4, "L", "k1"],
          ["read", 4, "L", "k2"]])",
      R"([["granted", 1, 60], "ok", "ok", "ok", "c", "b"])");
}

// INC-5144: "etl-b's lease is shown starting at the time somebody next
// looked at the lock, not when etl-a's lease ended." Rule 3: etl-b holds
// [30, 50), so at 45 it expires at 50 and at 50 it is gone.
TEST(Regressions, Inc5144HandedOverLeaseStartsWhenThePreviousEnded) {
  ExpectRunGives(
      R"([["acquire", 0, "etl-a", "exports/daily", 30],
          ["acquire", 5, "etl-b", "exports/daily", 20],
          ["inspect", 45, "exports/daily"],
          ["status", 45, "etl-b"],
          ["inspect", 50, "exports/daily"],
          ["acquire", 50, "etl-c", "exports/daily", 10]])",
      R"([["granted", 1, 30], ["queued", 1],
          {"holders": [["etl-b", "exclusive", 2, 50]], "queue": []},
          {"age": 2, "holds": [["exports/daily", "exclusive", 2, 50]], "waiting": null},
          {"holders": [], "queue": []},
          ["granted", 3, 60]])");
}

// INC-5144 variant: whichever operation notices first (here status, then a
// write to the store) must not move the start of the lease.
TEST(Regressions, Inc5144NoticingOperationDoesNotMatter) {
  ExpectRunGives(
      R"([["acquire", 0, "etl-a", "exports/daily", 30],
          ["acquire", 5, "etl-b", "exports/daily", 20],
          ["status", 41, "nobody"],
          ["write", 42, "exports/daily", "part-1", "b", 2],
          ["inspect", 49, "exports/daily"],
          ["inspect", 50, "exports/daily"]])",
      R"([["granted", 1, 30], ["queued", 1],
          {"age": null, "holds": [], "waiting": null},
          "ok",
          {"holders": [["etl-b", "exclusive", 2, 50]], "queue": []},
          {"holders": [], "queue": []}])");
}

// INC-5144 variant: a waiter's lease that the late observer finds already
// over must not be revived: etl-b [30, 50), etl-c [50, 65), seen at 70.
TEST(Regressions, Inc5144LateObserverFindsTheWholeChainOver) {
  ExpectRunGives(
      R"([["acquire", 0, "etl-a", "exports/daily", 30],
          ["acquire", 5, "etl-b", "exports/daily", 20],
          ["acquire", 8, "etl-c", "exports/daily", 15],
          ["inspect", 70, "exports/daily"],
          ["acquire", 70, "etl-d", "exports/daily", 5]])",
      R"([["granted", 1, 30], ["queued", 1], ["queued", 2],
          {"holders": [], "queue": []},
          ["granted", 4, 75]])");
}

}  // namespace
}  // namespace leasekeeper
