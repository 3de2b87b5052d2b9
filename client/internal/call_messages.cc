#include "client/internal/call_messages.h"

#include <algorithm>
#include <cstdint>

#include "client/errors.h"
#include "proto/lock_mode.h"

namespace leasekeeper::client::internal {
namespace {

namespace pb = ::leasekeeper::v1;

int64_t ToWholeMilliseconds(absl::Duration duration) {
  return absl::ToInt64Milliseconds(duration);
}

// The fields that say who asks for which lock, in every request here.
template <typename Call, typename Request>
void SetCaller(const Call& call, Request& request) {
  request.set_client_id(call.client_id);
  request.set_lock(call.lock);
  request.set_request_id(call.request_id);
  request.set_session_id(call.session_id);
}

// OK if `result` answers a call of the kind `expected` with a response.
absl::Status CheckAnswers(const pb::SessionCallResult& result,
                          pb::SessionCallResult::ResultCase expected) {
  if (result.has_error()) return FromSessionCallError(result.error());
  if (result.result_case() != expected) {
    return absl::InternalError(
        "the server's answer on the session stream is for another call");
  }
  return absl::OkStatus();
}

}  // namespace

pb::AcquireRequest ToRequest(const AcquireCall& call) {
  pb::AcquireRequest request;
  SetCaller(call, request);
  request.set_ttl_ms(ToWholeMilliseconds(call.ttl));
  request.set_mode(LockModeToProto(call.mode));
  request.set_capacity(call.capacity);
  if (call.wait > absl::ZeroDuration()) {
    request.set_wait_timeout_ms(std::max<int64_t>(
        1, ToWholeMilliseconds(std::min(call.wait, kMaxServerWait))));
  }
  request.set_holder_label(call.holder_label);
  return request;
}

pb::RenewRequest ToRequest(const RenewCall& call) {
  pb::RenewRequest request;
  SetCaller(call, request);
  request.set_ttl_ms(ToWholeMilliseconds(call.ttl));
  return request;
}

pb::ReleaseRequest ToRequest(const ReleaseCall& call) {
  pb::ReleaseRequest request;
  SetCaller(call, request);
  return request;
}

absl::StatusOr<AcquireResult> FromResponse(
    const pb::AcquireResponse& response) {
  AcquireResult result;
  result.aborted_clients.assign(response.aborted_clients().begin(),
                                response.aborted_clients().end());
  switch (response.outcome_case()) {
    case pb::AcquireResponse::kGranted:
      result.outcome = AcquireOutcome::kGranted;
      result.token = response.granted().token();
      result.ttl = absl::Milliseconds(response.granted().ttl_ms());
      result.waited = absl::Milliseconds(response.granted().waited_ms());
      return result;
    case pb::AcquireResponse::kQueued:
      result.outcome = AcquireOutcome::kQueued;
      result.position = response.queued().position();
      return result;
    case pb::AcquireResponse::kWithdrawn:
      result.outcome = AcquireOutcome::kWithdrawn;
      switch (response.withdrawn().reason()) {
        case pb::WITHDRAW_REASON_RELEASED_BY_CLIENT:
          result.withdraw_reason = WithdrawReason::kReleasedByClient;
          break;
        case pb::WITHDRAW_REASON_SESSION_ENDED:
          result.withdraw_reason = WithdrawReason::kSessionEnded;
          break;
        default:
          result.withdraw_reason = WithdrawReason::kUnspecified;
          break;
      }
      return result;
    case pb::AcquireResponse::OUTCOME_NOT_SET:
      break;
  }
  return absl::InternalError("the server's Acquire answer has no outcome");
}

RenewResult FromResponse(const pb::RenewResponse& response) {
  return RenewResult{response.token(), absl::Milliseconds(response.ttl_ms())};
}

absl::StatusOr<ReleaseOutcome> FromResponse(
    const pb::ReleaseResponse& response) {
  switch (response.result()) {
    case pb::RELEASE_RESULT_RELEASED:
      return ReleaseOutcome::kReleased;
    case pb::RELEASE_RESULT_WITHDRAWN:
      return ReleaseOutcome::kWithdrawn;
    default:
      break;
  }
  return absl::InternalError("the server's Release answer has no result");
}

pb::SessionCall ToSessionCall(const AcquireCall& call) {
  pb::SessionCall message;
  *message.mutable_acquire() = ToRequest(call);
  return message;
}

pb::SessionCall ToSessionCall(const RenewCall& call) {
  pb::SessionCall message;
  *message.mutable_renew() = ToRequest(call);
  return message;
}

pb::SessionCall ToSessionCall(const ReleaseCall& call) {
  pb::SessionCall message;
  *message.mutable_release() = ToRequest(call);
  return message;
}

absl::StatusOr<AcquireResult> AcquireResultOf(
    const pb::SessionCallResult& result) {
  absl::Status answered = CheckAnswers(result, pb::SessionCallResult::kAcquire);
  if (!answered.ok()) return answered;
  return FromResponse(result.acquire());
}

absl::StatusOr<RenewResult> RenewResultOf(const pb::SessionCallResult& result) {
  absl::Status answered = CheckAnswers(result, pb::SessionCallResult::kRenew);
  if (!answered.ok()) return answered;
  return FromResponse(result.renew());
}

absl::StatusOr<ReleaseOutcome> ReleaseOutcomeOf(
    const pb::SessionCallResult& result) {
  absl::Status answered = CheckAnswers(result, pb::SessionCallResult::kRelease);
  if (!answered.ok()) return answered;
  return FromResponse(result.release());
}

}  // namespace leasekeeper::client::internal
