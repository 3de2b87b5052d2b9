// Validation of run(operations): the order of the checks for every
// operation (contract "How your code is run", replay.h) and rule 1 for
// operations that fail validation.
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "replay/replay.h"
#include "tests/core/expect_run.h"

namespace leasekeeper {
namespace {

// Runs each operation alone on a fresh service and expects `result`.
void ExpectEachAloneGives(const std::vector<std::string>& operations,
                          std::string_view result) {
  for (const std::string& op : operations) {
    const nlohmann::ordered_json got =
        RunOperations(nlohmann::json::array({nlohmann::json::parse(op)}));
    ASSERT_EQ(got.size(), 1u) << op;
    EXPECT_EQ(got[0].dump(), nlohmann::ordered_json(result).dump()) << op;
  }
}

constexpr std::string_view kInvalidArguments = "error: invalid arguments";
constexpr std::string_view kUnknownOperation = "error: unknown operation";
constexpr std::string_view kInvalidTtl = "error: invalid ttl";

// One well-formed example of each operation at ts 0, to be spliced with a
// different ts: name and the arguments after the ts.
struct Shape {
  std::string name;
  std::string args;  // JSON text of the arguments after ts, comma-led
};
const std::vector<Shape>& AllShapes() {
  static const auto* shapes = new std::vector<Shape>{
      {"acquire", R"(, "a", "L", 10)"},
      {"acquire", R"(, "a", "L", 10, "shared")"},
      {"renew", R"(, "a", "L", 10)"},
      {"release", R"(, "a", "L")"},
      {"write", R"(, "L", "k", "v", 1)"},
      {"read", R"(, "L", "k")"},
      {"inspect", R"(, "L")"},
      {"status", R"(, "a")"},
      {"repeat", R"(, ["inspect", "L"], 1, 0)"},
  };
  return *shapes;
}

// --- The operation itself -------------------------------------------------

TEST(Validation, OperationThatIsNotAListIsInvalidArguments) {
  ExpectEachAloneGives(
      {R"("acquire")", "5", "null", "true", R"({"op": "acquire", "ts": 0})"},
      kInvalidArguments);
}

TEST(Validation, EmptyListIsInvalidArguments) {
  ExpectEachAloneGives({"[]"}, kInvalidArguments);
}

TEST(Validation, KnownNameWithoutTsIsInvalidArguments) {
  std::vector<std::string> ops;
  for (const Shape& shape : AllShapes())
    ops.push_back("[\"" + shape.name + "\"]");
  ExpectEachAloneGives(ops, kInvalidArguments);
}

TEST(Validation, UnknownNameIsCheckedFirst) {
  // Even with no ts, a bad ts, or bad arguments.
  ExpectEachAloneGives(
      {R"(["bogus", 0])", R"(["bogus"])", R"(["bogus", true])",
       R"(["bogus", 1.5, "x"])", R"(["bogus", "1"])",
       R"(["bogus", -1, 2, 3, 4, 5, 6, 7])", R"(["Acquire", 0, "a", "L", 10])",
       R"(["acquire ", 0, "a", "L", 10])", R"(["", 0])"},
      kUnknownOperation);
}

// replay.h: "first element not a known operation name -> unknown operation".
TEST(Validation, NonStringNameIsAnUnknownOperation) {
  ExpectEachAloneGives(
      {"[5, 0]", "[null, 0]", R"([["acquire"], 0, "a", "L", 10])", "[true, 0]"},
      kUnknownOperation);
}

TEST(Validation, NonIntegerTsIsInvalidArgumentsForEveryOperation) {
  std::vector<std::string> ops;
  for (const Shape& shape : AllShapes()) {
    for (const char* ts : {"true", "false", "1.0", "0.5", R"("1")", "null",
                           "[0]", R"({"ts": 0})"}) {
      ops.push_back("[\"" + shape.name + "\", " + ts + shape.args + "]");
    }
  }
  ExpectEachAloneGives(ops, kInvalidArguments);
}

TEST(Validation, WellFormedShapesAreAccepted) {
  // The control for the tests above: each shape with an integer ts passes
  // validation.
  for (const Shape& shape : AllShapes()) {
    const std::string op = "[\"" + shape.name + "\", 0" + shape.args + "]";
    const nlohmann::ordered_json got =
        RunOperations(nlohmann::json::array({nlohmann::json::parse(op)}));
    ASSERT_EQ(got.size(), 1u);
    // renew and release on a fresh service are "not holder": a state
    // error, so validation passed.
    EXPECT_NE(got[0].dump(), nlohmann::ordered_json(kInvalidArguments).dump())
        << op;
    EXPECT_NE(got[0].dump(), nlohmann::ordered_json(kUnknownOperation).dump())
        << op;
  }
}

// replay.h step 3: ts within [kMinTick, kMaxTick], kMaxTick = 2^62.
TEST(Validation, TsBeyondTheTickRangeIsInvalidArguments) {
  ExpectRunGives(R"([["inspect", 4611686018427387905, "L"],
                     ["inspect", 9223372036854775807, "L"],
                     ["inspect", 18446744073709551615, "L"],
                     ["inspect", 4611686018427387904, "L"]])",
                 R"(["error: invalid arguments", "error: invalid arguments",
                     "error: invalid arguments",
                     {"holders": [], "queue": []}])");
}

// replay.h: a ts smaller than the previous operation's is invalid
// arguments and time does not move; an equal ts is fine.
TEST(Validation, DecreasingTsIsInvalidArgumentsAndTimeDoesNotMove) {
  ExpectRunGives(R"([["acquire", 10, "a", "L", 5],
                     ["acquire", 9, "b", "L", 5],
                     ["inspect", 10, "L"],
                     ["status", 10, "b"],
                     ["bogus", 1],
                     ["inspect", 14, "L"]])",
                 R"([["granted", 1, 15],
                     "error: invalid arguments",
                     {"holders": [["a", "exclusive", 1, 15]], "queue": []},
                     {"age": null, "holds": [], "waiting": null},
                     "error: unknown operation",
                     {"holders": [["a", "exclusive", 1, 15]], "queue": []}])");
}

// --- Argument count -------------------------------------------------------

TEST(Validation, WrongNumberOfArgumentsIsInvalidArguments) {
  ExpectEachAloneGives(
      {
          R"(["acquire", 0])",
          R"(["acquire", 0, "a", "L"])",
          R"(["acquire", 0, "a", "L", 10, "shared", "x"])",
          R"(["renew", 0, "a", "L"])",
          R"(["renew", 0, "a", "L", 10, "shared"])",
          R"(["release", 0, "a"])",
          R"(["release", 0, "a", "L", "x"])",
          R"(["write", 0, "L", "k", "v"])",
          R"(["write", 0, "L", "k", "v", 1, "x"])",
          R"(["read", 0, "L"])",
          R"(["read", 0, "L", "k", "x"])",
          R"(["inspect", 0])",
          R"(["inspect", 0, "L", "x"])",
          R"(["status", 0])",
          R"(["status", 0, "a", "x"])",
          R"(["repeat", 0, ["inspect", "L"], 1])",
          R"(["repeat", 0, ["inspect", "L"], 1, 0, 0])",
      },
      kInvalidArguments);
}

// --- Each argument's type -------------------------------------------------

TEST(Validation, AcquireArgumentTypes) {
  ExpectEachAloneGives(
      {
          R"(["acquire", 0, "", "L", 10])",
          R"(["acquire", 0, 5, "L", 10])",
          R"(["acquire", 0, null, "L", 10])",
          R"(["acquire", 0, true, "L", 10])",
          R"(["acquire", 0, ["a"], "L", 10])",
          R"(["acquire", 0, "a", "", 10])",
          R"(["acquire", 0, "a", 5, 10])",
          R"(["acquire", 0, "a", "L", 1.5])",
          R"(["acquire", 0, "a", "L", 10.0])",
          R"(["acquire", 0, "a", "L", true])",
          R"(["acquire", 0, "a", "L", "10"])",
          R"(["acquire", 0, "a", "L", null])",
          R"(["acquire", 0, "a", "L", 10, "read"])",
          R"(["acquire", 0, "a", "L", 10, ""])",
          R"(["acquire", 0, "a", "L", 10, "Shared"])",
          R"(["acquire", 0, "a", "L", 10, "EXCLUSIVE"])",
          R"(["acquire", 0, "a", "L", 10, 1])",
          R"(["acquire", 0, "a", "L", 10, null])",
          R"(["acquire", 0, "a", "L", 10, true])",
      },
      kInvalidArguments);
}

TEST(Validation, RenewArgumentTypes) {
  ExpectEachAloneGives(
      {
          R"(["renew", 0, "", "L", 10])",
          R"(["renew", 0, 5, "L", 10])",
          R"(["renew", 0, "a", "", 10])",
          R"(["renew", 0, "a", 5, 10])",
          R"(["renew", 0, "a", "L", 1.5])",
          R"(["renew", 0, "a", "L", true])",
          R"(["renew", 0, "a", "L", "10"])",
      },
      kInvalidArguments);
}

TEST(Validation, ReleaseArgumentTypes) {
  ExpectEachAloneGives(
      {
          R"(["release", 0, "", "L"])",
          R"(["release", 0, 7, "L"])",
          R"(["release", 0, "a", ""])",
          R"(["release", 0, "a", null])",
      },
      kInvalidArguments);
}

TEST(Validation, WriteArgumentTypes) {
  ExpectEachAloneGives(
      {
          R"(["write", 0, "", "k", "v", 1])",
          R"(["write", 0, 5, "k", "v", 1])",
          R"(["write", 0, "L", "", "v", 1])",
          R"(["write", 0, "L", 5, "v", 1])",
          R"(["write", 0, "L", "k", "", 1])",
          R"(["write", 0, "L", "k", 5, 1])",
          R"(["write", 0, "L", "k", null, 1])",
          R"(["write", 0, "L", "k", "v", 0])",
          R"(["write", 0, "L", "k", "v", -1])",
          R"(["write", 0, "L", "k", "v", true])",
          R"(["write", 0, "L", "k", "v", 1.0])",
          R"(["write", 0, "L", "k", "v", "1"])",
          R"(["write", 0, "L", "k", "v", null])",
      },
      kInvalidArguments);
}

TEST(Validation, ReadInspectAndStatusArgumentTypes) {
  ExpectEachAloneGives(
      {
          R"(["read", 0, "", "k"])",
          R"(["read", 0, 5, "k"])",
          R"(["read", 0, "L", ""])",
          R"(["read", 0, "L", 5])",
          R"(["inspect", 0, ""])",
          R"(["inspect", 0, 5])",
          R"(["status", 0, ""])",
          R"(["status", 0, 5])",
      },
      kInvalidArguments);
}

TEST(Validation, TokenTypeIsCheckedBeforeStaleness) {
  // High-water mark 5: token 0 is still invalid arguments, not stale.
  ExpectRunGives(R"([["write", 0, "L", "k", "v", 5],
                     ["write", 1, "L", "k", "w", 0],
                     ["write", 2, "L", "k", "w", 4]])",
                 R"(["ok", "error: invalid arguments", "error: stale token"])");
}

TEST(Validation, AnyIntegerTokenAtLeastOneIsValid) {
  ExpectRunGives(R"([["write", 0, "L", "k", "v", 1],
                     ["write", 1, "M", "k", "v", 9223372036854775807],
                     ["read", 2, "M", "k"]])",
                 R"(["ok", "ok", "v"])");
}

// --- Type errors before range errors, range errors before state -----------

TEST(Validation, TypeErrorsAreReportedBeforeInvalidTtl) {
  ExpectEachAloneGives(
      {
          R"(["acquire", 0, "a", "L", 0, "read"])",
          R"(["acquire", 0, "a", "L", 86401, "reader"])",
          R"(["acquire", 0, "", "L", 0])",
          R"(["acquire", 0, "a", 5, 86401])",
          R"(["acquire", 0, "a", "L", 0.5])",
          R"(["renew", 0, "", "L", 0])",
          R"(["renew", 0, "a", "", -3])",
      },
      kInvalidArguments);
}

TEST(Validation, TtlOutsideOneTo86400IsInvalidTtl) {
  ExpectEachAloneGives(
      {
          R"(["acquire", 0, "a", "L", 0])",
          R"(["acquire", 0, "a", "L", -1])",
          R"(["acquire", 0, "a", "L", 86401])",
          R"(["acquire", 0, "a", "L", 0, "shared"])",
          R"(["acquire", 0, "a", "L", 9223372036854775807])",
          R"(["acquire", 0, "a", "L", -9223372036854775808])",
          R"(["acquire", 0, "a", "L", 18446744073709551615])",
          R"(["renew", 0, "a", "L", 0])",
          R"(["renew", 0, "a", "L", 86401])",
          R"(["renew", 0, "a", "L", -5])",
      },
      kInvalidTtl);
}

TEST(Validation, TtlOf1And86400AreAccepted) {
  ExpectRunGives(R"([["acquire", 0, "a", "L", 86400],
                     ["renew", 10, "a", "L", 86400],
                     ["acquire", 11, "b", "M", 1, "shared"],
                     ["renew", 11, "b", "M", 1]])",
                 R"([["granted", 1, 86400],
                     ["renewed", 1, 86410],
                     ["granted", 1, 12],
                     ["renewed", 1, 12]])");
}

TEST(Validation, InvalidTtlIsReportedBeforeClientBusy) {
  ExpectRunGives(R"([["acquire", 0, "a", "L", 10],
                     ["acquire", 1, "a", "L", 0],
                     ["acquire", 1, "a", "L", 10, "read"],
                     ["acquire", 1, "a", "L", 10]])",
                 R"([["granted", 1, 10],
                     "error: invalid ttl",
                     "error: invalid arguments",
                     "error: client busy"])");
}

TEST(Validation, InvalidTtlIsReportedBeforeNotHolder) {
  ExpectRunGives(R"([["renew", 0, "x", "L", 0],
                     ["renew", 0, "x", "L", 10]])",
                 R"(["error: invalid ttl", "error: not holder"])");
}

// --- Rule 1 for operations that fail --------------------------------------

TEST(Validation, OperationThatFailsValidationStillRetiresLapsedLeases) {
  // The failing acquire at 15 processes a's lapse at 10: b holds [10, 30).
  // Whoever notices, the hand-over instant is the expiry (rule 3).
  ExpectRunGives(R"([["acquire", 0, "a", "L", 10],
                     ["acquire", 1, "b", "L", 20],
                     ["acquire", 15, "c", "L", 0],
                     ["inspect", 16, "L"],
                     ["status", 16, "c"]])",
                 R"([["granted", 1, 10],
                     ["queued", 1],
                     "error: invalid ttl",
                     {"holders": [["b", "exclusive", 2, 30]], "queue": []},
                     {"age": null, "holds": [], "waiting": null}])");
}

TEST(Validation, OperationThatFailsValidationStillMovesTimeForward) {
  // For every known name, a failing operation at ts 15 moves time to 15:
  // an inspect at 12 afterwards has a decreasing ts.
  const std::vector<std::string> failing = {
      R"(["acquire", 15, "a"])",       R"(["acquire", 15, "a", "L", 0])",
      R"(["renew", 15, "a", "L", 0])", R"(["renew", 15, "a", "L", 10])",
      R"(["release", 15, ""])",        R"(["write", 15, "L", "k", "v", 0])",
      R"(["read", 15, "L"])",          R"(["inspect", 15, ""])",
      R"(["status", 15, 5])",          R"(["repeat", 15, [], 1, 0])",
  };
  for (const std::string& op : failing) {
    const nlohmann::json ops = nlohmann::json::array(
        {nlohmann::json::parse(op),
         nlohmann::json::parse(R"(["inspect", 12, "L"])")});
    const nlohmann::ordered_json got = RunOperations(ops);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[1].dump(), nlohmann::ordered_json(kInvalidArguments).dump())
        << "after " << op << " (which gave " << got[0].dump() << ")";
  }
}

TEST(Validation, OperationThatFailsChangesNothingElse) {
  // State: a holds L (token 1, until 100), b waits for L, the store holds
  // k = "v" under token 2. Then a series of failing operations. Afterwards
  // the state is the same, and the next client to register gets age 3
  // (no failing acquire registered anybody).
  ExpectRunGives(R"([["acquire", 0, "a", "L", 100],
                     ["acquire", 1, "b", "L", 100],
                     ["write", 2, "L", "k", "v", 2],
                     ["acquire", 10, "c", "L", 0],
                     ["acquire", 10, "c", "L", 10, "read"],
                     ["acquire", 10, "c", ""],
                     ["acquire", 10, "b", "M", 10],
                     ["acquire", 10, "a", "L", 10],
                     ["release", 11, "a", 5],
                     ["release", 11, "c", "L"],
                     ["renew", 12, "a", "L", 0],
                     ["renew", 12, "b", "L", 10],
                     ["write", 13, "L", "k", "", 3],
                     ["write", 13, "L", "k", "w", 0],
                     ["write", 13, "L", "k", "w", 1],
                     ["repeat", 14, ["acquire", "c", "L", 10], 0, 0],
                     ["inspect", 20, "L"],
                     ["status", 20, "a"],
                     ["status", 20, "b"],
                     ["status", 20, "c"],
                     ["read", 20, "L", "k"],
                     ["acquire", 21, "d", "D", 10],
                     ["status", 22, "d"]])",
                 R"([["granted", 1, 100],
                     ["queued", 1],
                     "ok",
                     "error: invalid ttl",
                     "error: invalid arguments",
                     "error: invalid arguments",
                     "error: client busy",
                     "error: client busy",
                     "error: invalid arguments",
                     "error: not holder",
                     "error: invalid ttl",
                     "error: not holder",
                     "error: invalid arguments",
                     "error: invalid arguments",
                     "error: stale token",
                     "error: invalid arguments",
                     {"holders": [["a", "exclusive", 1, 100]], "queue": [["b", "exclusive"]]},
                     {"age": 1, "holds": [["L", "exclusive", 1, 100]], "waiting": null},
                     {"age": 2, "holds": [], "waiting": "L"},
                     {"age": null, "holds": [], "waiting": null},
                     "v",
                     ["granted", 1, 31],
                     {"age": 3, "holds": [["D", "exclusive", 1, 31]], "waiting": null}])");
}

}  // namespace
}  // namespace leasekeeper
