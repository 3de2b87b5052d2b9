#include "client/leader_election.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "client/errors.h"
#include "client/internal/call_timing.h"

namespace leasekeeper::client {
namespace {

// Contending again may succeed after these; anything else is returned.
bool WorthContendingAgain(const absl::Status& status) {
  if (IsTransient(status)) return true;
  if (status.code() == absl::StatusCode::kAborted) return true;  // deadlock
  if (HasErrorReason(status, ErrorReason::kSessionEnded)) return true;
  if (HasErrorReason(status, ErrorReason::kLimitExceeded)) return true;
  if (HasErrorReason(status, ErrorReason::kWaitTimeout)) return true;
  return false;
}

absl::Status Cancelled(absl::string_view lock) {
  return absl::CancelledError(
      absl::StrCat("leader election for ", lock, " stopped"));
}

}  // namespace

absl::string_view TermEndName(TermEnd end) {
  switch (end) {
    case TermEnd::kLeaseLost:
      return "lease_lost";
    case TermEnd::kCancelled:
      return "cancelled";
    case TermEnd::kWorkReturned:
      return "work_returned";
    case TermEnd::kWorkFailed:
      return "work_failed";
  }
  return "lease_lost";
}

absl::Status RunAsLeader(Client& client, absl::string_view lock,
                         absl::Duration ttl, const LeaderWork& work,
                         std::stop_token stop, const LeaderOptions& options) {
  const absl::Duration retry_delay = options.retry_delay > absl::ZeroDuration()
                                         ? options.retry_delay
                                         : ttl / 3;
  AcquireOptions acquire_options;
  acquire_options.mode = LockMode::kExclusive;
  acquire_options.stop = stop;
  while (true) {
    if (stop.stop_requested()) return Cancelled(lock);
    absl::StatusOr<Lease> acquired =
        client.Acquire(lock, ttl, absl::InfiniteDuration(), acquire_options);
    if (!acquired.ok()) {
      if (stop.stop_requested()) return Cancelled(lock);
      if (!WorthContendingAgain(acquired.status())) return acquired.status();
      if (options.on_contention_error) {
        options.on_contention_error(acquired.status());
      }
      if (!internal::SleepUnlessStopped(retry_delay, stop)) return Cancelled(lock);
      continue;
    }
    Lease lease = *std::move(acquired);
    if (!lease.IsHeld()) continue;  // ended before its answer arrived

    absl::Status result;
    {
      // The term's stop: the caller's stop or the end of the lease.
      std::stop_source term;
      std::stop_callback on_caller_stop(stop, [&term] { term.request_stop(); });
      std::stop_callback on_lease_end(lease.Ended(),
                                      [&term] { term.request_stop(); });
      if (options.on_term_start) options.on_term_start(lease);
      result = work(lease, term.get_token());
    }

    TermEnd end;
    if (stop.stop_requested()) {
      end = TermEnd::kCancelled;
    } else if (!lease.IsHeld()) {
      end = TermEnd::kLeaseLost;
    } else {
      end = result.ok() ? TermEnd::kWorkReturned : TermEnd::kWorkFailed;
    }
    if (options.on_term_end) options.on_term_end(lease, end);
    switch (end) {
      case TermEnd::kLeaseLost:
        continue;  // the work has returned; contend again
      case TermEnd::kCancelled:
        (void)lease.Release();
        return Cancelled(lock);
      case TermEnd::kWorkReturned:
      case TermEnd::kWorkFailed:
        (void)lease.Release();
        return result;
    }
  }
}

}  // namespace leasekeeper::client
