// The request and response messages of Acquire, Renew and Release, made from
// and read into RpcClient's structs. Internal to the client library.
//
// A call travels either as a unary call of its own (RpcClient) or as a
// SessionCall on the session stream (ClientCore, Session). Both build their
// request and read their answer here, so the server sees the same request
// and the caller gets the same result whichever way the call went.
//
// Thread-safety: pure functions.
#ifndef LEASEKEEPER_CLIENT_INTERNAL_CALL_MESSAGES_H_
#define LEASEKEEPER_CLIENT_INTERNAL_CALL_MESSAGES_H_

#include "absl/status/statusor.h"
#include "client/rpc_client.h"
#include "leasekeeper/v1/lock_service.pb.h"

namespace leasekeeper::client::internal {

leasekeeper::v1::AcquireRequest ToRequest(const AcquireCall& call);
leasekeeper::v1::RenewRequest ToRequest(const RenewCall& call);
leasekeeper::v1::ReleaseRequest ToRequest(const ReleaseCall& call);

// Outcomes: the answer; INTERNAL when the server's answer has no outcome.
absl::StatusOr<AcquireResult> FromResponse(
    const leasekeeper::v1::AcquireResponse& response);
RenewResult FromResponse(const leasekeeper::v1::RenewResponse& response);
absl::StatusOr<ReleaseOutcome> FromResponse(
    const leasekeeper::v1::ReleaseResponse& response);

// The SessionCall carrying the call (call_id unset: Session sets it).
leasekeeper::v1::SessionCall ToSessionCall(const AcquireCall& call);
leasekeeper::v1::SessionCall ToSessionCall(const RenewCall& call);
leasekeeper::v1::SessionCall ToSessionCall(const ReleaseCall& call);

// The stream's answer to an Acquire, Renew or Release call, as the unary
// call returns it: FromResponse of the response, or the server's error as
// FromSessionCallError makes it. INTERNAL if it answers another kind of call.
absl::StatusOr<AcquireResult> AcquireResultOf(
    const leasekeeper::v1::SessionCallResult& result);
absl::StatusOr<RenewResult> RenewResultOf(
    const leasekeeper::v1::SessionCallResult& result);
absl::StatusOr<ReleaseOutcome> ReleaseOutcomeOf(
    const leasekeeper::v1::SessionCallResult& result);

}  // namespace leasekeeper::client::internal

#endif  // LEASEKEEPER_CLIENT_INTERNAL_CALL_MESSAGES_H_
