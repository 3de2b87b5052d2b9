// The contract's Part 4 workloads as `run(operations)` JSON input.
//
// Each workload is one JSON array of about 20,000 operations once its
// `repeat` ops are expanded, built the way the contract's hidden scale tests
// drive the service. A workload also carries the results it must produce at
// chosen positions (repeat tallies, inspect/status views), so a benchmark can
// prove that it exercised the path it claims to (grants, queues, hand-overs,
// lapses, deadlock victims) and not, say, a stream of validation errors.
//
// Thread-safety: plain values.
#ifndef LEASEKEEPER_BENCH_WORKLOADS_H_
#define LEASEKEEPER_BENCH_WORKLOADS_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"

namespace leasekeeper::bench {

struct Workload {
  std::string name;         // snake_case, used in the benchmark's name
  std::string description;  // one line, for bench/README.md
  nlohmann::json operations = nlohmann::json::array();
  // Operations run, each repeat counted as its `count`.
  size_t expanded_ops = 0;
  // (index in the result array, the exact result expected there).
  std::vector<std::pair<size_t, nlohmann::json>> expected;
};

// (a) thousands of locks and clients, (b) queues of hundreds with releases,
// withdrawals and lapse chains handing over, (c) one lock with 2,000 shared
// holders and a writer behind them, (d) deep wait-for graphs and the
// acquires that close cycles through them.
std::vector<Workload> Part4Workloads();

// OK if `output` (what RunReplayText returned) is a JSON array with one
// result per operation and every expected result in place; otherwise
// FailedPrecondition naming the first difference.
absl::Status CheckResults(const Workload& workload, std::string_view output);

}  // namespace leasekeeper::bench

#endif  // LEASEKEEPER_BENCH_WORKLOADS_H_
