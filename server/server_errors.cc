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

static_assert(static_cast<int>(Reason::kSupersededByRetry) ==
              pb::SUPERSEDED_BY_RETRY);
static_assert(static_cast<int>(Reason::kTokenNotIssued) ==
              pb::TOKEN_NOT_ISSUED);
static_assert(static_cast<int>(Reason::kInvalidTtl) == pb::INVALID_TTL);
static_assert(static_cast<int>(Reason::kLimitExceeded) == pb::LIMIT_EXCEEDED);

absl::Status WithInfo(absl::Status status, const ErrorInfo& info) {
  status.SetPayload(kPayloadUrl,
                    absl::Cord(ToErrorDetail(info).SerializeAsString()));
  return status;
}

Reason ReasonOfCoreError(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArguments:
      return Reason::kInvalidArguments;
    case ErrorCode::kInvalidTtl:
      return Reason::kInvalidTtl;
    case ErrorCode::kClientBusy:
      return Reason::kClientBusy;
    case ErrorCode::kNotHolder:
      return Reason::kNotHolder;
    case ErrorCode::kStaleToken:
      return Reason::kStaleToken;
    case ErrorCode::kTokenNotIssued:
      return Reason::kTokenNotIssued;
  }
  return Reason::kUnspecified;
}

}  // namespace

absl::string_view ReasonName(Reason reason) {
  const std::string& name =
      pb::ErrorReason_Name(static_cast<pb::ErrorReason>(reason));
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
  info.reason = Reason::kLimitExceeded;
  info.limit = std::string(limit);
  info.limit_value = limit_value;
  return WithInfo(absl::ResourceExhaustedError(absl::StrCat(
                      "limit exceeded: ", limit, "=", limit_value)),
                  info);
}

absl::Status DeadlockVictim(std::vector<std::string> victims) {
  ErrorInfo info;
  info.reason = Reason::kDeadlockVictim;
  info.victims = std::move(victims);
  return WithInfo(absl::AbortedError("deadlock"), info);
}

absl::Status SessionEnded() {
  return WithInfo(absl::FailedPreconditionError("session ended"),
                  ErrorInfo{.reason = Reason::kSessionEnded});
}

absl::Status WaitTimedOut() {
  return WithInfo(absl::DeadlineExceededError("wait timed out"),
                  ErrorInfo{.reason = Reason::kWaitTimeout});
}

absl::Status ShuttingDown() {
  return WithInfo(absl::UnavailableError("server shutting down"),
                  ErrorInfo{.reason = Reason::kShuttingDown});
}

absl::Status RequestIdReused(absl::string_view field) {
  return WithInfo(absl::InvalidArgumentError("request id reused"),
                  ErrorInfo{.reason = Reason::kRequestIdReused,
                            .field = std::string(field)});
}

absl::Status SupersededByRetry() {
  return WithInfo(absl::CancelledError("superseded by retry"),
                  ErrorInfo{.reason = Reason::kSupersededByRetry});
}

absl::Status WaitCancelled() { return absl::CancelledError("cancelled"); }

ErrorInfo ErrorInfoOf(const absl::Status& status) {
  ErrorInfo info;
  if (status.ok()) return info;
  auto payload = status.GetPayload(kPayloadUrl);
  pb::ErrorDetail detail;
  if (payload.has_value() && detail.ParseFromString(std::string(*payload))) {
    info.reason = static_cast<Reason>(detail.reason());
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
  info.reason = Reason::kInvalidArguments;
  info.field = "request";
  return WithInfo(absl::InvalidArgumentError(absl::StrCat(
                      "invalid arguments: ", what, " cannot be parsed")),
                  info);
}

absl::Status SessionOpenTimedOut(int64_t timeout_ms) {
  return absl::DeadlineExceededError(
      absl::StrCat("no open within --session-open-timeout=",
                   absl::FormatDuration(absl::Milliseconds(timeout_ms))));
}

absl::Status WatchFellBehind(size_t buffer_events) {
  return WithInfo(absl::ResourceExhaustedError("watch fell behind"),
                  ErrorInfo{.reason = Reason::kWatchFellBehind,
                            .limit = "watch-buffer-events",
                            .limit_value = static_cast<int64_t>(buffer_events)});
}

pb::ErrorDetail ToErrorDetail(const ErrorInfo& info) {
  pb::ErrorDetail detail;
  detail.set_reason(static_cast<pb::ErrorReason>(info.reason));
  detail.set_field(info.field);
  detail.set_limit(info.limit);
  detail.set_limit_value(info.limit_value);
  for (const std::string& victim : info.victims) detail.add_victims(victim);
  return detail;
}

}  // namespace leasekeeper::server
