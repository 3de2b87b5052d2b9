#include "client/internal/backoff.h"

#include <algorithm>

#include "absl/random/random.h"

namespace leasekeeper::client::internal {

Backoff::Backoff(absl::Duration first, absl::Duration max)
    : first_(first), max_(max), nominal_(first) {}

absl::Duration Backoff::Next() {
  // One generator per thread: a Backoff stays a copyable value, and no
  // two threads share a generator.
  thread_local absl::InsecureBitGen random;
  const absl::Duration delay =
      nominal_ / 2 + nominal_ * absl::Uniform(random, 0.0, 0.5);
  nominal_ = std::min(nominal_ * 2, max_);
  return delay;
}

}  // namespace leasekeeper::client::internal
