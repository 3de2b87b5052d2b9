// Counter: a monotonically increasing count, exposed as a Prometheus
// counter (`leasekeeper_..._total`).
//
// Thread-safety: every method may be called from any thread at any time.
// Increment is one relaxed atomic add: cheap enough for every request's hot
// path, and it never blocks, allocates or logs, so it may be called while
// another component holds its own mutex (the server still counts after
// leaving the core, by the style rule).
//
// Invariants:
//  1. Value() never decreases (until the 2^64 wrap, which is out of reach).
//  2. A counter lives as long as the Registry that made it; its address never
//     changes.
#ifndef LEASEKEEPER_METRICS_COUNTER_H_
#define LEASEKEEPER_METRICS_COUNTER_H_

#include <atomic>
#include <cstdint>

namespace leasekeeper::metrics {

// Each counter owns its cache line, so two hot counters updated from two
// threads do not slow each other down.
class alignas(64) Counter {
 public:
  Counter() = default;
  Counter(const Counter&) = delete;
  Counter& operator=(const Counter&) = delete;

  // Adds `n` (default 1). O(1), lock-free.
  void Increment(uint64_t n = 1) {
    value_.fetch_add(n, std::memory_order_relaxed);
  }

  // The current count. Concurrent increments may or may not be included.
  uint64_t Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

}  // namespace leasekeeper::metrics

#endif  // LEASEKEEPER_METRICS_COUNTER_H_
