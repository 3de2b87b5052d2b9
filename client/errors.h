// The client's side of the server's error mapping: FromGrpcStatus (and
// FromSessionCallError for a call on the session stream) turn a failure
// into an absl::Status that keeps the server's ErrorReason, which
// ErrorReasonOf reads back without parsing messages. How the reason
// travels: docs/design/clients.md ("Errors").
//
// Thread-safety: pure functions.
#ifndef LEASEKEEPER_CLIENT_ERRORS_H_
#define LEASEKEEPER_CLIENT_ERRORS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace grpc {
class ClientContext;
class Status;
}  // namespace grpc

namespace leasekeeper::v1 {
class SessionCallError;
}  // namespace leasekeeper::v1

namespace leasekeeper::client {

// The server's machine-readable reasons (leasekeeper.v1.ErrorReason).
enum class ErrorReason {
  kInvalidArguments,   // INVALID_ARGUMENT: a field is empty or malformed
  kInvalidTtl,         // INVALID_ARGUMENT: ttl outside 1 ms .. 24 h
  kClientBusy,         // FAILED_PRECONDITION: the client waits, or holds it
  kNotHolder,          // FAILED_PRECONDITION: neither holds nor waits
  kStaleToken,         // FAILED_PRECONDITION: a higher token was accepted
  kDeadlockVictim,     // ABORTED: aborted to break a wait-for cycle
  kLimitExceeded,      // RESOURCE_EXHAUSTED: a server limit
  kSessionEnded,       // FAILED_PRECONDITION: the named session has ended
  kWaitTimeout,        // DEADLINE_EXCEEDED: the wait ran out, withdrawn
  kShuttingDown,       // UNAVAILABLE: the server stops
  kRequestIdReused,    // INVALID_ARGUMENT: same request id, other arguments
  kSupersededByRetry,  // CANCELLED: a retry with the same id took over
  kTokenNotIssued,     // FAILED_PRECONDITION: no such token for the lock
  kNotLeader,          // UNAVAILABLE: a cluster node that is not the leader
  kCapacityMismatch,   // FAILED_PRECONDITION: the semaphore has another N
  kModeMismatch,       // FAILED_PRECONDITION: semaphore vs exclusive/shared
  kWatchFellBehind,    // RESOURCE_EXHAUSTED: a Watch stream was cut
  kNoHolder,           // FAILED_PRECONDITION: ForceRelease found no lease
};

// The proto's name of the reason, e.g. "CLIENT_BUSY".
absl::string_view ErrorReasonName(ErrorReason reason);

// The payload type URL under which the serialized ErrorDetail is kept.
inline constexpr absl::string_view kErrorDetailPayloadUrl =
    "type.googleapis.com/leasekeeper.v1.ErrorDetail";

// The payload type URL under which a NOT_LEADER refusal keeps the leader's
// address (the trailing metadata `leasekeeper-leader`).
inline constexpr absl::string_view kLeaderPayloadUrl =
    "type.googleapis.com/leasekeeper.v1.LeaderAddress";

// The absl::Status for a finished call, the inverse of the server's
// ToGrpcStatus. `context` is the call's context, read for the trailing
// metadata (`leasekeeper-reason`, `leasekeeper-error-bin`). OK maps to OK;
// otherwise the absl code is the gRPC code and the message the server's
// text, with the ErrorDetail as a payload under kErrorDetailPayloadUrl, so
// ErrorReasonOf / DeadlockVictimsOf read it anywhere the status is passed
// on. A status without metadata (an older server, a proxy, a transport
// failure) gets its reason from the code and the contract's text where that
// is unambiguous, and no reason otherwise.
absl::Status FromGrpcStatus(const grpc::ClientContext& context,
                            const grpc::Status& status);

// The absl::Status for a call on the session stream that the server answered
// with `error`: the very status (code, message, reason payload)
// FromGrpcStatus gives for that failure on the unary call, so callers cannot
// tell which way a call travelled.
absl::Status FromSessionCallError(
    const leasekeeper::v1::SessionCallError& error);

// The server's reason carried by `status`; nullopt for OK, for statuses that
// did not come from the server's error mapping (transport failures), and for
// statuses made by the client itself.
std::optional<ErrorReason> ErrorReasonOf(const absl::Status& status);

// NOT_LEADER: the leader's advertised host:port as the refusing node named
// it (trailing metadata `leasekeeper-leader`). nullopt when the node knew no
// leader, and for every other status.
std::optional<std::string> LeaderAddressOf(const absl::Status& status);

// True if ErrorReasonOf(status) == reason.
bool HasErrorReason(const absl::Status& status, ErrorReason reason);

// DEADLOCK_VICTIM: every client aborted by the request that closed the
// cycle, in abort order. Empty for any other status.
std::vector<std::string> DeadlockVictimsOf(const absl::Status& status);

// True for failures worth retrying with the same request id: the server was
// unreachable, the call ran out of its transport deadline, the server is
// shutting down or busy. The state refusing a request (FAILED_PRECONDITION),
// bad arguments, aborts and cancellations are not transient.
bool IsTransient(const absl::Status& status);

}  // namespace leasekeeper::client

#endif  // LEASEKEEPER_CLIENT_ERRORS_H_
