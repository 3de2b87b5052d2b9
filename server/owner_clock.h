// OwnerClock: the owner's reading of the Clock, and the grant rounding that
// follows from it. Time seen by the core never goes back: a reading behind
// the latest tick (threads take the core mutex in any order) counts as that
// tick. A reading that lies inside its tick gives an Acquire or Renew
// applied at it kGrantRoundingTicks more (CoreTtl), which answers do not
// show (SureLeft, rounding).
// Thread-safety: none; CoreOwner's core mutex guards it.
#ifndef LEASEKEEPER_SERVER_OWNER_CLOCK_H_
#define LEASEKEEPER_SERVER_OWNER_CLOCK_H_

#include <cstdint>

#include "core/types.h"
#include "server/clock.h"

namespace leasekeeper::server {

class OwnerClock {
 public:
  explicit OwnerClock(Clock& clock) : clock_(clock) {}
  OwnerClock(const OwnerClock&) = delete;
  OwnerClock& operator=(const OwnerClock&) = delete;

  // Reads the clock: the latest tick seen, this reading's or an earlier
  // one's. A reading inside its tick marks the rounding, one behind the
  // latest tick does not (it is applied later than it happened).
  Tick Read();
  // Time continues from at least `tick` (recovered storage's).
  void ContinueFrom(Tick tick);

  // The latest tick read, and whether the last reading lay inside it.
  Tick now() const { return last_tick_; }
  bool inside_tick() const { return inside_tick_; }
  // The ticks a grant at the last reading got beyond the ttl asked for.
  int64_t rounding() const { return inside_tick_ ? kGrantRoundingTicks : 0; }
  // The ttl the core is given for a request's `ttl_ms`: rounded up inside
  // a tick; a ttl out of range unchanged, for the core to refuse.
  int64_t CoreTtl(int64_t ttl_ms) const;
  // What surely remains at `now` of a lease ending at `expires_at`.
  int64_t SureLeft(Tick expires_at, Tick now) const;

 private:
  Clock& clock_;
  Tick last_tick_ = kMinTick;
  bool inside_tick_ = false;
};

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_OWNER_CLOCK_H_
