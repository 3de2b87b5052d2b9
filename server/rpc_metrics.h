// RpcMetrics: per-method call counts by gRPC status code, latency histograms
// and refusals by limit for leasekeeper.v1.LockService, collected by a gRPC
// server interceptor that sees every answer sent (docs/design/server.md).
// Thread-safety: the interceptors run concurrently; the counters are atomic.
// The RpcMetrics must outlive the grpc::Server it is installed in.
#ifndef LEASEKEEPER_SERVER_RPC_METRICS_H_
#define LEASEKEEPER_SERVER_RPC_METRICS_H_

#include <array>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "grpcpp/support/server_interceptor.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace leasekeeper::v1 {
class ErrorDetail;
}  // namespace leasekeeper::v1

namespace leasekeeper::server {

// The flag names of the limits the server's own code refuses requests by
// (server_config.h's Limits, less --max-request-bytes, see above). Each has
// a leasekeeper_limit_refusals_total series from the start (at 0); a
// refusal under a name not listed here is still counted, under its own
// name.
inline constexpr const char* kLimitFlagNames[] = {
    "max-client-id-bytes", "max-lock-name-bytes",  "max-key-bytes",
    "max-value-bytes",     "max-label-bytes",      "max-request-id-bytes",
    "max-waiters-per-lock", "max-sessions",        "max-locks-per-client",
    "max-store-bytes",      "max-keys-per-lock",
};

class RpcMetrics {
 public:
  // One entry per gRPC status code (0..16).
  static constexpr int kCodes = 17;

  struct Method {
    std::array<prometheus::Counter*, kCodes> calls{};
    prometheus::Histogram* latency = nullptr;  // null for streaming methods
  };

  // Registers the series for every method of leasekeeper.v1.LockService
  // (read from the generated descriptor, so a new RPC is covered without
  // code changes) and for every limit of kLimitFlagNames. Outcomes: the
  // metrics; INTERNAL if the service descriptor is missing or a name is
  // taken in `registry` by another type.
  static absl::StatusOr<std::unique_ptr<RpcMetrics>> Create(
      prometheus::Registry& registry);

  RpcMetrics(const RpcMetrics&) = delete;
  RpcMetrics& operator=(const RpcMetrics&) = delete;

  // A factory for grpc::ServerBuilder::experimental().SetInterceptorCreators.
  std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
  MakeInterceptorFactory();

  // The series of a full method path ("/leasekeeper.v1.LockService/Acquire"),
  // or null for any other method.
  const Method* Find(const char* full_method) const;

  // Counts a refusal by the limit `detail` names (reason LIMIT_EXCEEDED and
  // a limit); any other detail counts nothing. O(1) for a listed limit;
  // takes the family's mutex.
  void CountRefusal(const v1::ErrorDetail& detail) const;

 private:
  explicit RpcMetrics(prometheus::Family<prometheus::Counter>& limit_refusals)
      : limit_refusals_(limit_refusals) {}

  absl::flat_hash_map<std::string, Method> methods_;
  prometheus::Family<prometheus::Counter>& limit_refusals_;
};

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_RPC_METRICS_H_
