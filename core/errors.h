// The contract's expected failures, as absl::Status values.
//
// Every failure the contract's operations report is one of the first five.
// The status message is exactly the contract's error text ("invalid ttl"), so
// the replay prints "error: " + message and the server forwards it verbatim.
// The codes after them come only from checks the daemon asks for and the
// replay never does (op::Write's and op::FencedRead's daemon-only fields,
// op::Delete, semaphores). The absl code says
// which family it belongs to (INVALID_ARGUMENT for malformed input,
// FAILED_PRECONDITION for a well-formed request the state refuses).
//
// Thread-safety: pure functions.
#ifndef LEASEKEEPER_CORE_ERRORS_H_
#define LEASEKEEPER_CORE_ERRORS_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace leasekeeper {

enum class ErrorCode {
  kInvalidArguments,  // a field has the wrong type, or is empty, or token < 1
  kInvalidTtl,        // ttl outside [1, CoreConfig::max_ttl]
  kClientBusy,        // acquire by a client that waits, or holds that lock
  kNotHolder,         // renew/release by a client that does not hold the lock
  kStaleToken,        // write with a token below the lock's high-water mark
  kTokenNotIssued,    // a token above the lock's fencing counter (daemon)
  // A semaphore request naming another capacity than the one the lock's
  // holders and waiters use (daemon).
  kCapacityMismatch,
  // A semaphore request on a lock held or awaited in exclusive or shared
  // mode, or the reverse (daemon).
  kModeMismatch,
};

// "invalid arguments", "invalid ttl", "client busy", "not holder",
// "stale token", "token not issued", "capacity mismatch", "mode mismatch".
absl::string_view ErrorText(ErrorCode code);

// A non-OK status carrying `code`: message ErrorText(code), absl code
// kInvalidArgument or kFailedPrecondition.
absl::Status MakeError(ErrorCode code);

// MakeError(code) with `detail`, what about the state refused the request
// (e.g. "locks/x is a semaphore of 4, asked 3"), as a payload. The message
// stays ErrorText(code): the replay prints the contract's text and
// ErrorCodeOf finds the code; the daemon appends the detail to the message
// it answers with.
absl::Status MakeError(ErrorCode code, absl::string_view detail);

// The ErrorCode a status made by MakeError carries; nullopt for OK or any
// other status.
std::optional<ErrorCode> ErrorCodeOf(const absl::Status& status);

// The detail MakeError(code, detail) attached; empty for any other status.
std::string ErrorDetailOf(const absl::Status& status);

}  // namespace leasekeeper

#endif  // LEASEKEEPER_CORE_ERRORS_H_
