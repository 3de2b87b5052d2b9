#include "client/lease_timer.h"

#include <algorithm>
#include <chrono>

namespace leasekeeper::client {

MonotonicTime MonotonicNow() {
  return absl::FromChrono(std::chrono::steady_clock::now().time_since_epoch());
}

absl::Duration LeaseTimer::FirstRetryDelay(absl::Duration ttl) {
  return std::min(absl::Milliseconds(100), MaxRetryDelay(ttl));
}

LeaseTimer::LeaseTimer(absl::Duration ttl, MonotonicTime counted_from,
                       absl::Duration lease_left)
    : ttl_(ttl),
      deadline_(counted_from + lease_left - SafetyMargin(ttl)),
      next_attempt_at_(NextAttemptFor(deadline_)),
      retry_delay_(FirstRetryDelay(ttl)) {}

MonotonicTime LeaseTimer::NextAttemptFor(MonotonicTime deadline) const {
  // A third of the ttl after the send that set `deadline`.
  return deadline + SafetyMargin(ttl_) - ttl_ + RenewInterval(ttl_);
}

void LeaseTimer::OnRenewed(MonotonicTime sent_at) {
  deadline_ = std::max(deadline_, sent_at + ttl_ - SafetyMargin(ttl_));
  next_attempt_at_ = NextAttemptFor(deadline_);
  retry_delay_ = FirstRetryDelay(ttl_);
}

void LeaseTimer::OnTransientFailure(MonotonicTime now) {
  next_attempt_at_ = now + retry_delay_;
  retry_delay_ = std::min(retry_delay_ * 2, MaxRetryDelay(ttl_));
}

}  // namespace leasekeeper::client
