// Latencies: every sample of one measured interval, kept whole (no
// histogram buckets), so percentiles are exact.
//
// Thread-safety: none; each client keeps its own and the workload merges
// them after the clients have stopped.

#ifndef LEASEKEEPER_BENCH_ANCHORS_LATENCIES_H_
#define LEASEKEEPER_BENCH_ANCHORS_LATENCIES_H_

#include <cstdint>
#include <vector>

#include "nlohmann/json.hpp"

namespace leasekeeper::bench {

class Latencies {
 public:
  void Add(int64_t ns) { samples_ns_.push_back(ns); }
  void Merge(const Latencies& other);
  size_t count() const { return samples_ns_.size(); }

  // The p-th percentile (0 < p <= 100, nearest rank) in microseconds; 0 when
  // there is no sample. Cost: O(n log n) the first time after an Add.
  double PercentileUs(double p);

  // {"n", "p50_us", "p99_us", "max_us", "mean_us"}.
  nlohmann::json Summary();

 private:
  void Sort();

  std::vector<int64_t> samples_ns_;
  bool sorted_ = false;
};

}  // namespace leasekeeper::bench

#endif  // LEASEKEEPER_BENCH_ANCHORS_LATENCIES_H_
