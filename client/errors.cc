#include "client/errors.h"

#include <grpcpp/client_context.h>
#include <grpcpp/support/status.h>

#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "leasekeeper/v1/lock_service.pb.h"

namespace leasekeeper::client {
namespace {

namespace pb = ::leasekeeper::v1;

constexpr absl::string_view kReasonKey = "leasekeeper-reason";
constexpr absl::string_view kDetailKey = "leasekeeper-error-bin";
constexpr absl::string_view kLeaderKey = "leasekeeper-leader";

std::optional<ErrorReason> FromProtoReason(pb::ErrorReason reason) {
  switch (reason) {
    case pb::INVALID_ARGUMENTS:
      return ErrorReason::kInvalidArguments;
    case pb::INVALID_TTL:
      return ErrorReason::kInvalidTtl;
    case pb::CLIENT_BUSY:
      return ErrorReason::kClientBusy;
    case pb::NOT_HOLDER:
      return ErrorReason::kNotHolder;
    case pb::STALE_TOKEN:
      return ErrorReason::kStaleToken;
    case pb::DEADLOCK_VICTIM:
      return ErrorReason::kDeadlockVictim;
    case pb::LIMIT_EXCEEDED:
      return ErrorReason::kLimitExceeded;
    case pb::SESSION_ENDED:
      return ErrorReason::kSessionEnded;
    case pb::WAIT_TIMEOUT:
      return ErrorReason::kWaitTimeout;
    case pb::SHUTTING_DOWN:
      return ErrorReason::kShuttingDown;
    case pb::REQUEST_ID_REUSED:
      return ErrorReason::kRequestIdReused;
    case pb::SUPERSEDED_BY_RETRY:
      return ErrorReason::kSupersededByRetry;
    case pb::TOKEN_NOT_ISSUED:
      return ErrorReason::kTokenNotIssued;
    case pb::NOT_LEADER:
      return ErrorReason::kNotLeader;
    case pb::CAPACITY_MISMATCH:
      return ErrorReason::kCapacityMismatch;
    case pb::MODE_MISMATCH:
      return ErrorReason::kModeMismatch;
    case pb::WATCH_FELL_BEHIND:
      return ErrorReason::kWatchFellBehind;
    case pb::NO_HOLDER:
      return ErrorReason::kNoHolder;
    default:
      return std::nullopt;
  }
}

pb::ErrorReason ToProtoReason(ErrorReason reason) {
  switch (reason) {
    case ErrorReason::kInvalidArguments:
      return pb::INVALID_ARGUMENTS;
    case ErrorReason::kInvalidTtl:
      return pb::INVALID_TTL;
    case ErrorReason::kClientBusy:
      return pb::CLIENT_BUSY;
    case ErrorReason::kNotHolder:
      return pb::NOT_HOLDER;
    case ErrorReason::kStaleToken:
      return pb::STALE_TOKEN;
    case ErrorReason::kDeadlockVictim:
      return pb::DEADLOCK_VICTIM;
    case ErrorReason::kLimitExceeded:
      return pb::LIMIT_EXCEEDED;
    case ErrorReason::kSessionEnded:
      return pb::SESSION_ENDED;
    case ErrorReason::kWaitTimeout:
      return pb::WAIT_TIMEOUT;
    case ErrorReason::kShuttingDown:
      return pb::SHUTTING_DOWN;
    case ErrorReason::kRequestIdReused:
      return pb::REQUEST_ID_REUSED;
    case ErrorReason::kSupersededByRetry:
      return pb::SUPERSEDED_BY_RETRY;
    case ErrorReason::kTokenNotIssued:
      return pb::TOKEN_NOT_ISSUED;
    case ErrorReason::kNotLeader:
      return pb::NOT_LEADER;
    case ErrorReason::kCapacityMismatch:
      return pb::CAPACITY_MISMATCH;
    case ErrorReason::kModeMismatch:
      return pb::MODE_MISMATCH;
    case ErrorReason::kWatchFellBehind:
      return pb::WATCH_FELL_BEHIND;
    case ErrorReason::kNoHolder:
      return pb::NO_HOLDER;
  }
  return pb::ERROR_REASON_UNSPECIFIED;
}

// The reason a server without metadata meant, from the code and the
// contract's error text; nullopt where the pair is not one of them.
std::optional<ErrorReason> InferReason(grpc::StatusCode code,
                                       absl::string_view message) {
  struct Known {
    grpc::StatusCode code;
    absl::string_view text;
    ErrorReason reason;
  };
  static constexpr Known kKnown[] = {
      {grpc::StatusCode::INVALID_ARGUMENT, "invalid arguments",
       ErrorReason::kInvalidArguments},
      {grpc::StatusCode::INVALID_ARGUMENT, "invalid ttl",
       ErrorReason::kInvalidTtl},
      {grpc::StatusCode::INVALID_ARGUMENT, "request id reused",
       ErrorReason::kRequestIdReused},
      {grpc::StatusCode::FAILED_PRECONDITION, "client busy",
       ErrorReason::kClientBusy},
      {grpc::StatusCode::FAILED_PRECONDITION, "not holder",
       ErrorReason::kNotHolder},
      {grpc::StatusCode::FAILED_PRECONDITION, "stale token",
       ErrorReason::kStaleToken},
      {grpc::StatusCode::FAILED_PRECONDITION, "session ended",
       ErrorReason::kSessionEnded},
      {grpc::StatusCode::ABORTED, "deadlock", ErrorReason::kDeadlockVictim},
      {grpc::StatusCode::RESOURCE_EXHAUSTED, "limit exceeded",
       ErrorReason::kLimitExceeded},
      {grpc::StatusCode::DEADLINE_EXCEEDED, "wait timed out",
       ErrorReason::kWaitTimeout},
      {grpc::StatusCode::UNAVAILABLE, "server shutting down",
       ErrorReason::kShuttingDown},
      {grpc::StatusCode::CANCELLED, "superseded by retry",
       ErrorReason::kSupersededByRetry},
      {grpc::StatusCode::FAILED_PRECONDITION, "token not issued",
       ErrorReason::kTokenNotIssued},
      {grpc::StatusCode::UNAVAILABLE, "not leader", ErrorReason::kNotLeader},
      {grpc::StatusCode::FAILED_PRECONDITION, "capacity mismatch",
       ErrorReason::kCapacityMismatch},
      {grpc::StatusCode::FAILED_PRECONDITION, "mode mismatch",
       ErrorReason::kModeMismatch},
      {grpc::StatusCode::RESOURCE_EXHAUSTED, "watch fell behind",
       ErrorReason::kWatchFellBehind},
  };
  for (const Known& known : kKnown) {
    if (known.code == code && absl::StartsWith(message, known.text)) {
      return known.reason;
    }
  }
  return std::nullopt;
}

std::optional<std::string> TrailingValue(const grpc::ClientContext& context,
                                         absl::string_view key) {
  const auto& trailers = context.GetServerTrailingMetadata();
  auto it = trailers.find(grpc::string_ref(key.data(), key.size()));
  if (it == trailers.end()) return std::nullopt;
  return std::string(it->second.data(), it->second.size());
}

std::optional<pb::ErrorDetail> DetailOf(const absl::Status& status) {
  auto payload = status.GetPayload(kErrorDetailPayloadUrl);
  if (!payload.has_value()) return std::nullopt;
  pb::ErrorDetail detail;
  if (!detail.ParseFromString(std::string(*payload))) return std::nullopt;
  return detail;
}

// A failure as the server sent it: `code`, `message`, the ErrorDetail (when
// one came) and the reason name (the unary path's leasekeeper-reason, when
// it came). The reason is the detail's, else the name's, else what the code
// and text imply; it travels as the kErrorDetailPayloadUrl payload.
// REQUIRES: code != OK.
absl::Status ServerError(grpc::StatusCode code, const std::string& message,
                         std::optional<pb::ErrorDetail> detail,
                         const std::optional<std::string>& reason_name) {
  absl::Status result(static_cast<absl::StatusCode>(code), message);
  if (!detail.has_value() || detail->reason() == pb::ERROR_REASON_UNSPECIFIED) {
    std::optional<ErrorReason> reason;
    pb::ErrorReason parsed;
    if (reason_name.has_value() &&
        pb::ErrorReason_Parse(*reason_name, &parsed)) {
      reason = FromProtoReason(parsed);
    }
    if (!reason.has_value()) reason = InferReason(code, message);
    if (!reason.has_value()) return result;
    detail.emplace();
    detail->set_reason(ToProtoReason(*reason));
  }
  result.SetPayload(kErrorDetailPayloadUrl,
                    absl::Cord(detail->SerializeAsString()));
  return result;
}

}  // namespace

// The proto's enum names are the names; ToProtoReason covers every reason.
absl::string_view ErrorReasonName(ErrorReason reason) {
  const pb::ErrorReason proto = ToProtoReason(reason);
  if (proto == pb::ERROR_REASON_UNSPECIFIED) return "UNKNOWN";
  return pb::ErrorReason_Name(proto);
}

absl::Status FromGrpcStatus(const grpc::ClientContext& context,
                            const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  std::optional<pb::ErrorDetail> detail;
  if (std::optional<std::string> bin = TrailingValue(context, kDetailKey)) {
    detail.emplace();
    if (!detail->ParseFromString(*bin)) detail.reset();
  }
  absl::Status result =
      ServerError(status.error_code(), status.error_message(), detail,
                  TrailingValue(context, kReasonKey));
  if (HasErrorReason(result, ErrorReason::kNotLeader)) {
    if (std::optional<std::string> leader = TrailingValue(context, kLeaderKey);
        leader.has_value() && !leader->empty()) {
      result.SetPayload(kLeaderPayloadUrl, absl::Cord(*leader));
    }
  }
  return result;
}

absl::Status FromSessionCallError(const pb::SessionCallError& error) {
  // The server never sends OK here; should one come, it is still a failure.
  const auto code = error.code() == grpc::StatusCode::OK
                        ? grpc::StatusCode::UNKNOWN
                        : static_cast<grpc::StatusCode>(error.code());
  return ServerError(code, error.message(), error.detail(), std::nullopt);
}

std::optional<ErrorReason> ErrorReasonOf(const absl::Status& status) {
  if (status.ok()) return std::nullopt;
  std::optional<pb::ErrorDetail> detail = DetailOf(status);
  if (!detail.has_value()) return std::nullopt;
  return FromProtoReason(detail->reason());
}

std::optional<std::string> LeaderAddressOf(const absl::Status& status) {
  if (!HasErrorReason(status, ErrorReason::kNotLeader)) return std::nullopt;
  auto leader = status.GetPayload(kLeaderPayloadUrl);
  if (!leader.has_value()) return std::nullopt;
  return std::string(*leader);
}

bool HasErrorReason(const absl::Status& status, ErrorReason reason) {
  std::optional<ErrorReason> actual = ErrorReasonOf(status);
  return actual.has_value() && *actual == reason;
}

std::vector<std::string> DeadlockVictimsOf(const absl::Status& status) {
  std::optional<pb::ErrorDetail> detail = DetailOf(status);
  if (!detail.has_value() || detail->reason() != pb::DEADLOCK_VICTIM) {
    return {};
  }
  return {detail->victims().begin(), detail->victims().end()};
}

bool IsTransient(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kUnknown:
    case absl::StatusCode::kInternal:
      return true;
    case absl::StatusCode::kDeadlineExceeded:
      // The server's own WAIT_TIMEOUT is an answer, not a failure.
      return !HasErrorReason(status, ErrorReason::kWaitTimeout);
    case absl::StatusCode::kResourceExhausted:
      // A server limit is an answer; gRPC's own exhaustion is not.
      return !HasErrorReason(status, ErrorReason::kLimitExceeded);
    default:
      return false;
  }
}

}  // namespace leasekeeper::client
