// The calls only operators' tools make, which the client library leaves
// out: ServerInfo (which daemon answers), ForceRelease (admins end a
// stuck lease) and grpc.health.v1.Health/Check (what probes ask). Plain
// structs out, failures as absl::Status from client::FromGrpcStatus, as
// RpcClient's calls.
//
// Thread-safety: pure functions over a thread-safe RpcClient.
#ifndef LEASEKEEPER_CLIENT_CTL_OPERATOR_CALLS_H_
#define LEASEKEEPER_CLIENT_CTL_OPERATOR_CALLS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/rpc_client.h"
#include "client/types.h"

namespace grpc {
class Channel;
}  // namespace grpc

namespace leasekeeper::ctl {

struct ServerInfo {
  std::string version;
  std::string commit;
  std::string grpc_version;
  absl::Duration uptime = absl::ZeroDuration();
};

// Outcomes: the daemon's answer; UNAVAILABLE / DEADLINE_EXCEEDED (not
// reached); UNAUTHENTICATED (a TLS server's plaintext port); UNIMPLEMENTED
// (a daemon older than the call).
absl::StatusOr<ServerInfo> GetServerInfo(const client::RpcClient& rpc,
                                         absl::Duration timeout);

// A lease ended by ForceRelease.
struct ForcedRelease {
  std::string client_id;
  client::FencingToken token = 0;
  client::LockMode mode = client::LockMode::kExclusive;
};

// Ends `holder`'s lease on `lock` (every holder's when `holder` is empty),
// logged by the server with `reason`.
// Outcomes: the leases ended, lowest token first (never empty);
// INVALID_ARGUMENT; RESOURCE_EXHAUSTED; FAILED_PRECONDITION NO_HOLDER
// (nobody, or not `holder`, holds it); PERMISSION_DENIED (not an admin);
// UNAUTHENTICATED; transport failures.
absl::StatusOr<std::vector<ForcedRelease>> ForceRelease(
    const client::RpcClient& rpc, const std::string& lock,
    const std::string& holder, const std::string& reason,
    absl::Duration timeout);

// grpc.health.v1's serving status of one service.
enum class HealthStatus {
  kUnknown,     // the server has no status for it yet
  kServing,
  kNotServing,  // e.g. draining after SIGTERM, or its log failed
};
// "UNKNOWN", "SERVING", "NOT_SERVING": the proto's names.
const char* HealthStatusName(HealthStatus status);

// Asks grpc.health.v1.Health/Check about `service` ("" is the whole
// server, "leasekeeper.v1.LockService" the lock service). Health needs no
// client certificate on a --health-listen port, unlike every other call.
// Outcomes: the status; NOT_FOUND (the server does not know `service`);
// UNAVAILABLE / DEADLINE_EXCEEDED (not reached); UNIMPLEMENTED (no health
// service there).
// REQUIRES: channel != nullptr.
absl::StatusOr<HealthStatus> CheckHealth(
    const std::shared_ptr<grpc::Channel>& channel, const std::string& service,
    absl::Duration timeout);

}  // namespace leasekeeper::ctl

#endif  // LEASEKEEPER_CLIENT_CTL_OPERATOR_CALLS_H_
