// The client's inverse of the server's error mapping.
#include "client/errors.h"

#include <grpcpp/client_context.h>
#include <grpcpp/support/status.h>

#include "gtest/gtest.h"
#include "leasekeeper/v1/lock_service.pb.h"

namespace leasekeeper::client {
namespace {

absl::Status FromServer(grpc::StatusCode code, const std::string& message) {
  grpc::ClientContext context;  // no trailing metadata
  return FromGrpcStatus(context, grpc::Status(code, message));
}

TEST(ErrorsTest, OkStaysOk) {
  EXPECT_TRUE(FromServer(grpc::StatusCode::OK, "").ok());
}

TEST(ErrorsTest, CodeAndMessageArePreserved) {
  absl::Status status =
      FromServer(grpc::StatusCode::FAILED_PRECONDITION, "not holder");
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(), "not holder");
}

TEST(ErrorsTest, ReasonNamesAreTheProtosNames) {
  EXPECT_EQ(ErrorReasonName(ErrorReason::kInvalidArguments),
            "INVALID_ARGUMENTS");
  EXPECT_EQ(ErrorReasonName(ErrorReason::kNotHolder), "NOT_HOLDER");
  EXPECT_EQ(ErrorReasonName(ErrorReason::kSupersededByRetry),
            "SUPERSEDED_BY_RETRY");
  EXPECT_EQ(ErrorReasonName(ErrorReason::kWatchFellBehind),
            "WATCH_FELL_BEHIND");
  EXPECT_EQ(ErrorReasonName(ErrorReason::kNoHolder), "NO_HOLDER");
  EXPECT_EQ(ErrorReasonName(static_cast<ErrorReason>(-1)), "UNKNOWN");
}

TEST(ErrorsTest, ReasonIsInferredFromTheContractTextWithoutMetadata) {
  struct Case {
    grpc::StatusCode code;
    const char* message;
    ErrorReason reason;
  } cases[] = {
      {grpc::StatusCode::FAILED_PRECONDITION, "client busy",
       ErrorReason::kClientBusy},
      {grpc::StatusCode::FAILED_PRECONDITION, "not holder",
       ErrorReason::kNotHolder},
      {grpc::StatusCode::FAILED_PRECONDITION, "stale token",
       ErrorReason::kStaleToken},
      {grpc::StatusCode::FAILED_PRECONDITION, "session ended",
       ErrorReason::kSessionEnded},
      {grpc::StatusCode::INVALID_ARGUMENT, "invalid ttl",
       ErrorReason::kInvalidTtl},
      {grpc::StatusCode::ABORTED, "deadlock", ErrorReason::kDeadlockVictim},
      {grpc::StatusCode::FAILED_PRECONDITION, "capacity mismatch",
       ErrorReason::kCapacityMismatch},
      {grpc::StatusCode::FAILED_PRECONDITION, "mode mismatch",
       ErrorReason::kModeMismatch},
      {grpc::StatusCode::DEADLINE_EXCEEDED, "wait timed out",
       ErrorReason::kWaitTimeout},
      {grpc::StatusCode::RESOURCE_EXHAUSTED,
       "limit exceeded: max-waiters-per-lock", ErrorReason::kLimitExceeded},
  };
  for (const Case& c : cases) {
    absl::Status status = FromServer(c.code, c.message);
    ASSERT_TRUE(ErrorReasonOf(status).has_value()) << c.message;
    EXPECT_EQ(*ErrorReasonOf(status), c.reason) << c.message;
  }
}

TEST(ErrorsTest, TransportFailuresHaveNoReason) {
  absl::Status status =
      FromServer(grpc::StatusCode::UNAVAILABLE, "failed to connect");
  EXPECT_FALSE(ErrorReasonOf(status).has_value());
  EXPECT_FALSE(ErrorReasonOf(absl::NotFoundError("x")).has_value());
}

TEST(ErrorsTest, OnlyFailuresWorthRetryingAreTransient) {
  EXPECT_TRUE(IsTransient(FromServer(grpc::StatusCode::UNAVAILABLE, "down")));
  EXPECT_TRUE(IsTransient(
      FromServer(grpc::StatusCode::DEADLINE_EXCEEDED, "Deadline Exceeded")));
  EXPECT_FALSE(IsTransient(
      FromServer(grpc::StatusCode::DEADLINE_EXCEEDED, "wait timed out")));
  EXPECT_FALSE(IsTransient(
      FromServer(grpc::StatusCode::FAILED_PRECONDITION, "not holder")));
  EXPECT_FALSE(IsTransient(
      FromServer(grpc::StatusCode::INVALID_ARGUMENT, "invalid ttl")));
  EXPECT_FALSE(IsTransient(FromServer(grpc::StatusCode::ABORTED, "deadlock")));
  EXPECT_FALSE(IsTransient(FromServer(grpc::StatusCode::RESOURCE_EXHAUSTED,
                                      "limit exceeded: max-sessions")));
  EXPECT_FALSE(IsTransient(absl::CancelledError("stopped")));
}

TEST(ErrorsTest, ACallErrorOnTheStreamKeepsCodeMessageAndDetail) {
  leasekeeper::v1::SessionCallError error;
  error.set_code(static_cast<int>(grpc::StatusCode::ABORTED));
  error.set_message("deadlock");
  error.mutable_detail()->set_reason(leasekeeper::v1::DEADLOCK_VICTIM);
  error.mutable_detail()->add_victims("b");
  error.mutable_detail()->add_victims("a");
  absl::Status status = FromSessionCallError(error);
  EXPECT_EQ(status.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(status.message(), "deadlock");
  EXPECT_TRUE(HasErrorReason(status, ErrorReason::kDeadlockVictim));
  EXPECT_EQ(DeadlockVictimsOf(status), (std::vector<std::string>{"b", "a"}));
}

TEST(ErrorsTest, ACallErrorWithoutAReasonGetsTheOneTheUnaryPathInfers) {
  leasekeeper::v1::SessionCallError error;
  error.set_code(static_cast<int>(grpc::StatusCode::FAILED_PRECONDITION));
  error.set_message("not holder");
  EXPECT_EQ(FromSessionCallError(error),
            FromServer(grpc::StatusCode::FAILED_PRECONDITION, "not holder"));
  error.set_code(static_cast<int>(grpc::StatusCode::PERMISSION_DENIED));
  error.set_message("no policy grants the lock");
  EXPECT_EQ(FromSessionCallError(error),
            FromServer(grpc::StatusCode::PERMISSION_DENIED,
                       "no policy grants the lock"));
}

}  // namespace
}  // namespace leasekeeper::client
