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
#include <mutex>

#include "core/types.h"

namespace leasekeeper::server {

class Clock {
 public:
  virtual ~Clock() = default;

  // The current tick. Never decreases.
  virtual Tick Now() = 0;

  // Blocks until Now() >= deadline or Interrupt() is called, whichever comes
  // first. An Interrupt() that happens while nobody sleeps makes the next
  // SleepUntil return at once (no lost wake-up). May return early
  // spuriously; callers re-check.
  virtual void SleepUntil(Tick deadline) = 0;

  // Wakes the sleeper (see SleepUntil).
  virtual void Interrupt() = 0;
};

// Milliseconds of std::chrono::steady_clock since its epoch.
class SteadyClock final : public Clock {
 public:
  SteadyClock() = default;
  SteadyClock(const SteadyClock&) = delete;
  SteadyClock& operator=(const SteadyClock&) = delete;

  Tick Now() override;
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
  void SleepUntil(Tick deadline) override;
  void Interrupt() override;

  // Moves the clock to `tick`; a smaller value is ignored (time never goes
  // back). Wakes a sleeper whose deadline has come.
  void Set(Tick tick);
  // Moves the clock forward by `ms` (>= 0).
  void Advance(Tick ms);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  Tick now_;                  // guarded by mu_
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
