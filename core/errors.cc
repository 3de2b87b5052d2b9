#include "core/errors.h"

#include <array>
#include <optional>
#include <string>

#include "absl/strings/cord.h"

namespace leasekeeper {
namespace {

constexpr std::array<ErrorCode, 8> kAllCodes = {
    ErrorCode::kInvalidArguments,  ErrorCode::kInvalidTtl,
    ErrorCode::kClientBusy,        ErrorCode::kNotHolder,
    ErrorCode::kStaleToken,        ErrorCode::kTokenNotIssued,
    ErrorCode::kCapacityMismatch, ErrorCode::kModeMismatch};

// The payload under which MakeError keeps a detail (plain text).
constexpr absl::string_view kDetailPayloadUrl = "leasekeeper/error-detail";

}  // namespace

absl::string_view ErrorText(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArguments:
      return "invalid arguments";
    case ErrorCode::kInvalidTtl:
      return "invalid ttl";
    case ErrorCode::kClientBusy:
      return "client busy";
    case ErrorCode::kNotHolder:
      return "not holder";
    case ErrorCode::kStaleToken:
      return "stale token";
    case ErrorCode::kTokenNotIssued:
      return "token not issued";
    case ErrorCode::kCapacityMismatch:
      return "capacity mismatch";
    case ErrorCode::kModeMismatch:
      return "mode mismatch";
  }
  return "unknown error";
}

absl::Status MakeError(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArguments:
    case ErrorCode::kInvalidTtl:
      return absl::InvalidArgumentError(ErrorText(code));
    case ErrorCode::kClientBusy:
    case ErrorCode::kNotHolder:
    case ErrorCode::kStaleToken:
    case ErrorCode::kTokenNotIssued:
    case ErrorCode::kCapacityMismatch:
    case ErrorCode::kModeMismatch:
      return absl::FailedPreconditionError(ErrorText(code));
  }
  return absl::InternalError("unknown error code");
}

absl::Status MakeError(ErrorCode code, absl::string_view detail) {
  absl::Status status = MakeError(code);
  status.SetPayload(kDetailPayloadUrl, absl::Cord(detail));
  return status;
}

std::optional<ErrorCode> ErrorCodeOf(const absl::Status& status) {
  if (status.ok()) return std::nullopt;
  for (ErrorCode code : kAllCodes) {
    if (status.message() == ErrorText(code) &&
        status.code() == MakeError(code).code()) {
      return code;
    }
  }
  return std::nullopt;
}

std::string ErrorDetailOf(const absl::Status& status) {
  auto detail = status.GetPayload(kDetailPayloadUrl);
  return detail.has_value() ? std::string(*detail) : std::string();
}

}  // namespace leasekeeper
