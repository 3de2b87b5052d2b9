#include "client/internal/call_timing.h"

#include <algorithm>
#include <chrono>

#include "absl/synchronization/notification.h"

namespace leasekeeper::client::internal {

void SetDeadlineAfter(absl::Duration budget, grpc::ClientContext& context) {
  if (budget == absl::InfiniteDuration()) return;
  context.set_deadline(
      std::chrono::system_clock::now() +
      absl::ToChronoNanoseconds(std::max(budget, absl::ZeroDuration())));
}

bool SleepUnlessStopped(absl::Duration duration, std::stop_token stop) {
  absl::Notification stopped;
  std::stop_callback on_stop(stop, [&stopped] { stopped.Notify(); });
  return !stopped.WaitForNotificationWithTimeout(duration);
}

}  // namespace leasekeeper::client::internal
