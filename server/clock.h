// Clock: the server's source of time, and a way to sleep on it.
//
// The core never reads a clock (core/types.h); the server reads one of these
// and passes the result down as a Tick. Ticks are monotonic milliseconds:
// SteadyClock counts milliseconds of std::chrono::steady_clock
// (CLOCK_MONOTONIC on Linux, shared by every process of the machine, so a
// benchmark on the same host can relate its own steady_clock readings to
// the server's ticks). Wall time is never used for deadlines.
//
// Tests use FakeClock, which moves only when told to (Set/Advance) and
// wakes a sleeper when it does, so timer-driven behaviour (lapses, wait
// timeouts, session grace) is deterministic.
//
// Thread-safety: every method of both implementations may be called from any
// thread. SleepUntil is meant for one sleeping thread (the server's timer).
#ifndef LEASEKEEPER_SERVER_CLOCK_H_
#define LEASEKEEPER_SERVER_CLOCK_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "core/types.h"

namespace leasekeeper::server {

class Clock {
 public:
  virtual ~Clock() = default;

  // The current tick. Never decreases.
  virtual Tick Now() = 0;

  // The current tick, and whether the moment lies after the tick's start
  // (inside the millisecond rather than on its boundary). Ticks truncate,
  // so a lease granted or renewed at a moment inside tick T gets one tick
  // more from the server (kGrantRoundingTicks): it then never ends before
  // its ttl has passed since the request arrived. Default: on the boundary.
  struct Reading {
    Tick tick = 0;
    bool inside = false;
  };
  virtual Reading Read() { return Reading{Now(), false}; }

  // Blocks until Now() >= deadline or Interrupt() is called, whichever comes
  // first. An Interrupt() that happens while nobody sleeps makes the next
  // SleepUntil return at once (no lost wake-up). May return early
  // spuriously; callers re-check.
  virtual void SleepUntil(Tick deadline) = 0;

  // Wakes the sleeper (see SleepUntil).
  virtual void Interrupt() = 0;
};

// The ticks a lease granted or renewed inside a tick is extended by: the
// grant instant rounded up to the end of its millisecond.
inline constexpr Tick kGrantRoundingTicks = 1;

// Milliseconds of std::chrono::steady_clock since its epoch (truncated;
// Read says whether nanoseconds remain).
class SteadyClock final : public Clock {
 public:
  SteadyClock() = default;
  SteadyClock(const SteadyClock&) = delete;
  SteadyClock& operator=(const SteadyClock&) = delete;

  Tick Now() override;
  Reading Read() override;
  void SleepUntil(Tick deadline) override;
  void Interrupt() override;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool interrupted_ = false;  // guarded by mu_
};

// A clock that moves only when a test moves it.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(Tick start = 0) : now_(start) {}
  FakeClock(const FakeClock&) = delete;
  FakeClock& operator=(const FakeClock&) = delete;

  Tick Now() override;
  Reading Read() override;
  void SleepUntil(Tick deadline) override;
  void Interrupt() override;

  // Moves the clock to `tick`; a smaller value is ignored (time never goes
  // back). Wakes a sleeper whose deadline has come. The clock is then on
  // the tick's boundary.
  void Set(Tick tick);
  // Moves the clock to a moment inside `tick` (between it and the next),
  // as a real clock almost always is; a smaller tick is ignored.
  void SetInside(Tick tick);
  // Moves the clock forward by `ms` (>= 0).
  void Advance(Tick ms);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  Tick now_;                  // guarded by mu_
  bool inside_ = false;       // guarded by mu_: see SetInside
  bool interrupted_ = false;  // guarded by mu_
};

// Another clock shifted by a constant, so that a restarted leasekeeperd
// continues the ticks of the one before it: durability recovers the last
// tick it logged and the server sets the offset once, before serving, so
// that its first tick is the one after it (storage/durable_store.h, "Time
// across restarts"). Downtime thus does not count against leases.
class OffsetClock final : public Clock {
 public:
  explicit OffsetClock(Clock& base) : base_(base) {}
  OffsetClock(const OffsetClock&) = delete;
  OffsetClock& operator=(const OffsetClock&) = delete;

  // From now on Now() starts at `first_tick`. REQUIRES: nobody else uses
  // the clock yet (called once, at start).
  void ContinueFrom(Tick first_tick) {
    offset_.store(first_tick - base_.Now());
  }

  Tick Now() override { return base_.Now() + offset_.load(); }
  Reading Read() override {
    Reading reading = base_.Read();
    reading.tick += offset_.load();
    return reading;
  }
  void SleepUntil(Tick deadline) override {
    base_.SleepUntil(deadline >= kMaxTick ? kMaxTick
                                          : deadline - offset_.load());
  }
  void Interrupt() override { base_.Interrupt(); }

 private:
  Clock& base_;
  std::atomic<Tick> offset_{0};
};

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_CLOCK_H_
