#include "client/internal/call_retry.h"

#include <algorithm>
#include <initializer_list>
#include <optional>
#include <string>
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

// The message of a transport failure gRPC reported itself (UNAVAILABLE
// without a server's reason), lower-cased; nullopt for anything else.
std::optional<std::string> TransportFailureText(const absl::Status& status) {
  if (status.code() != absl::StatusCode::kUnavailable ||
      ErrorReasonOf(status).has_value()) {
    return std::nullopt;
  }
  return absl::AsciiStrToLower(status.message());
}

bool ContainsAny(absl::string_view text,
                 std::initializer_list<absl::string_view> words) {
  return std::any_of(words.begin(), words.end(), [&](absl::string_view w) {
    return absl::StrContains(text, w);
  });
}

}  // namespace

bool NeverSent(const absl::Status& status) {
  // gRPC's words for a call that found no connection to go on (pick_first
  // and round_robin alike, across releases).
  const std::optional<std::string> text = TransportFailureText(status);
  return text.has_value() &&
         ContainsAny(*text, {"failed to connect", "connection refused",
                             "connections to all backends failing",
                             "dns resolution failed"});
}

bool HandshakeFailed(const absl::Status& status) {
  const std::optional<std::string> text = TransportFailureText(status);
  return text.has_value() &&
         ContainsAny(*text,
                     {"handshake", "ssl_error", "certificate verify failed"});
}

CallRetry::CallRetry(MonotonicTime deadline, bool repeatable)
    : deadline_(deadline), repeatable_(repeatable), at_(deadline) {}

bool CallRetry::After(const absl::Status& status,
                                 absl::string_view target, bool moved,
                                 MonotonicTime not_before, MonotonicTime now) {
  ++attempts_;
  status_ = status;
  switch (VerdictOf(status)) {
    case EndpointVerdict::kServed:
      return false;  // rule 1
    case EndpointVerdict::kNoVerdict:
      return false;  // the caller's cancellation
    case EndpointVerdict::kRedirected:
    case EndpointVerdict::kFailed:
      break;
  }
  if (HandshakeFailed(status)) return false;  // rule 1
  const bool unapplied =
      HasErrorReason(status, ErrorReason::kNotLeader) || NeverSent(status);
  if (!unapplied && !repeatable_) return false;  // rule 3
  // Rule 4.
  at_ = moved ? std::max(now, not_before) : now + backoff_.Next();
  if (at_ < deadline_) return true;
  // Rule 5.
  if (attempts_ > 1) {
    status_ = WithSuffix(status, absl::StrCat(" (from ", target, ", the last of ",
                                              attempts_, " attempts before the "
                                              "call's deadline)"));
  }
  return false;
}

}  // namespace leasekeeper::client::internal
