// The core with semaphores, in the replay's JSON shapes, for
// differential_test.py --semaphores (leasekeeper-replay knows no semaphores
// and must not).
//
// Reads one JSON array of operations on stdin and prints the array of
// results, each as leasekeeper-replay would print it, plus:
//  - ["acquire", ts, client, lock, ttl, "semaphore", N] takes a permit of a
//    semaphore of capacity N (any other mode as in the replay);
//  - inspect answers {"holders", "queue", "capacity"} (capacity 0 unless the
//    lock is an active semaphore).
// Only well-typed operations are accepted (the generator makes no others):
// the replay's type checks are tested against the model without this tool.
// Results are shaped by the replay's own AcquireJson, InspectJson and
// StatusJson.
#include <iostream>
#include <iterator>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/lock_table.h"
#include "nlohmann/json.hpp"
#include "replay/replay.h"

namespace leasekeeper {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

ojson Error(const absl::Status& status) {
  return absl::StrCat("error: ", status.message());
}

ojson Apply(LockTable& table, const json& op) {
  const std::string name = op.at(0).get<std::string>();
  const Tick ts = op.at(1).get<Tick>();
  if (name == "acquire") {
    LockMode mode = LockMode::kExclusive;
    uint32_t capacity = 0;
    if (op.size() > 5) {
      const std::string spelling = op[5].get<std::string>();
      if (spelling == "semaphore") {
        mode = LockMode::kSemaphore;
        capacity = op.at(6).get<uint32_t>();
      } else if (spelling == "shared") {
        mode = LockMode::kShared;
      }
    }
    absl::StatusOr<AcquireOutcome> out =
        table.Acquire(ts, op[2].get<std::string>(), op[3].get<std::string>(),
                      op[4].get<int64_t>(), mode, capacity);
    if (!out.ok()) return Error(out.status());
    return AcquireJson(*out);
  }
  if (name == "renew") {
    absl::StatusOr<RenewOutcome> out =
        table.Renew(ts, op[2].get<std::string>(), op[3].get<std::string>(),
                    op[4].get<int64_t>());
    if (!out.ok()) return Error(out.status());
    return ojson::array({"renewed", out->token, out->expires_at});
  }
  if (name == "release") {
    absl::StatusOr<ReleaseOutcome> out =
        table.Release(ts, op[2].get<std::string>(), op[3].get<std::string>());
    if (!out.ok()) return Error(out.status());
    return *out == ReleaseOutcome::kReleased ? "released" : "withdrawn";
  }
  if (name == "inspect") {
    const LockView view = table.Inspect(ts, op[2].get<std::string>());
    ojson result = InspectJson(view);
    result["capacity"] = view.capacity;
    return result;
  }
  if (name == "status") {
    return StatusJson(table.Status(ts, op[2].get<std::string>()));
  }
  return "error: unknown operation";
}

}  // namespace
}  // namespace leasekeeper

int main() {
  const std::string input((std::istreambuf_iterator<char>(std::cin)),
                          std::istreambuf_iterator<char>());
  const nlohmann::json operations = nlohmann::json::parse(input);
  leasekeeper::LockTable table(leasekeeper::CoreConfig{.record_events = false});
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  for (const nlohmann::json& op : operations) {
    results.push_back(leasekeeper::Apply(table, op));
    if (absl::Status status = table.CheckInvariants(); !status.ok()) {
      std::cerr << "invariant broken after " << op.dump() << ": "
                << status.message() << "\n";
      return 3;
    }
  }
  std::cout << results.dump() << "\n";
  return 0;
}
