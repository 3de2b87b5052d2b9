#include "server/rpc_metrics.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "leasekeeper/v1/lock_service.pb.h"
#include "metrics/histogram.h"

namespace leasekeeper::server {
namespace {

constexpr const char* kCodeNames[RpcMetrics::kCodes] = {
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
};

class MetricsInterceptor final : public grpc::experimental::Interceptor {
 public:
  explicit MetricsInterceptor(const RpcMetrics::Method* method)
      : method_(method), start_(std::chrono::steady_clock::now()) {}

  void Intercept(
      grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_STATUS)) {
      const int code = static_cast<int>(methods->GetSendStatus().error_code());
      if (code >= 0 && code < RpcMetrics::kCodes) {
        method_->calls[code]->Increment();
      }
      if (method_->latency != nullptr) {
        method_->latency->Observe(std::chrono::duration<double>(
                                      std::chrono::steady_clock::now() - start_)
                                      .count());
      }
    }
    methods->Proceed();
  }

 private:
  const RpcMetrics::Method* const method_;
  const std::chrono::steady_clock::time_point start_;
};

class Factory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit Factory(const RpcMetrics& metrics) : metrics_(metrics) {}

  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    const RpcMetrics::Method* method = metrics_.Find(info->method());
    // gRPC accepts nullptr for "no interceptor on this call".
    return method == nullptr ? nullptr : new MetricsInterceptor(method);
  }

 private:
  const RpcMetrics& metrics_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<RpcMetrics>> RpcMetrics::Create(
    metrics::Registry& registry) {
  std::unique_ptr<RpcMetrics> result(new RpcMetrics());
  const google::protobuf::ServiceDescriptor* service =
      v1::AcquireRequest::descriptor()->file()->FindServiceByName(
          "LockService");
  if (service == nullptr) {
    return absl::InternalError("leasekeeper.v1.LockService descriptor missing");
  }
  for (int i = 0; i < service->method_count(); ++i) {
    const google::protobuf::MethodDescriptor* descriptor = service->method(i);
    const std::string name = descriptor->name();
    Method method;
    for (int code = 0; code < kCodes; ++code) {
      absl::StatusOr<metrics::Counter*> counter = registry.AddCounter(
          "leasekeeper_rpcs_total",
          "LockService calls finished, by method and gRPC status code.",
          {{"method", name}, {"code", kCodeNames[code]}});
      if (!counter.ok()) return counter.status();
      method.calls[code] = *counter;
    }
    if (!descriptor->client_streaming() && !descriptor->server_streaming()) {
      absl::StatusOr<metrics::Histogram*> latency = registry.AddHistogram(
          "leasekeeper_rpc_duration_seconds",
          "LockService unary call latency from arrival to status, by method "
          "(a waiting Acquire includes its wait).",
          metrics::LatencyBucketsSeconds(), {{"method", name}});
      if (!latency.ok()) return latency.status();
      method.latency = *latency;
    }
    result->methods_.emplace(absl::StrCat("/", service->full_name(), "/", name),
                             method);
  }
  return result;
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
RpcMetrics::MakeInterceptorFactory() {
  return std::make_unique<Factory>(*this);
}

const RpcMetrics::Method* RpcMetrics::Find(const char* full_method) const {
  if (full_method == nullptr) return nullptr;
  auto it = methods_.find(full_method);
  return it == methods_.end() ? nullptr : &it->second;
}

}  // namespace leasekeeper::server
