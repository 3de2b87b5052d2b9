#include "latencies.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace leasekeeper::bench {

void Latencies::Merge(const Latencies& other) {
  samples_ns_.insert(samples_ns_.end(), other.samples_ns_.begin(),
                     other.samples_ns_.end());
  sorted_ = false;
}

void Latencies::Sort() {
  if (!sorted_) std::sort(samples_ns_.begin(), samples_ns_.end());
  sorted_ = true;
}

double Latencies::PercentileUs(double p) {
  if (samples_ns_.empty()) return 0;
  Sort();
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * samples_ns_.size()));
  rank = std::clamp<size_t>(rank, 1, samples_ns_.size());
  return samples_ns_[rank - 1] / 1000.0;
}

nlohmann::json Latencies::Summary() {
  double mean = 0;
  if (!samples_ns_.empty()) {
    mean = std::accumulate(samples_ns_.begin(), samples_ns_.end(), 0.0) /
           samples_ns_.size() / 1000.0;
  }
  return {{"n", samples_ns_.size()},
          {"p50_us", PercentileUs(50)},
          {"p99_us", PercentileUs(99)},
          {"max_us", PercentileUs(100)},
          {"mean_us", mean}};
}

}  // namespace leasekeeper::bench
