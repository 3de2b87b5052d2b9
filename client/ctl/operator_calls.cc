#include "client/ctl/operator_calls.h"

#include "client/errors.h"
#include "client/internal/call_messages.h"
#include "client/internal/call_timing.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"
#include "proto/lock_mode.h"

namespace leasekeeper::ctl {
namespace {

namespace pb = ::leasekeeper::v1;

// Runs one unary call with `timeout` as its deadline, through the
// RpcClient's endpoint choice (NOT_LEADER is followed).
template <typename Response, typename Invoke>
absl::StatusOr<Response> Call(const client::RpcClient& rpc,
                              absl::Duration timeout, bool repeatable,
                              Invoke invoke) {
  client::CallOptions options;
  options.timeout = timeout;
  Response response;
  absl::Status status = rpc.CallWith(
      options, repeatable,
      [&](pb::LockService::Stub& stub, grpc::ClientContext* context) {
        return invoke(stub, context, &response);
      });
  if (!status.ok()) return status;
  return response;
}

}  // namespace

absl::StatusOr<ServerInfo> GetServerInfo(const client::RpcClient& rpc,
                                         absl::Duration timeout) {
  absl::StatusOr<pb::ServerInfoResponse> response =
      Call<pb::ServerInfoResponse>(
          rpc, timeout, /*repeatable=*/true,
          [&](pb::LockService::Stub& stub, grpc::ClientContext* context,
              pb::ServerInfoResponse* out) {
            return stub.ServerInfo(context, pb::ServerInfoRequest(), out);
          });
  if (!response.ok()) return response.status();
  return ServerInfo{response->version(), response->commit(),
                    response->grpc_version(),
                    absl::Milliseconds(response->uptime_ms())};
}

absl::StatusOr<std::vector<ForcedRelease>> ForceRelease(
    const client::RpcClient& rpc, const std::string& lock,
    const std::string& holder, const std::string& reason,
    absl::Duration timeout) {
  pb::ForceReleaseRequest request;
  request.set_lock(lock);
  request.set_client_id(holder);
  request.set_reason(reason);
  absl::StatusOr<pb::ForceReleaseResponse> response =
      Call<pb::ForceReleaseResponse>(
          rpc, timeout, /*repeatable=*/false,
          [&](pb::LockService::Stub& stub, grpc::ClientContext* context,
              pb::ForceReleaseResponse* out) {
            return stub.ForceRelease(context, request, out);
          });
  if (!response.ok()) return response.status();
  std::vector<ForcedRelease> released;
  for (const pb::ReleasedLease& lease : response->released()) {
    released.push_back(
        ForcedRelease{lease.client_id(), lease.token(),
                      LockModeFromProto<client::LockMode>(lease.mode())});
  }
  return released;
}

const char* HealthStatusName(HealthStatus status) {
  switch (status) {
    case HealthStatus::kServing:
      return "SERVING";
    case HealthStatus::kNotServing:
      return "NOT_SERVING";
    case HealthStatus::kUnknown:
      break;
  }
  return "UNKNOWN";
}

absl::StatusOr<HealthStatus> CheckHealth(
    const std::shared_ptr<grpc::Channel>& channel, const std::string& service,
    absl::Duration timeout) {
  namespace health = ::grpc::health::v1;
  const std::unique_ptr<health::Health::Stub> stub =
      health::Health::NewStub(channel);
  health::HealthCheckRequest request;
  request.set_service(service);
  // One node's health: no endpoint choice, no redirect.
  grpc::ClientContext context;
  client::internal::SetDeadlineAfter(timeout, context);
  health::HealthCheckResponse response;
  const grpc::Status status = stub->Check(&context, request, &response);
  if (!status.ok()) return client::FromGrpcStatus(context, status);
  switch (response.status()) {
    case health::HealthCheckResponse::SERVING:
      return HealthStatus::kServing;
    case health::HealthCheckResponse::NOT_SERVING:
      return HealthStatus::kNotServing;
    default:  // UNKNOWN; SERVICE_UNKNOWN is for Watch only
      return HealthStatus::kUnknown;
  }
}

}  // namespace leasekeeper::ctl
