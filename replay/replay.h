// Replay: the contract's run(operations) format over the core, what
// `leasekeeper-replay` serves. Each operation is [name, ts, ...args];
// results are the contract's JSON values and "error: <code>" strings.
//
// Thread-safety: a Replay is single-threaded; separate instances are
// independent.
#ifndef LEASEKEEPER_REPLAY_REPLAY_H_
#define LEASEKEEPER_REPLAY_REPLAY_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/state_machine.h"
#include "nlohmann/json.hpp"

namespace leasekeeper {

class Replay {
 public:
  Replay() : machine_(CoreConfig{.record_events = false}) {}
  Replay(const Replay&) = delete;
  Replay& operator=(const Replay&) = delete;

  // Applies one operation (any JSON value) and returns its result. Checks,
  // in this order:
  //  1. not a non-empty list -> "error: invalid arguments";
  //  2. first element not a known operation name -> "error: unknown
  //     operation";
  //  3. ts not an integer (booleans and floats are not) or outside
  //     [kMinTick, kMaxTick], or smaller than the previous operation's ts ->
  //     "error: invalid arguments" (time does not move);
  //  4. time advances to ts (rule 1), even if the operation then fails;
  //  5. wrong number of arguments, then each argument's type (non-empty
  //     string, integer, mode spelling, token >= 1) -> "error: invalid
  //     arguments";
  //  6. range checks (ttl in 1..86400) -> "error: invalid ttl";
  //  7. state checks (client busy, not holder, stale token).
  // Two shapes the contract leaves open:
  //  - ["renew", ts, client, lock, ttl] -> ["renewed", token, expires_at].
  //  - ["repeat", ts, template, count, step] -> {"ops", "results"[,
  //    "aborted"]}. A template is a non-empty list whose first element is
  //    not "repeat"; count in 1..100000, step >= 0 integers, and
  //    ts + (count-1)*step within kMaxTick; placeholders {i}, {i+A}, {i%K},
  //    {i+A%K} (A, K decimal digits, K >= 1; {i%0} makes the template bad).
  //    Each run is applied exactly as a top-level operation would be, so an
  //    unknown name in the template is tallied as "error: unknown
  //    operation" per run. Cost: O(count) operations.
  nlohmann::ordered_json Apply(const nlohmann::json& operation);

 private:
  // Apply's step per operation, after its time and arity checks.
  nlohmann::ordered_json ApplyAcquire(Tick ts, const nlohmann::json& operation);
  nlohmann::ordered_json ApplyRenew(Tick ts, const nlohmann::json& operation);
  nlohmann::ordered_json ApplyRelease(Tick ts, const nlohmann::json& operation);
  nlohmann::ordered_json ApplyWrite(Tick ts, const nlohmann::json& operation);
  nlohmann::ordered_json ApplyRead(Tick ts, const nlohmann::json& operation);
  nlohmann::ordered_json ApplyInspect(Tick ts, const nlohmann::json& operation);
  nlohmann::ordered_json ApplyStatus(Tick ts, const nlohmann::json& operation);
  nlohmann::ordered_json ApplyRepeat(Tick ts, const nlohmann::json& operation);
  StateMachine machine_;
};

// The contract's JSON shapes of the core's answers, as Apply prints them:
// ["granted", token, expires_at[, aborted]], ["queued", position[,
// aborted]], ["deadlock", aborted]; inspect's {"holders", "queue"} and
// status's {"age", "holds", "waiting"}. For tools that drive the core in
// the replay's format (tests/differential/semaphore_driver).
nlohmann::ordered_json AcquireJson(const AcquireOutcome& outcome);
nlohmann::ordered_json InspectJson(const LockView& view);
nlohmann::ordered_json StatusJson(const ClientView& view);

// run(operations) on a fresh service: one result per operation.
// REQUIRES: operations.is_array().
nlohmann::ordered_json RunOperations(const nlohmann::json& operations);

// Parses `input` as one JSON array and runs it; the serialized result array.
// InvalidArgument with a readable message when the input is not JSON, not a
// top-level array, nested deeper than 256 levels, or holds a number beyond
// a double's range (1e400). Integer literals beyond 64 bits stay integers,
// saturated to the nearest 64-bit value.
absl::StatusOr<std::string> RunReplayText(absl::string_view input);

}  // namespace leasekeeper

#endif  // LEASEKEEPER_REPLAY_REPLAY_H_
