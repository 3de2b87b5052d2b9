#include "client/lease.h"

#include <utility>

#include "absl/synchronization/notification.h"
#include "client/internal/client_core.h"

namespace leasekeeper::client {

Lease::Lease(std::shared_ptr<internal::ClientCore> core,
             std::shared_ptr<internal::LeaseState> state)
    : core_(std::move(core)), state_(std::move(state)) {}

Lease::Lease(Lease&& other) noexcept = default;

Lease& Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    if (state_ != nullptr) (void)core_->Release(*state_);
    core_ = std::move(other.core_);
    state_ = std::move(other.state_);
  }
  return *this;
}

Lease::~Lease() {
  if (state_ != nullptr) (void)core_->Release(*state_);
}

const std::string& Lease::lock() const { return state_->lock; }
FencingToken Lease::token() const { return state_->token; }
LockMode Lease::mode() const { return state_->mode; }
absl::Duration Lease::ttl() const { return state_->ttl; }

bool Lease::IsHeld() const { return !EndReason().has_value(); }

std::optional<LeaseEndReason> Lease::EndReason() const {
  return core_->EndReason(*state_);
}

std::stop_token Lease::Ended() const { return state_->ended.get_token(); }

std::optional<LeaseEndReason> Lease::WaitForEnd(absl::Duration timeout) const {
  std::stop_token ended = state_->ended.get_token();
  if (!ended.stop_requested()) {
    absl::Notification notified;
    std::stop_callback on_end(ended, [&notified] { notified.Notify(); });
    if (timeout == absl::InfiniteDuration()) {
      notified.WaitForNotification();
    } else if (!notified.WaitForNotificationWithTimeout(timeout)) {
      return std::nullopt;
    }
  }
  return EndReason();
}

absl::Duration Lease::TimeLeft() const { return core_->TimeLeft(*state_); }

absl::Status Lease::Renew() { return core_->Renew(*state_); }

absl::Status Lease::Release() { return core_->Release(*state_); }

}  // namespace leasekeeper::client
