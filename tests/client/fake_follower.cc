#include "tests/client/fake_follower.h"

#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/server_callback.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "leasekeeper/v1/lock_service.pb.h"

namespace leasekeeper::client::testing {

// Refuses each call at once, whatever its method.
class FakeFollower::Refuser : public grpc::CallbackGenericService {
 public:
  explicit Refuser(FakeFollower& owner) : owner_(owner) {}

  grpc::ServerGenericBidiReactor* CreateReactor(
      grpc::GenericCallbackServerContext* context) override {
    owner_.Count(context->method());
    const std::string leader = owner_.Leader();
    leasekeeper::v1::ErrorDetail detail;
    detail.set_reason(leasekeeper::v1::NOT_LEADER);
    context->AddTrailingMetadata("leasekeeper-reason", "NOT_LEADER");
    context->AddTrailingMetadata("leasekeeper-error-bin",
                                 detail.SerializeAsString());
    if (!leader.empty()) {
      context->AddTrailingMetadata("leasekeeper-leader", leader);
    }
    return new Refusal(grpc::Status(
        grpc::StatusCode::UNAVAILABLE,
        leader.empty() ? "not leader; leader unknown"
                       : absl::StrCat("not leader; leader is ", leader)));
  }

 private:
  class Refusal : public grpc::ServerGenericBidiReactor {
   public:
    explicit Refusal(const grpc::Status& status) { Finish(status); }
    void OnDone() override { delete this; }
  };

  FakeFollower& owner_;
};

absl::StatusOr<std::unique_ptr<FakeFollower>> FakeFollower::Start(
    std::string leader) {
  std::unique_ptr<FakeFollower> follower(new FakeFollower());
  follower->leader_ = std::move(leader);
  follower->refuser_ = std::make_unique<Refuser>(*follower);
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &port);
  builder.RegisterCallbackGenericService(follower->refuser_.get());
  follower->server_ = builder.BuildAndStart();
  if (follower->server_ == nullptr || port == 0) {
    return absl::InternalError("the fake follower could not listen");
  }
  follower->address_ = absl::StrCat("127.0.0.1:", port);
  return follower;
}

FakeFollower::~FakeFollower() {
  if (server_ != nullptr) server_->Shutdown();
}

void FakeFollower::SetLeader(std::string leader) {
  absl::MutexLock lock(&mu_);
  leader_ = std::move(leader);
}

std::string FakeFollower::Leader() const {
  absl::MutexLock lock(&mu_);
  return leader_;
}

void FakeFollower::Count(const std::string& method) {
  absl::MutexLock lock(&mu_);
  ++calls_[method];
}

int FakeFollower::Calls(absl::string_view method) const {
  absl::MutexLock lock(&mu_);
  int total = 0;
  for (const auto& [name, count] : calls_) {
    absl::string_view short_name = name;
    const size_t slash = short_name.rfind('/');
    if (slash != absl::string_view::npos) short_name.remove_prefix(slash + 1);
    if (short_name == method) total += count;
  }
  return total;
}

int FakeFollower::TotalCalls() const {
  absl::MutexLock lock(&mu_);
  int total = 0;
  for (const auto& [name, count] : calls_) total += count;
  return total;
}

}  // namespace leasekeeper::client::testing
