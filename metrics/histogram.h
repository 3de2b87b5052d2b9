// Histogram: counts observations (latencies, batch sizes) into fixed buckets,
// exposed as a Prometheus histogram: cumulative `_bucket{le="..."}` series,
// `_sum` and `_count`.
//
// The bucket upper bounds are fixed when the histogram is registered
// (Registry::AddHistogram validates them) and never change; there is no
// dynamic resizing and no per-observation allocation.
//
// Thread-safety: Observe and Read may be called from any thread at any time.
// Observe is a binary search over the bounds plus two relaxed atomic adds and
// one atomic floating-point add: lock-free, it never blocks or allocates.
//
// Invariants:
//  1. bounds() is non-empty, finite and strictly increasing; an implicit
//     +Inf bucket follows the last bound.
//  2. An observation v lands in the first bucket whose bound is >= v (the
//     Prometheus `le` rule); above the last bound, in +Inf.
//  3. In every Snapshot, cumulative counts never decrease from one bucket to
//     the next and the +Inf count equals `count`, even while observations
//     race with the read (count is derived from the buckets read). `sum` may
//     include or miss an observation that raced with the read.
//  4. A histogram lives as long as the Registry that made it.
#ifndef LEASEKEEPER_METRICS_HISTOGRAM_H_
#define LEASEKEEPER_METRICS_HISTOGRAM_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace leasekeeper::metrics {

// At most this many finite bucket bounds per histogram.
inline constexpr size_t kMaxHistogramBuckets = 64;

// Latency buckets in seconds, 100 us .. 10 s: a lock RPC on a warm server
// takes well under a millisecond, an fsync a few milliseconds, a waiting
// Acquire up to its wait timeout.
std::vector<double> LatencyBucketsSeconds();

// `count` bounds start, start*factor, start*factor^2, ...
// REQUIRES: start > 0, factor > 1, 1 <= count <= kMaxHistogramBuckets.
std::vector<double> ExponentialBuckets(double start, double factor, int count);

class Histogram {
 public:
  struct Snapshot {
    // cumulative[i] = observations <= bounds[i]; the last entry (index
    // bounds.size()) is the +Inf bucket and equals `count`.
    std::vector<uint64_t> cumulative;
    uint64_t count = 0;
    double sum = 0;
  };

  // Outcomes: the histogram; INVALID_ARGUMENT if `bounds` is empty, longer
  // than kMaxHistogramBuckets, not strictly increasing, or holds a NaN or an
  // infinity.
  static absl::StatusOr<std::unique_ptr<Histogram>> Create(
      std::vector<double> bounds);

  Histogram(const Histogram&) = delete;
  Histogram& operator=(const Histogram&) = delete;

  // Records one observation. NaN is ignored (it has no bucket). O(log
  // buckets), lock-free.
  void Observe(double value);

  // Records a duration in seconds.
  void ObserveDuration(absl::Duration duration) {
    Observe(absl::ToDoubleSeconds(duration));
  }

  // A consistent-enough copy for rendering (see invariant 3). O(buckets).
  Snapshot Read() const;

  const std::vector<double>& bounds() const { return bounds_; }

 private:
  explicit Histogram(std::vector<double> bounds);

  const std::vector<double> bounds_;
  // Per-bucket (not cumulative) counts; index bounds_.size() is +Inf.
  const std::unique_ptr<std::atomic<uint64_t>[]> buckets_;
  std::atomic<double> sum_{0};
};

}  // namespace leasekeeper::metrics

#endif  // LEASEKEEPER_METRICS_HISTOGRAM_H_
