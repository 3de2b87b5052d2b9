// The server's expected failures, as absl::Status values with a reason.
//
// The core's five errors (core/errors.h) pass through unchanged: message the
// contract's text, code INVALID_ARGUMENT or FAILED_PRECONDITION. The server
// adds its own failures (limits, sessions, waiting, shutdown) and, for
// validation failures, the offending field. Both kinds carry an ErrorInfo;
// the server's attaches it as a status payload, the core's is derived from
// ErrorCodeOf. ToGrpcStatus (grpc_status.h) turns any of them into the gRPC
// status and trailing metadata a client sees.
//
// Thread-safety: pure functions.
#ifndef LEASEKEEPER_SERVER_SERVER_ERRORS_H_
#define LEASEKEEPER_SERVER_SERVER_ERRORS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/errors.h"
#include "leasekeeper/v1/lock_service.pb.h"

namespace leasekeeper::server {

// Mirrors leasekeeper.v1.ErrorReason value for value.
enum class Reason {
  kUnspecified = 0,
  kInvalidArguments = 1,    // INVALID_ARGUMENT "invalid arguments"
  kInvalidTtl = 2,          // INVALID_ARGUMENT "invalid ttl"
  kClientBusy = 3,          // FAILED_PRECONDITION "client busy"
  kNotHolder = 4,           // FAILED_PRECONDITION "not holder"
  kStaleToken = 5,          // FAILED_PRECONDITION "stale token"
  kDeadlockVictim = 6,      // ABORTED "deadlock"
  kLimitExceeded = 7,       // RESOURCE_EXHAUSTED "limit exceeded: <limit>"
  kSessionEnded = 8,        // FAILED_PRECONDITION "session ended"
  kWaitTimeout = 9,         // DEADLINE_EXCEEDED "wait timed out"
  kShuttingDown = 10,       // UNAVAILABLE "server shutting down"
  kRequestIdReused = 11,    // INVALID_ARGUMENT "request id reused"
  kSupersededByRetry = 12,  // CANCELLED "superseded by retry"
  kTokenNotIssued = 13,     // FAILED_PRECONDITION "token not issued"
  kWatchFellBehind = 16,    // RESOURCE_EXHAUSTED "watch fell behind"
};

// Stable name of a reason, e.g. "CLIENT_BUSY" (the ErrorReason enum name).
absl::string_view ReasonName(Reason reason);

struct ErrorInfo {
  Reason reason = Reason::kUnspecified;
  std::string field{};                 // validation failures
  std::string limit{};                 // kLimitExceeded: the flag name
  int64_t limit_value = 0;             // kLimitExceeded
  std::vector<std::string> victims{};  // kDeadlockVictim, in abort order
};

// A core validation error (kInvalidArguments or kInvalidTtl) naming the
// request field at fault.
absl::Status InvalidField(ErrorCode code, absl::string_view field);
// REQUIRES: `limit` is the flag name of a Limits member.
absl::Status LimitExceeded(absl::string_view limit, int64_t limit_value);
absl::Status DeadlockVictim(std::vector<std::string> victims);
absl::Status SessionEnded();
absl::Status WaitTimedOut();
absl::Status ShuttingDown();
absl::Status RequestIdReused(absl::string_view field);
absl::Status SupersededByRetry();
// A waiting call the client cancelled (the status is never delivered).
absl::Status WaitCancelled();
// Bytes that do not parse as the message they should be: INVALID_ARGUMENT
// "invalid arguments: <what> cannot be parsed", reason kInvalidArguments,
// field "request". The client sent them; the server changes nothing.
absl::Status UndecodableMessage(absl::string_view what);
// A Session stream that sent no `open` within --session-open-timeout:
// DEADLINE_EXCEEDED "no open within --session-open-timeout=<timeout>".
absl::Status SessionOpenTimedOut(int64_t timeout_ms);
// A Watch stream whose buffer filled: RESOURCE_EXHAUSTED "watch fell
// behind", reason kWatchFellBehind, limit "watch-buffer-events" =
// `buffer_events`.
absl::Status WatchFellBehind(size_t buffer_events);

// The ErrorInfo of any status made here or by core/errors.h; reason
// kUnspecified for OK and for any other status.
ErrorInfo ErrorInfoOf(const absl::Status& status);

// `info` as the API's ErrorDetail message.
v1::ErrorDetail ToErrorDetail(const ErrorInfo& info);

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_SERVER_ERRORS_H_
