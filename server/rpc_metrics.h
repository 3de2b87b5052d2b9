// RpcMetrics: per-method call counts by gRPC status code and latency
// histograms for leasekeeper.v1.LockService, collected by a gRPC server
// interceptor so that no handler has to measure itself.
//
// Series (labels are fixed at startup: one per LockService method and code):
//   leasekeeper_rpcs_total{method="Acquire",code="OK"}        counter
//   leasekeeper_rpc_duration_seconds{method="Acquire"}         histogram
// `method` is the short method name; `code` the gRPC code name
// (OK, INVALID_ARGUMENT, PERMISSION_DENIED, ...). The latency runs from the
// call's arrival to its status being sent, measured on the steady clock; a
// waiting Acquire includes its wait. Session streams are counted but not
// timed (their length is the session's). Calls to other services (health,
// reflection) are not recorded.
//
// Thread-safety: the interceptors run on gRPC's threads concurrently; each
// records with relaxed atomics only (no lock, no allocation after setup).
// The RpcMetrics must outlive the grpc::Server it is installed in.
#ifndef LEASEKEEPER_SERVER_RPC_METRICS_H_
#define LEASEKEEPER_SERVER_RPC_METRICS_H_

#include <array>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "grpcpp/support/server_interceptor.h"
#include "metrics/registry.h"

namespace leasekeeper::server {

class RpcMetrics {
 public:
  // One entry per gRPC status code (0..16).
  static constexpr int kCodes = 17;

  struct Method {
    std::array<metrics::Counter*, kCodes> calls{};
    metrics::Histogram* latency = nullptr;  // null for streaming methods
  };

  // Registers the series for every method of leasekeeper.v1.LockService
  // (read from the generated descriptor, so a new RPC is covered without
  // code changes). Outcomes: the metrics; the registry's errors (e.g.
  // ALREADY_EXISTS if called twice on one registry).
  static absl::StatusOr<std::unique_ptr<RpcMetrics>> Create(
      metrics::Registry& registry);

  RpcMetrics(const RpcMetrics&) = delete;
  RpcMetrics& operator=(const RpcMetrics&) = delete;

  // A factory for grpc::ServerBuilder::experimental().SetInterceptorCreators.
  std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
  MakeInterceptorFactory();

  // The series of a full method path ("/leasekeeper.v1.LockService/Acquire"),
  // or null for any other method.
  const Method* Find(const char* full_method) const;

 private:
  RpcMetrics() = default;

  absl::flat_hash_map<std::string, Method> methods_;
};

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_RPC_METRICS_H_
