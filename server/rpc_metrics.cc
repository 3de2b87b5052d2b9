#include "server/rpc_metrics.h"

#include <chrono>
#include <exception>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "leasekeeper/v1/lock_service.pb.h"
#include "server/grpc_status.h"

namespace leasekeeper::server {
namespace {

namespace pb = ::leasekeeper::v1;

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

// Latency buckets in seconds, 100 us .. 10 s: a lock RPC on a warm server
// takes well under a millisecond, an fsync a few milliseconds, a waiting
// Acquire up to its wait timeout.
prometheus::Histogram::BucketBoundaries LatencyBucketsSeconds() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
          0.025,  0.05,    0.1,    0.25,  0.5,    1,     2.5,
          5,      10};
}

class MetricsInterceptor final : public grpc::experimental::Interceptor {
 public:
  MetricsInterceptor(const RpcMetrics& metrics,
                     const RpcMetrics::Method* method)
      : metrics_(metrics),
        method_(method),
        start_(std::chrono::steady_clock::now()) {}

  void Intercept(
      grpc::experimental::InterceptorBatchMethods* methods) override {
    using grpc::experimental::InterceptionHookPoints;
    if (methods->QueryInterceptionHookPoint(
            InterceptionHookPoints::PRE_SEND_STATUS)) {
      const grpc::Status status = methods->GetSendStatus();
      const int code = static_cast<int>(status.error_code());
      if (code >= 0 && code < RpcMetrics::kCodes) {
        method_->calls[code]->Increment();
      }
      if (status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED) {
        CountRefusal(*methods->GetSendTrailingMetadata());
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
  void CountRefusal(const std::multimap<std::string, std::string>& trailers) {
    auto it = trailers.find(kErrorDetailMetadataKey);
    pb::ErrorDetail detail;
    if (it != trailers.end() && detail.ParseFromString(it->second)) {
      metrics_.CountRefusal(detail);
    }
  }

  const RpcMetrics& metrics_;
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
    return method == nullptr ? nullptr
                             : new MetricsInterceptor(metrics_, method);
  }

 private:
  const RpcMetrics& metrics_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<RpcMetrics>> RpcMetrics::Create(
    prometheus::Registry& registry) {
  const google::protobuf::ServiceDescriptor* service =
      v1::AcquireRequest::descriptor()->file()->FindServiceByName(
          "LockService");
  if (service == nullptr) {
    return absl::InternalError("leasekeeper.v1.LockService descriptor missing");
  }
  // prometheus-cpp reports a name clash (another type under the same name)
  // by throwing; nothing here is built from input, so it is a bug.
  try {
    auto& calls = prometheus::BuildCounter()
                      .Name("leasekeeper_rpcs_total")
                      .Help("LockService calls finished, by method and gRPC "
                            "status code.")
                      .Register(registry);
    auto& latencies =
        prometheus::BuildHistogram()
            .Name("leasekeeper_rpc_duration_seconds")
            .Help("LockService unary call latency from arrival to status, by "
                  "method (a waiting Acquire includes its wait).")
            .Register(registry);
    auto& refusals =
        prometheus::BuildCounter()
            .Name("leasekeeper_limit_refusals_total")
            .Help("Requests refused with RESOURCE_EXHAUSTED by a limit, by "
                  "the limit's flag name.")
            .Register(registry);
    std::unique_ptr<RpcMetrics> result(new RpcMetrics(refusals));
    for (int i = 0; i < service->method_count(); ++i) {
      const google::protobuf::MethodDescriptor* descriptor = service->method(i);
      const std::string name = descriptor->name();
      Method method;
      for (int code = 0; code < kCodes; ++code) {
        method.calls[code] =
            &calls.Add({{"method", name}, {"code", kCodeNames[code]}});
      }
      if (!descriptor->client_streaming() && !descriptor->server_streaming()) {
        method.latency =
            &latencies.Add({{"method", name}}, LatencyBucketsSeconds());
      }
      result->methods_.emplace(
          absl::StrCat("/", service->full_name(), "/", name), method);
    }
    for (const char* limit : kLimitFlagNames) refusals.Add({{"limit", limit}});
    return result;
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("cannot register the RPC metrics: ", e.what()));
  }
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

void RpcMetrics::CountRefusal(const pb::ErrorDetail& detail) const {
  if (detail.reason() != pb::LIMIT_EXCEEDED || detail.limit().empty()) return;
  limit_refusals_.Add({{"limit", detail.limit()}}).Increment();
}

}  // namespace leasekeeper::server
