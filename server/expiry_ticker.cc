#include "server/expiry_ticker.h"

namespace leasekeeper::server {

ExpiryTicker::ExpiryTicker(CoreOwner& owner, Clock& clock)
    : owner_(owner), clock_(clock) {}

ExpiryTicker::~ExpiryTicker() { Stop(); }

void ExpiryTicker::Start() {
  thread_ = std::thread([this] { Run(); });
}

void ExpiryTicker::Stop() {
  stop_.store(true);
  clock_.Interrupt();
  if (thread_.joinable()) thread_.join();
}

void ExpiryTicker::Run() {
  while (!stop_.load()) {
    const Tick next = owner_.RunDueTimers();
    if (stop_.load()) break;
    clock_.SleepUntil(next);
  }
}

}  // namespace leasekeeper::server
