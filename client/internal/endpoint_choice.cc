#include "client/internal/endpoint_choice.h"

#include <utility>

#include "client/errors.h"

namespace leasekeeper::client::internal {

EndpointVerdict VerdictOf(const absl::Status& status) {
  if (HasErrorReason(status, ErrorReason::kNotLeader)) {
    return LeaderAddressOf(status).has_value() ? EndpointVerdict::kRedirected
                                               : EndpointVerdict::kFailed;
  }
  switch (status.code()) {
    case absl::StatusCode::kUnavailable:
      // Unreachable, shutting down, or a stream the node ended.
      return EndpointVerdict::kFailed;
    case absl::StatusCode::kDeadlineExceeded:
      // WAIT_TIMEOUT is the server's answer; a bare deadline means no
      // answer came (a hung or partitioned node).
      return HasErrorReason(status, ErrorReason::kWaitTimeout)
                 ? EndpointVerdict::kServed
                 : EndpointVerdict::kFailed;
    case absl::StatusCode::kCancelled:
      // The caller's own cancellation; SUPERSEDED_BY_RETRY is an answer.
      return HasErrorReason(status, ErrorReason::kSupersededByRetry)
                 ? EndpointVerdict::kServed
                 : EndpointVerdict::kNoVerdict;
    default:
      return EndpointVerdict::kServed;
  }
}

EndpointChoice::EndpointChoice(std::vector<std::string> endpoints,
                               MonotonicTime now)
    : endpoints_(std::move(endpoints)),
      current_(endpoints_.front()),
      not_before_(now) {}

bool EndpointChoice::Report(uint64_t generation, const absl::Status& status,
                            MonotonicTime now) {
  if (generation != generation_) return false;  // rule 6
  switch (VerdictOf(status)) {
    case EndpointVerdict::kServed:
      failed_moves_ = 0;
      backoff_.Reset();
      return false;
    case EndpointVerdict::kNoVerdict:
      return false;
    case EndpointVerdict::kRedirected: {
      std::string leader = *LeaderAddressOf(status);
      if (leader != current_) {
        MoveTo(std::move(leader), now);
        return true;
      }
      break;  // it names itself: a failure of this endpoint
    }
    case EndpointVerdict::kFailed:
      break;
  }
  if (endpoints_.size() == 1 && current_ == endpoints_.front()) {
    // Nowhere else to go: the caller retries here on its own schedule.
    return false;
  }
  // From a redirect target outside the list too, "next" is the one after
  // the list's last choice (a one-endpoint list goes back to its endpoint).
  list_index_ = (list_index_ + 1) % endpoints_.size();
  MoveTo(endpoints_[list_index_], now);
  return true;
}

void EndpointChoice::MoveTo(std::string target, MonotonicTime now) {
  current_ = std::move(target);
  ++generation_;
  ++failed_moves_;
  // Rule 4: a whole round (and one redirect) at once, then backoff.
  not_before_ =
      failed_moves_ <= endpoints_.size() + 1 ? now : now + backoff_.Next();
}

}  // namespace leasekeeper::client::internal
