#include "server/grpc_status.h"

#include "leasekeeper/v1/lock_service.pb.h"
#include "server/server_errors.h"

namespace leasekeeper::server {
namespace {

namespace pb = ::leasekeeper::v1;

// absl::StatusCode and grpc::StatusCode are both the canonical codes, value
// for value; spelled out so that a mismatch cannot go unnoticed.
grpc::StatusCode ToGrpcCode(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return grpc::StatusCode::OK;
    case absl::StatusCode::kCancelled:
      return grpc::StatusCode::CANCELLED;
    case absl::StatusCode::kUnknown:
      return grpc::StatusCode::UNKNOWN;
    case absl::StatusCode::kInvalidArgument:
      return grpc::StatusCode::INVALID_ARGUMENT;
    case absl::StatusCode::kDeadlineExceeded:
      return grpc::StatusCode::DEADLINE_EXCEEDED;
    case absl::StatusCode::kNotFound:
      return grpc::StatusCode::NOT_FOUND;
    case absl::StatusCode::kAlreadyExists:
      return grpc::StatusCode::ALREADY_EXISTS;
    case absl::StatusCode::kPermissionDenied:
      return grpc::StatusCode::PERMISSION_DENIED;
    case absl::StatusCode::kResourceExhausted:
      return grpc::StatusCode::RESOURCE_EXHAUSTED;
    case absl::StatusCode::kFailedPrecondition:
      return grpc::StatusCode::FAILED_PRECONDITION;
    case absl::StatusCode::kAborted:
      return grpc::StatusCode::ABORTED;
    case absl::StatusCode::kOutOfRange:
      return grpc::StatusCode::OUT_OF_RANGE;
    case absl::StatusCode::kUnimplemented:
      return grpc::StatusCode::UNIMPLEMENTED;
    case absl::StatusCode::kInternal:
      return grpc::StatusCode::INTERNAL;
    case absl::StatusCode::kUnavailable:
      return grpc::StatusCode::UNAVAILABLE;
    case absl::StatusCode::kDataLoss:
      return grpc::StatusCode::DATA_LOSS;
    case absl::StatusCode::kUnauthenticated:
      return grpc::StatusCode::UNAUTHENTICATED;
    default:
      return grpc::StatusCode::UNKNOWN;
  }
}

}  // namespace

GrpcError ToGrpcStatus(const absl::Status& status) {
  GrpcError error;
  if (status.ok()) return error;
  error.status =
      grpc::Status(ToGrpcCode(status.code()), AnsweredMessage(status));

  const pb::ErrorDetail detail = ToErrorDetail(ErrorInfoOf(status));
  error.trailing_metadata.emplace_back(
      kReasonMetadataKey, std::string(ReasonName(detail.reason())));
  error.trailing_metadata.emplace_back(kErrorDetailMetadataKey,
                                       detail.SerializeAsString());
  if (std::string leader = LeaderAddressOf(status); !leader.empty()) {
    error.trailing_metadata.emplace_back(kLeaderMetadataKey,
                                         std::move(leader));
  }
  return error;
}

grpc::Status PrepareFinish(grpc::ServerContextBase* context,
                           const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  GrpcError error = ToGrpcStatus(status);
  for (const auto& [key, value] : error.trailing_metadata) {
    context->AddTrailingMetadata(key, value);
  }
  return error.status;
}

void ToSessionCallError(const absl::Status& status,
                        pb::SessionCallError* error) {
  error->set_code(static_cast<int>(ToGrpcCode(status.code())));
  error->set_message(AnsweredMessage(status));
  *error->mutable_detail() = ToErrorDetail(ErrorInfoOf(status));
}

}  // namespace leasekeeper::server
