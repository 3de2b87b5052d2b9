#include "server/undecodable_request.h"

#include <map>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/grpc_status.h"
#include "server/server_errors.h"

namespace leasekeeper::server {
namespace {

using grpc::experimental::InterceptionHookPoints;
using grpc::experimental::ServerRpcInfo;

class UndecodableRequestInterceptor final
    : public grpc::experimental::Interceptor {
 public:
  explicit UndecodableRequestInterceptor(std::string method)
      : method_(std::move(method)) {}

  void Intercept(
      grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            InterceptionHookPoints::POST_RECV_MESSAGE)) {
      // A unary call's request is null here exactly when it did not parse.
      undecodable_ = methods->GetRecvMessage() == nullptr;
    }
    if (undecodable_ && methods->QueryInterceptionHookPoint(
                            InterceptionHookPoints::PRE_SEND_STATUS)) {
      GrpcError error = ToGrpcStatus(
          UndecodableMessage(absl::StrCat("the request of ", method_)));
      methods->ModifySendStatus(error.status);
      std::multimap<std::string, std::string>* trailers =
          methods->GetSendTrailingMetadata();
      for (auto& [key, value] : error.trailing_metadata) {
        trailers->emplace(std::move(key), std::move(value));
      }
    }
    methods->Proceed();
  }

 private:
  const std::string method_;
  bool undecodable_ = false;
};

class UndecodableRequestInterceptorFactory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(
      ServerRpcInfo* info) override {
    if (info->type() != ServerRpcInfo::Type::UNARY) return nullptr;
    return new UndecodableRequestInterceptor(info->method());
  }
};

}  // namespace

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
MakeUndecodableRequestInterceptorFactory() {
  return std::make_unique<UndecodableRequestInterceptorFactory>();
}

}  // namespace leasekeeper::server
