#include "server/owner_clock.h"

#include <algorithm>

#include "server/query_answers.h"
#include "server/server_config.h"

namespace leasekeeper::server {

Tick OwnerClock::Read() {
  const Clock::Reading reading = clock_.Read();
  inside_tick_ = reading.inside && reading.tick >= last_tick_;
  last_tick_ = std::max(last_tick_, reading.tick);
  return last_tick_;
}

void OwnerClock::ContinueFrom(Tick tick) {
  last_tick_ = std::max(last_tick_, tick);
}

int64_t OwnerClock::CoreTtl(int64_t ttl_ms) const {
  if (ttl_ms < 1 || ttl_ms > kMaxTtlMs || !inside_tick_) return ttl_ms;
  return ttl_ms + kGrantRoundingTicks;
}

int64_t OwnerClock::SureLeft(Tick expires_at, Tick now) const {
  return SureLeftMs(expires_at, now, rounding());
}

}  // namespace leasekeeper::server
