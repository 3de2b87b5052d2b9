// repeat, the load helper (contract "How your code is run" and replay.h):
// placeholders, timing, the tally, the "aborted" count and bad arguments.
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "replay/replay.h"

namespace leasekeeper {
namespace {

// Compares one result with `expected` (JSON text). Objects are compared as
// sets of keys, except that the top-level keys of a repeat result must come
// in the documented order: "ops", "results"[, "aborted"]. The order of the
// tally's own keys is not part of the contract.
void ExpectRepeatResult(const nlohmann::ordered_json& got,
                        std::string_view expected, const std::string& op) {
  const nlohmann::ordered_json want = nlohmann::ordered_json::parse(expected);
  if (want.is_object()) {
    ASSERT_TRUE(got.is_object()) << op << " -> " << got.dump();
    std::vector<std::string> got_keys, want_keys;
    for (const auto& item : got.items()) got_keys.push_back(item.key());
    for (const auto& item : want.items()) want_keys.push_back(item.key());
    EXPECT_EQ(got_keys, want_keys) << op << " -> " << got.dump();
  }
  EXPECT_EQ(nlohmann::json::parse(got.dump()), nlohmann::json::parse(expected))
      << op << "\n  got:  " << got.dump() << "\n  want: " << expected;
}

// Runs `operations` and checks each result with ExpectRepeatResult.
void ExpectRunGives(std::string_view operations,
                    const std::vector<std::string>& expected) {
  const nlohmann::json ops = nlohmann::json::parse(operations);
  const nlohmann::ordered_json got = RunOperations(ops);
  ASSERT_TRUE(got.is_array());
  ASSERT_EQ(got.size(), expected.size()) << got.dump();
  for (size_t i = 0; i < expected.size(); ++i) {
    ExpectRepeatResult(got[i], expected[i], ops[i].dump());
  }
}

constexpr const char* kInvalid = R"("error: invalid arguments")";

// --- Placeholders ---------------------------------------------------------

TEST(Repeat, PlaceholderIIsTheRunIndexFromZero) {
  ExpectRunGives(
      R"([["repeat", 0, ["acquire", "c{i}", "L{i}", 10], 3, 0],
                     ["inspect", 1, "L0"],
                     ["inspect", 1, "L2"],
                     ["inspect", 1, "L3"],
                     ["status", 1, "c1"]])",
      {R"({"ops": 3, "results": {"granted": 3}})",
       R"({"holders": [["c0", "exclusive", 1, 10]], "queue": []})",
       R"({"holders": [["c2", "exclusive", 1, 10]], "queue": []})",
       R"({"holders": [], "queue": []})",
       R"({"age": 2, "holds": [["L1", "exclusive", 1, 10]], "waiting": null})"});
}

TEST(Repeat, PlaceholderIPlusAAddsAnOffset) {
  ExpectRunGives(R"([["repeat", 0, ["acquire", "c{i+10}", "L{i+7}", 10], 2, 0],
                     ["inspect", 1, "L7"],
                     ["inspect", 1, "L8"],
                     ["inspect", 1, "L0"]])",
                 {R"({"ops": 2, "results": {"granted": 2}})",
                  R"({"holders": [["c10", "exclusive", 1, 10]], "queue": []})",
                  R"({"holders": [["c11", "exclusive", 1, 10]], "queue": []})",
                  R"({"holders": [], "queue": []})"});
}

TEST(Repeat, PlaceholderIModKWrapsAround) {
  // c0 -> L0, c1 -> L1, c2 -> L0 (queued), c3 -> L1 (queued).
  ExpectRunGives(
      R"([["repeat", 0, ["acquire", "c{i}", "L{i%2}", 10], 4, 0],
                     ["inspect", 1, "L0"],
                     ["inspect", 1, "L1"],
                     ["inspect", 1, "L2"]])",
      {R"({"ops": 4, "results": {"granted": 2, "queued": 2}})",
       R"({"holders": [["c0", "exclusive", 1, 10]], "queue": [["c2", "exclusive"]]})",
       R"({"holders": [["c1", "exclusive", 1, 10]], "queue": [["c3", "exclusive"]]})",
       R"({"holders": [], "queue": []})"});
}

TEST(Repeat, PlaceholderIPlusAModKIsTheSumModK) {
  // {i+1%3} is (i+1) % 3: c0 -> L1, c1 -> L2, c2 -> L0; never L3.
  ExpectRunGives(R"([["repeat", 0, ["acquire", "c{i}", "L{i+1%3}", 10], 3, 0],
                     ["inspect", 1, "L0"],
                     ["inspect", 1, "L1"],
                     ["inspect", 1, "L2"],
                     ["inspect", 1, "L3"]])",
                 {R"({"ops": 3, "results": {"granted": 3}})",
                  R"({"holders": [["c2", "exclusive", 1, 10]], "queue": []})",
                  R"({"holders": [["c0", "exclusive", 1, 10]], "queue": []})",
                  R"({"holders": [["c1", "exclusive", 1, 10]], "queue": []})",
                  R"({"holders": [], "queue": []})"});
}

TEST(Repeat, MultiDigitOffsetsAndModuli) {
  // i = 0..2: (i + 12) % 7 = 5, 6, 0; (i + 100) = 100..102; i % 10 = i.
  ExpectRunGives(
      R"([["repeat", 0, ["write", "L{i%10}", "k{i+12%7}", "v{i+100}", 1], 3, 0],
                     ["read", 1, "L0", "k5"],
                     ["read", 1, "L1", "k6"],
                     ["read", 1, "L2", "k0"]])",
      {R"({"ops": 3, "results": {"ok": 3}})", R"("v100")", R"("v101")",
       R"("v102")"});
}

TEST(Repeat, PlaceholdersAreReplacedInEveryStringArgument) {
  // Several placeholders in one string, in the lock, key and value.
  ExpectRunGives(
      R"([["repeat", 0, ["write", "L{i%2}", "k{i}-{i+100}", "v{i}{i%2}", 1], 3, 0],
                     ["read", 1, "L0", "k0-100"],
                     ["read", 1, "L1", "k1-101"],
                     ["read", 1, "L0", "k2-102"],
                     ["read", 1, "L1", "k2-102"]])",
      {R"({"ops": 3, "results": {"ok": 3}})", R"("v00")", R"("v11")",
       R"("v20")", "null"});
}

// --- Timing ---------------------------------------------------------------

TEST(Repeat, StepZeroRunsEveryRunAtTs) {
  ExpectRunGives(
      R"([["repeat", 0, ["acquire", "c{i}", "L", 10], 3, 0],
                     ["inspect", 0, "L"]])",
      {R"({"ops": 3, "results": {"granted": 1, "queued": 2}})",
       R"({"holders": [["c0", "exclusive", 1, 10]], "queue": [["c1", "exclusive"], ["c2", "exclusive"]]})"});
}

TEST(Repeat, RunIExecutesAtTsPlusIStep) {
  // Runs at 5, 15, 25 with ttl 10: each finds the previous lease ended.
  ExpectRunGives(R"([["repeat", 5, ["acquire", "c{i}", "L", 10], 3, 10],
                     ["inspect", 30, "L"]])",
                 {R"({"ops": 3, "results": {"granted": 3}})",
                  R"({"holders": [["c2", "exclusive", 3, 35]], "queue": []})"});
}

TEST(Repeat, StepTimingFollowsTheHandOverRules) {
  // Runs at 5, 12, 19 with ttl 10: c0 [5, 15); c1 queues at 12 and is
  // handed the lock at 15 ([15, 25), token 2); c2 queues at 19.
  ExpectRunGives(
      R"([["repeat", 5, ["acquire", "c{i}", "L", 10], 3, 7],
                     ["inspect", 20, "L"]])",
      {R"({"ops": 3, "results": {"granted": 1, "queued": 2}})",
       R"({"holders": [["c1", "exclusive", 2, 25]], "queue": [["c2", "exclusive"]]})"});
}

// --- The tally ------------------------------------------------------------

TEST(Repeat, StringResultsAreTalliedByValue) {
  ExpectRunGives(R"([["acquire", 0, "a", "L", 100],
                     ["repeat", 1, ["release", "x{i}", "L"], 2, 0],
                     ["repeat", 2, ["write", "L", "k{i}", "v", 1], 3, 0],
                     ["repeat", 3, ["write", "L", "k", "v", 0], 2, 0]])",
                 {R"(["granted", 1, 100])",
                  R"({"ops": 2, "results": {"error: not holder": 2}})",
                  R"({"ops": 3, "results": {"ok": 3}})",
                  R"({"ops": 2, "results": {"error: invalid arguments": 2}})"});
}

TEST(Repeat, ListResultsAreTalliedByTheirFirstElement) {
  ExpectRunGives(
      R"([["acquire", 0, "a", "L", 100],
                     ["repeat", 1, ["renew", "a", "L", 10], 3, 1]])",
      {R"(["granted", 1, 100])", R"({"ops": 3, "results": {"renewed": 3}})"});
}

TEST(Repeat, DictResultsAreTalliedAsOther) {
  ExpectRunGives(R"([["repeat", 0, ["inspect", "L{i}"], 4, 0],
                     ["repeat", 0, ["status", "c{i}"], 2, 0]])",
                 {R"({"ops": 4, "results": {"other": 4}})",
                  R"({"ops": 2, "results": {"other": 2}})"});
}

TEST(Repeat, ReadTalliesNullAsOtherAndAStringUnderThatString) {
  ExpectRunGives(R"([["write", 0, "L", "k0", "x", 1],
                     ["repeat", 1, ["read", "L", "k0"], 3, 0],
                     ["repeat", 1, ["read", "L", "none{i}"], 2, 0],
                     ["repeat", 1, ["read", "L", "k{i%2}"], 4, 0]])",
                 {R"("ok")", R"({"ops": 3, "results": {"x": 3}})",
                  R"({"ops": 2, "results": {"other": 2}})",
                  R"({"ops": 4, "results": {"x": 2, "other": 2}})"});
}

// replay.h: each run is applied as a top-level operation, so an unknown
// name or bad arguments inside a well-formed template are tallied per run.
TEST(Repeat, ErrorsOfARunAreTalliedPerRun) {
  ExpectRunGives(R"([["repeat", 0, ["bogus", "x"], 2, 0],
                     ["repeat", 0, ["acquire", "c{i}", "L", 0], 2, 0],
                     ["repeat", 0, ["acquire", "c{i}"], 3, 0]])",
                 {R"({"ops": 2, "results": {"error: unknown operation": 2}})",
                  R"({"ops": 2, "results": {"error: invalid ttl": 2}})",
                  R"({"ops": 3, "results": {"error: invalid arguments": 3}})"});
}

// --- "aborted" ------------------------------------------------------------

TEST(Repeat, AbortedKeyIsAbsentWhenNobodyWasAborted) {
  // ExpectRepeatResult checks the exact key list ["ops", "results"].
  ExpectRunGives(R"([["repeat", 0, ["acquire", "c{i}", "L", 10], 2, 0]])",
                 {R"({"ops": 2, "results": {"granted": 1, "queued": 1}})"});
}

TEST(Repeat, AbortedCountsTheVictimsOfAGrantedRequest) {
  // Part 3 example 1 with alice's request inside a repeat: bob is aborted.
  ExpectRunGives(
      R"([["acquire", 0, "alice", "L1", 100],
                     ["acquire", 1, "bob", "L2", 100],
                     ["acquire", 2, "bob", "L1", 100],
                     ["repeat", 3, ["acquire", "alice", "L2", 100], 1, 0],
                     ["status", 4, "bob"]])",
      {R"(["granted", 1, 100])", R"(["granted", 1, 101])", R"(["queued", 1])",
       R"({"ops": 1, "results": {"granted": 1}, "aborted": 1})",
       R"({"age": null, "holds": [], "waiting": null})"});
}

TEST(Repeat, AbortedCountsTheRequesterOfADeadlockToo) {
  // Part 3 example 2 with Z's request inside a repeat: Y and Z are aborted.
  ExpectRunGives(R"([["acquire", 0, "H", "L", 100],
                     ["acquire", 1, "Z", "M", 100],
                     ["acquire", 2, "Y", "L", 100],
                     ["acquire", 3, "H", "M", 100],
                     ["repeat", 4, ["acquire", "Z", "L", 100], 1, 0]])",
                 {R"(["granted", 1, 100])", R"(["granted", 1, 101])",
                  R"(["queued", 1])", R"(["queued", 1])",
                  R"({"ops": 1, "results": {"deadlock": 1}, "aborted": 2})"});
}

TEST(Repeat, AbortedSumsOverTheRuns) {
  // Template p{i%2} acquires X{i%3}:
  //  i=0 p0 X0 granted; i=1 p1 X1 granted; i=2 p0 X2 granted;
  //  i=3 p1 X0 queued (p1 -> p0);
  //  i=4 p0 X1: p0 -> p1 -> p0, p1 (age 2) is aborted, X1 passes to p0:
  //      granted with victims;
  //  i=5 p1 X2: p1 re-registers and queues behind p0 (no cycle).
  ExpectRunGives(
      R"([["repeat", 0, ["acquire", "p{i%2}", "X{i%3}", 100], 6, 0],
                     ["status", 0, "p1"]])",
      {R"({"ops": 6, "results": {"granted": 4, "queued": 2}, "aborted": 1})",
       R"({"age": 3, "holds": [], "waiting": "X2"})"});
}

// --- Bad count, step and template -----------------------------------------

TEST(Repeat, BadCountIsInvalidArguments) {
  ExpectRunGives(R"([["repeat", 0, ["acquire", "c{i}", "L", 10], 0, 0],
                     ["repeat", 0, ["acquire", "c{i}", "L", 10], 100001, 0],
                     ["repeat", 0, ["acquire", "c{i}", "L", 10], 1.5, 0],
                     ["repeat", 0, ["acquire", "c{i}", "L", 10], 2.0, 0],
                     ["repeat", 0, ["acquire", "c{i}", "L", 10], true, 0],
                     ["repeat", 0, ["acquire", "c{i}", "L", 10], "3", 0],
                     ["repeat", 0, ["acquire", "c{i}", "L", 10], -1, 0],
                     ["repeat", 0, ["acquire", "c{i}", "L", 10], null, 0],
                     ["inspect", 0, "L"]])",
                 {kInvalid, kInvalid, kInvalid, kInvalid, kInvalid, kInvalid,
                  kInvalid, kInvalid, R"({"holders": [], "queue": []})"});
}

TEST(Repeat, CountOf1And100000AreAccepted) {
  ExpectRunGives(R"([["repeat", 0, ["read", "L", "k"], 1, 0],
                     ["repeat", 0, ["read", "L", "k"], 100000, 0]])",
                 {R"({"ops": 1, "results": {"other": 1}})",
                  R"({"ops": 100000, "results": {"other": 100000}})"});
}

TEST(Repeat, BadStepIsInvalidArguments) {
  ExpectRunGives(R"([["repeat", 0, ["acquire", "c{i}", "L", 10], 2, -1],
                     ["repeat", 0, ["acquire", "c{i}", "L", 10], 2, 1.5],
                     ["repeat", 0, ["acquire", "c{i}", "L", 10], 2, true],
                     ["repeat", 0, ["acquire", "c{i}", "L", 10], 2, "0"],
                     ["repeat", 0, ["acquire", "c{i}", "L", 10], 2, null],
                     ["inspect", 0, "L"]])",
                 {kInvalid, kInvalid, kInvalid, kInvalid, kInvalid,
                  R"({"holders": [], "queue": []})"});
}

// replay.h: ts + (count - 1) * step must stay within kMaxTick (2^62).
TEST(Repeat, StepThatRunsPastTheLastTickIsInvalidArguments) {
  ExpectRunGives(R"([["repeat", 0, ["inspect", "L"], 3, 2305843009213693953],
                     ["repeat", 0, ["inspect", "L"], 3, 1000000000000000]])",
                 {kInvalid, R"({"ops": 3, "results": {"other": 3}})"});
}

TEST(Repeat, BadTemplateIsInvalidArguments) {
  ExpectRunGives(R"([["repeat", 0, "acquire", 1, 0],
                     ["repeat", 0, [], 1, 0],
                     ["repeat", 0, 5, 1, 0],
                     ["repeat", 0, null, 1, 0],
                     ["repeat", 0, {"op": "inspect"}, 1, 0],
                     ["repeat", 0, ["repeat", ["inspect", "L"], 1, 0], 1, 0],
                     ["repeat", 0, ["repeat"], 1, 0],
                     ["inspect", 0, "L"]])",
                 {kInvalid, kInvalid, kInvalid, kInvalid, kInvalid, kInvalid,
                  kInvalid, R"({"holders": [], "queue": []})"});
}

// replay.h: K >= 1; {i%0} makes the template bad.
TEST(Repeat, ModuloZeroMakesTheTemplateBad) {
  ExpectRunGives(R"([["repeat", 0, ["acquire", "c{i}", "L{i%0}", 10], 1, 0],
                     ["repeat", 0, ["acquire", "c{i}", "L{i+1%0}", 10], 1, 0],
                     ["inspect", 0, "L0"]])",
                 {kInvalid, kInvalid, R"({"holders": [], "queue": []})"});
}

TEST(Repeat, WrongArgumentCountOrTsIsInvalidArguments) {
  ExpectRunGives(R"([["repeat", 0, ["inspect", "L"], 1],
                     ["repeat", 0, ["inspect", "L"]],
                     ["repeat", 1.0, ["inspect", "L"], 1, 0],
                     ["repeat", true, ["inspect", "L"], 1, 0]])",
                 {kInvalid, kInvalid, kInvalid, kInvalid});
}

}  // namespace
}  // namespace leasekeeper
