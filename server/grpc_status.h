// ToGrpcStatus: the one place where the server's absl::Status values become
// gRPC statuses.
//
// Mapping (the client library implements the inverse):
//   absl code                 -> the gRPC code of the same name;
//   message                   -> AnsweredMessage(status): the status message
//                                (the contract's error text for the core's
//                                errors) and the core's detail, if any;
//   ErrorInfoOf(status)       -> trailing metadata
//        "leasekeeper-reason"    the reason's name, e.g. "CLIENT_BUSY";
//        "leasekeeper-error-bin" a serialized leasekeeper.v1.ErrorDetail;
//   NotLeader's address       -> trailing metadata "leasekeeper-leader".
// OK maps to OK with no metadata. A status the server never makes (no
// reason) keeps its code and message and gets reason ERROR_REASON_UNSPECIFIED.
//
// Thread-safety: pure function.
#ifndef LEASEKEEPER_SERVER_GRPC_STATUS_H_
#define LEASEKEEPER_SERVER_GRPC_STATUS_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/status.h"
#include "leasekeeper/v1/lock_service.pb.h"

namespace leasekeeper::server {

inline constexpr char kReasonMetadataKey[] = "leasekeeper-reason";
inline constexpr char kErrorDetailMetadataKey[] = "leasekeeper-error-bin";
// NOT_LEADER: the leader's advertised host:port, when the node knows it.
inline constexpr char kLeaderMetadataKey[] = "leasekeeper-leader";

struct GrpcError {
  grpc::Status status;
  // (key, value) pairs to add as trailing metadata before finishing.
  std::vector<std::pair<std::string, std::string>> trailing_metadata;
};

GrpcError ToGrpcStatus(const absl::Status& status);

// The status to finish a call with: OK for OK; otherwise ToGrpcStatus's,
// after adding its trailing metadata to `context`.
grpc::Status PrepareFinish(grpc::ServerContextBase* context,
                           const absl::Status& status);

// The same error as a Session stream's call result: the code, the message
// and the ErrorDetail that ToGrpcStatus puts in the trailing metadata.
// REQUIRES: !status.ok().
void ToSessionCallError(const absl::Status& status,
                        v1::SessionCallError* error);

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_GRPC_STATUS_H_
