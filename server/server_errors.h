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

// Reasons are the API's own enum, leasekeeper.v1.ErrorReason (its comments
// give each reason's code and message), so a reason added there needs no
// second list here.

// Stable name of a reason, e.g. "CLIENT_BUSY" (the ErrorReason enum name).
absl::string_view ReasonName(v1::ErrorReason reason);

struct ErrorInfo {
  v1::ErrorReason reason = v1::ERROR_REASON_UNSPECIFIED;
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
// A cluster node that is not the leader refusing a lock call: UNAVAILABLE
// "not leader; leader is <leader_address>", or "not leader; leader unknown"
// when `leader_address` is empty; reason NOT_LEADER. ToGrpcStatus adds the
// leader's address as trailing metadata kLeaderMetadataKey (grpc_status.h).
absl::Status NotLeader(absl::string_view leader_address);
// A ClusterPeer call (cluster_peer.proto) whose caller did not prove
// membership: UNAUTHENTICATED "cluster peer call without the peer secret"
// when it presented none, PERMISSION_DENIED "cluster peer call with a
// wrong peer secret" otherwise; reason NOT_CLUSTER_MEMBER.
absl::Status NotClusterMember(bool presented_a_secret);
// A ForceRelease that found no lease to end: FAILED_PRECONDITION
// "<lock> has no holder", or "<lock> is not held by <client>" when `client`
// is not empty; reason NO_HOLDER.
absl::Status NoHolder(absl::string_view lock, absl::string_view client);
// The leader address a NotLeader status carries; empty for any other.
std::string LeaderAddressOf(const absl::Status& status);
// A Watch stream whose buffer filled: RESOURCE_EXHAUSTED "watch fell
// behind", reason WATCH_FELL_BEHIND, limit "watch-buffer-events" =
// `buffer_events`.
absl::Status WatchFellBehind(size_t buffer_events);

// The ErrorInfo of any status made here or by core/errors.h; reason
// ERROR_REASON_UNSPECIFIED for OK and for any other status.
ErrorInfo ErrorInfoOf(const absl::Status& status);

// The message a client is answered with: the status's own, followed by
// the core's detail (core/errors.h) when it has one, e.g. "capacity
// mismatch: locks/x is a semaphore of 4, asked 3".
std::string AnsweredMessage(const absl::Status& status);

// `info` as the API's ErrorDetail message.
v1::ErrorDetail ToErrorDetail(const ErrorInfo& info);

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_SERVER_ERRORS_H_
