#include "core/errors.h"

#include <array>

namespace leasekeeper {
namespace {

constexpr std::array<ErrorCode, 8> kAllCodes = {
    ErrorCode::kInvalidArguments,  ErrorCode::kInvalidTtl,
    ErrorCode::kClientBusy,        ErrorCode::kNotHolder,
    ErrorCode::kStaleToken,        ErrorCode::kTokenNotIssued,
    ErrorCode::kCapacityMismatch, ErrorCode::kModeMismatch};

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

}  // namespace leasekeeper
