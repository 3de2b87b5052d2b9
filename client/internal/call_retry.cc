#include "client/internal/call_retry.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/errors.h"
#include "client/internal/endpoint_choice.h"

namespace leasekeeper::client::internal {
namespace {

// `status` with `suffix` after its message; same code, same payloads (so
// ErrorReasonOf and LeaderAddressOf still answer).
absl::Status WithSuffix(const absl::Status& status, absl::string_view suffix) {
  absl::Status extended(status.code(), absl::StrCat(status.message(), suffix));
  status.ForEachPayload([&](absl::string_view url, const absl::Cord& payload) {
    extended.SetPayload(url, payload);
  });
  return extended;
}

}  // namespace

bool NeverSent(const absl::Status& status) {
  if (status.code() != absl::StatusCode::kUnavailable ||
      ErrorReasonOf(status).has_value()) {
    return false;
  }
  // gRPC's words for a call that found no connection to go on (pick_first
  // and round_robin alike, across releases).
  const std::string message = absl::AsciiStrToLower(status.message());
  for (absl::string_view words :
       {"failed to connect", "connection refused",
        "connections to all backends failing", "dns resolution failed"}) {
    if (absl::StrContains(message, words)) return true;
  }
  return false;
}

bool HandshakeFailed(const absl::Status& status) {
  if (status.code() != absl::StatusCode::kUnavailable ||
      ErrorReasonOf(status).has_value()) {
    return false;
  }
  const std::string message = absl::AsciiStrToLower(status.message());
  return absl::StrContains(message, "handshake") ||
         absl::StrContains(message, "ssl_error") ||
         absl::StrContains(message, "certificate verify failed");
}

CallRetry::CallRetry(MonotonicTime deadline, bool repeatable)
    : deadline_(deadline), repeatable_(repeatable), at_(deadline) {}

CallRetry::Step CallRetry::After(const absl::Status& status,
                                 absl::string_view target, bool moved,
                                 MonotonicTime not_before, MonotonicTime now) {
  ++attempts_;
  status_ = status;
  switch (VerdictOf(status)) {
    case EndpointVerdict::kServed:
      return Step::kDone;  // rule 1
    case EndpointVerdict::kNoVerdict:
      return Step::kGiveUp;  // the caller's cancellation
    case EndpointVerdict::kRedirected:
    case EndpointVerdict::kFailed:
      break;
  }
  if (HandshakeFailed(status)) return Step::kGiveUp;  // rule 1
  const bool unapplied =
      HasErrorReason(status, ErrorReason::kNotLeader) || NeverSent(status);
  if (!unapplied && !repeatable_) return Step::kGiveUp;  // rule 3
  // Rule 4.
  at_ = moved ? std::max(now, not_before) : now + backoff_.Next();
  if (at_ < deadline_) return Step::kAgain;
  // Rule 5.
  if (attempts_ > 1) {
    status_ = WithSuffix(status, absl::StrCat(" (from ", target, ", the last of ",
                                              attempts_, " attempts before the "
                                              "call's deadline)"));
  }
  return Step::kGiveUp;
}

}  // namespace leasekeeper::client::internal
