// Gauge: an integer level that goes up and down (locks held, waiters,
// sessions open), exposed as a Prometheus gauge.
//
// A quantity that is cheaper to read when scraped than to track on every
// change is registered instead as a callback gauge
// (Registry::AddCallbackGauge).
//
// Thread-safety: every method may be called from any thread at any time; each
// is one relaxed atomic operation (lock-free, never blocks or allocates).
//
// Invariants:
//  1. A gauge lives as long as the Registry that made it; its address never
//     changes.
#ifndef LEASEKEEPER_METRICS_GAUGE_H_
#define LEASEKEEPER_METRICS_GAUGE_H_

#include <atomic>
#include <cstdint>

namespace leasekeeper::metrics {

class alignas(64) Gauge {
 public:
  Gauge() = default;
  Gauge(const Gauge&) = delete;
  Gauge& operator=(const Gauge&) = delete;

  void Set(int64_t value) { value_.store(value, std::memory_order_relaxed); }
  // Adds `delta`, which may be negative.
  void Add(int64_t delta) {
    value_.fetch_add(delta, std::memory_order_relaxed);
  }
  void Increment() { Add(1); }
  void Decrement() { Add(-1); }

  int64_t Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> value_{0};
};

}  // namespace leasekeeper::metrics

#endif  // LEASEKEEPER_METRICS_GAUGE_H_
