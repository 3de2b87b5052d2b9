// libFuzzer target over the replay's input: arbitrary bytes go to
// RunReplayText exactly as leasekeeper-replay reads them from stdin.
//
// It must never crash, hang, leak or trip ASan/UBSan, and it checks the
// replay's own contract: input that parses as a JSON array gives one result
// per operation; anything else is refused with InvalidArgument.
//
// Inputs whose `repeat` operations would expand to more than
// kMaxExpandedOps runs are skipped (returning -1 keeps them out of the
// corpus): a handful of 100,000-run repeats is legitimate but slow, and
// would only make the fuzzer slow, not find bugs.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "replay/replay.h"

namespace {

using json = nlohmann::json;

constexpr int64_t kMaxExpandedOps = 200000;
// The replay's own limit on a repeat's count.
constexpr int64_t kMaxRepeatCount = 100000;

// Runs the top-level operations and their repeat expansions would make.
int64_t ExpandedOps(const json& operations) {
  int64_t total = 0;
  for (const json& op : operations) {
    ++total;
    if (op.is_array() && op.size() == 5 && op[0] == "repeat" &&
        op[3].is_number_integer()) {
      // nlohmann keeps a non-negative literal as unsigned.
      const int64_t count = op[3].is_number_unsigned()
                                ? static_cast<int64_t>(std::min<uint64_t>(
                                      op[3].get<uint64_t>(), kMaxRepeatCount))
                                : op[3].get<int64_t>();
      if (count > 0) total += count < kMaxRepeatCount ? count : kMaxRepeatCount;
    }
  }
  return total;
}

// The nesting depth of `value` (a scalar is 0), counted up to `limit`.
int Depth(const json& value, int limit) {
  if (!value.is_structured() || limit == 0) return 0;
  int deepest = 0;
  for (const json& element : value) {
    const int depth = Depth(element, limit - 1);
    if (depth > deepest) deepest = depth;
  }
  return deepest + 1;
}

[[noreturn]] void Fail(const char* what, std::string_view input) {
  std::fprintf(stderr, "replay_fuzzer: %s\ninput: %.*s\n", what,
               static_cast<int>(input.size() > 2000 ? 2000 : input.size()),
               input.data());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  // An independent look at the input, to know what the replay must answer.
  // (No exceptions: the replay's parse is the one under test.) nlohmann's
  // plain parse also fails on valid JSON it cannot represent (1e400), which
  // the replay may accept: then only the output's shape can be checked.
  const json parsed = json::parse(input, nullptr, /*allow_exceptions=*/false);
  const bool known = !parsed.is_discarded();
  const bool is_array = known && parsed.is_array();
  if (is_array && ExpandedOps(parsed) > kMaxExpandedOps) return -1;
  if (!known && input.find("repeat") != std::string_view::npos) return -1;

  const absl::StatusOr<std::string> output =
      leasekeeper::RunReplayText(absl::string_view(input.data(), input.size()));

  if (!output.ok()) {
    if (output.status().code() != absl::StatusCode::kInvalidArgument) {
      Fail("a refusal that is not InvalidArgument", input);
    }
    // The replay may refuse JSON nested deeper than it allows, never an
    // ordinary operation list.
    if (is_array && Depth(parsed, 8) <= 4) {
      Fail("a JSON array of operations was refused", input);
    }
    return 0;
  }
  if (known && !is_array) {
    Fail("input that is not a JSON array was accepted", input);
  }
  const json results =
      json::parse(*output, nullptr, /*allow_exceptions=*/false);
  if (results.is_discarded() || !results.is_array()) {
    Fail("the output is not a JSON array", input);
  }
  if (is_array && results.size() != parsed.size()) {
    Fail("not one result per operation", input);
  }
  return 0;
}
