// Statuses as the client library holds a server's refusals once
// FromGrpcStatus has mapped them: the code, the message, and the payloads
// ErrorReasonOf and LeaderAddressOf read. For tests of the client's rules
// on fake attempts.
#ifndef LEASEKEEPER_TESTS_CLIENT_SERVER_REFUSALS_H_
#define LEASEKEEPER_TESTS_CLIENT_SERVER_REFUSALS_H_

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/string_view.h"
#include "client/errors.h"
#include "leasekeeper/v1/lock_service.pb.h"

namespace leasekeeper::client::testing {

// A refusal with `reason` in its ErrorDetail payload.
inline absl::Status WithReason(absl::StatusCode code, absl::string_view message,
                               leasekeeper::v1::ErrorReason reason) {
  absl::Status status(code, message);
  leasekeeper::v1::ErrorDetail detail;
  detail.set_reason(reason);
  status.SetPayload(kErrorDetailPayloadUrl,
                    absl::Cord(detail.SerializeAsString()));
  return status;
}

// What a follower answers: NOT_LEADER, naming `leader` when it knows one.
inline absl::Status NotLeader(absl::string_view leader = "") {
  absl::Status status = WithReason(
      absl::StatusCode::kUnavailable,
      leader.empty() ? "not leader; leader unknown" : "not leader; leader is",
      leasekeeper::v1::NOT_LEADER);
  if (!leader.empty()) status.SetPayload(kLeaderPayloadUrl, absl::Cord(leader));
  return status;
}

}  // namespace leasekeeper::client::testing

#endif  // LEASEKEEPER_TESTS_CLIENT_SERVER_REFUSALS_H_
