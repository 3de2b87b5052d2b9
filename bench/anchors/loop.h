// Loop: runs callbacks on one thread. Every lock client of the bench is bound
// to one loop; its calls complete, and its callbacks run, on that loop's
// thread, so a client's state needs no lock.
//
// Thread-safety: After() may be called from any thread; everything else a
// client does happens on its loop's thread.

#ifndef LEASEKEEPER_BENCH_ANCHORS_LOOP_H_
#define LEASEKEEPER_BENCH_ANCHORS_LOOP_H_

#include <chrono>
#include <cstdint>

#include "absl/functional/any_invocable.h"
#include "absl/time/time.h"

namespace leasekeeper::bench {

// The bench's clock: CLOCK_MONOTONIC in nanoseconds, the clock leasekeeperd
// uses too (std::chrono::steady_clock on Linux).
inline int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class Loop {
 public:
  virtual ~Loop() = default;

  // Runs `fn` on the loop's thread once `delay` has passed (zero: as soon as
  // possible). Thread-safe.
  virtual void After(absl::Duration delay, absl::AnyInvocable<void()> fn) = 0;

  void Post(absl::AnyInvocable<void()> fn) {
    After(absl::ZeroDuration(), std::move(fn));
  }
};

}  // namespace leasekeeper::bench

#endif  // LEASEKEEPER_BENCH_ANCHORS_LOOP_H_
