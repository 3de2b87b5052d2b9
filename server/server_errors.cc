#include "server/server_errors.h"

#include <optional>
#include <string>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "leasekeeper/v1/lock_service.pb.h"

namespace leasekeeper::server {
namespace {

namespace pb = ::leasekeeper::v1;

constexpr char kPayloadUrl[] = "type.googleapis.com/leasekeeper.v1.ErrorDetail";
// NotLeader's leader address (plain text).
constexpr char kLeaderPayloadUrl[] = "leasekeeper.v1/leader-address";

absl::Status WithInfo(absl::Status status, const ErrorInfo& info) {
  status.SetPayload(kPayloadUrl,
                    absl::Cord(ToErrorDetail(info).SerializeAsString()));
  return status;
}

pb::ErrorReason ReasonOfCoreError(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArguments:
      return pb::INVALID_ARGUMENTS;
    case ErrorCode::kInvalidTtl:
      return pb::INVALID_TTL;
    case ErrorCode::kClientBusy:
      return pb::CLIENT_BUSY;
    case ErrorCode::kNotHolder:
      return pb::NOT_HOLDER;
    case ErrorCode::kStaleToken:
      return pb::STALE_TOKEN;
    case ErrorCode::kTokenNotIssued:
      return pb::TOKEN_NOT_ISSUED;
    case ErrorCode::kCapacityMismatch:
      return pb::CAPACITY_MISMATCH;
    case ErrorCode::kModeMismatch:
      return pb::MODE_MISMATCH;
  }
  return pb::ERROR_REASON_UNSPECIFIED;
}

}  // namespace

absl::string_view ReasonName(pb::ErrorReason reason) {
  const std::string& name = pb::ErrorReason_Name(reason);
  return name;
}

absl::Status InvalidField(ErrorCode code, absl::string_view field) {
  ErrorInfo info;
  info.reason = ReasonOfCoreError(code);
  info.field = std::string(field);
  return WithInfo(MakeError(code), info);
}

absl::Status LimitExceeded(absl::string_view limit, int64_t limit_value) {
  ErrorInfo info;
  info.reason = pb::LIMIT_EXCEEDED;
  info.limit = std::string(limit);
  info.limit_value = limit_value;
  return WithInfo(absl::ResourceExhaustedError(absl::StrCat(
                      "limit exceeded: ", limit, "=", limit_value)),
                  info);
}

absl::Status DeadlockVictim(std::vector<std::string> victims) {
  ErrorInfo info;
  info.reason = pb::DEADLOCK_VICTIM;
  info.victims = std::move(victims);
  return WithInfo(absl::AbortedError("deadlock"), info);
}

absl::Status SessionEnded() {
  return WithInfo(absl::FailedPreconditionError("session ended"),
                  ErrorInfo{.reason = pb::SESSION_ENDED});
}

absl::Status WaitTimedOut() {
  return WithInfo(absl::DeadlineExceededError("wait timed out"),
                  ErrorInfo{.reason = pb::WAIT_TIMEOUT});
}

absl::Status ShuttingDown() {
  return WithInfo(absl::UnavailableError("server shutting down"),
                  ErrorInfo{.reason = pb::SHUTTING_DOWN});
}

absl::Status RequestIdReused(absl::string_view field) {
  return WithInfo(
      absl::InvalidArgumentError("request id reused"),
      ErrorInfo{.reason = pb::REQUEST_ID_REUSED, .field = std::string(field)});
}

absl::Status SupersededByRetry() {
  return WithInfo(absl::CancelledError("superseded by retry"),
                  ErrorInfo{.reason = pb::SUPERSEDED_BY_RETRY});
}

absl::Status WaitCancelled() { return absl::CancelledError("cancelled"); }

ErrorInfo ErrorInfoOf(const absl::Status& status) {
  ErrorInfo info;
  if (status.ok()) return info;
  auto payload = status.GetPayload(kPayloadUrl);
  pb::ErrorDetail detail;
  if (payload.has_value() && detail.ParseFromString(std::string(*payload))) {
    info.reason = detail.reason();
    info.field = detail.field();
    info.limit = detail.limit();
    info.limit_value = detail.limit_value();
    info.victims.assign(detail.victims().begin(), detail.victims().end());
    return info;
  }
  if (std::optional<ErrorCode> code = ErrorCodeOf(status)) {
    info.reason = ReasonOfCoreError(*code);
  }
  return info;
}

absl::Status UndecodableMessage(absl::string_view what) {
  ErrorInfo info;
  info.reason = pb::INVALID_ARGUMENTS;
  info.field = "request";
  return WithInfo(absl::InvalidArgumentError(absl::StrCat(
                      "invalid arguments: ", what, " cannot be parsed")),
                  info);
}

absl::Status NotClusterMember(bool presented_a_secret) {
  return WithInfo(
      presented_a_secret
          ? absl::PermissionDeniedError(
                "cluster peer call with a wrong peer secret")
          : absl::UnauthenticatedError(
                "cluster peer call without the peer secret"),
      ErrorInfo{.reason = v1::NOT_CLUSTER_MEMBER});
}

absl::Status NotLeader(absl::string_view leader_address) {
  absl::Status status = WithInfo(
      absl::UnavailableError(
          leader_address.empty()
              ? std::string("not leader; leader unknown")
              : absl::StrCat("not leader; leader is ", leader_address)),
      ErrorInfo{.reason = v1::NOT_LEADER});
  if (!leader_address.empty()) {
    status.SetPayload(kLeaderPayloadUrl, absl::Cord(leader_address));
  }
  return status;
}

absl::Status NoHolder(absl::string_view lock, absl::string_view client) {
  return WithInfo(
      absl::FailedPreconditionError(
          client.empty() ? absl::StrCat(lock, " has no holder")
                         : absl::StrCat(lock, " is not held by ", client)),
      ErrorInfo{.reason = pb::NO_HOLDER});
}

std::string LeaderAddressOf(const absl::Status& status) {
  auto payload = status.GetPayload(kLeaderPayloadUrl);
  return payload.has_value() ? std::string(*payload) : std::string();
}

absl::Status SessionOpenTimedOut(int64_t timeout_ms) {
  return absl::DeadlineExceededError(
      absl::StrCat("no open within --session-open-timeout=",
                   absl::FormatDuration(absl::Milliseconds(timeout_ms))));
}

absl::Status WatchFellBehind(size_t buffer_events) {
  return WithInfo(absl::ResourceExhaustedError("watch fell behind"),
                  ErrorInfo{.reason = pb::WATCH_FELL_BEHIND,
                            .limit = "watch-buffer-events",
                            .limit_value = static_cast<int64_t>(buffer_events)});
}

std::string AnsweredMessage(const absl::Status& status) {
  const std::string detail = ErrorDetailOf(status);
  if (detail.empty()) return std::string(status.message());
  return absl::StrCat(status.message(), ": ", detail);
}

pb::ErrorDetail ToErrorDetail(const ErrorInfo& info) {
  pb::ErrorDetail detail;
  detail.set_reason(info.reason);
  detail.set_field(info.field);
  detail.set_limit(info.limit);
  detail.set_limit_value(info.limit_value);
  for (const std::string& victim : info.victims) detail.add_victims(victim);
  return detail;
}

}  // namespace leasekeeper::server
