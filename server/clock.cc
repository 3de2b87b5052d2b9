#include "server/clock.h"

#include <chrono>

namespace leasekeeper::server {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

}  // namespace

Tick SteadyClock::Now() {
  return std::chrono::duration_cast<milliseconds>(
             steady_clock::now().time_since_epoch())
      .count();
}

Clock::Reading SteadyClock::Read() {
  const auto since_epoch = steady_clock::now().time_since_epoch();
  const auto ms = std::chrono::duration_cast<milliseconds>(since_epoch);
  return Reading{ms.count(), since_epoch != ms};
}

void SteadyClock::SleepUntil(Tick deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  if (deadline >= kMaxTick) {
    cv_.wait(lock, [this] { return interrupted_; });
  } else {
    // steady_clock's epoch is the tick epoch, so the deadline converts
    // exactly; libstdc++ waits on CLOCK_MONOTONIC for steady_clock.
    cv_.wait_until(lock, steady_clock::time_point(milliseconds(deadline)),
                   [this] { return interrupted_; });
  }
  interrupted_ = false;
}

void SteadyClock::Interrupt() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    interrupted_ = true;
  }
  cv_.notify_all();
}

Tick FakeClock::Now() {
  std::lock_guard<std::mutex> lock(mu_);
  return now_;
}

Clock::Reading FakeClock::Read() {
  std::lock_guard<std::mutex> lock(mu_);
  return Reading{now_, inside_};
}

void FakeClock::SleepUntil(Tick deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return interrupted_ || now_ >= deadline; });
  interrupted_ = false;
}

void FakeClock::Interrupt() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    interrupted_ = true;
  }
  cv_.notify_all();
}

void FakeClock::Set(Tick tick) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (tick <= now_) return;
    now_ = tick;
    inside_ = false;
  }
  cv_.notify_all();
}

void FakeClock::SetInside(Tick tick) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (tick < now_) return;
    now_ = tick;
    inside_ = true;
  }
  cv_.notify_all();
}

void FakeClock::Advance(Tick ms) {
  if (ms <= 0) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    now_ += ms;
    inside_ = false;
  }
  cv_.notify_all();
}

}  // namespace leasekeeper::server
