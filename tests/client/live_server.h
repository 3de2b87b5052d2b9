// A GoogleTest fixture with one real leasekeeperd per test suite (via
// LocalServer, session grace 500 ms) and helpers to make clients on it.
// Each test uses locks named after itself, so tests do not interfere.
#ifndef LEASEKEEPER_TESTS_CLIENT_LIVE_SERVER_H_
#define LEASEKEEPER_TESTS_CLIENT_LIVE_SERVER_H_

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>
#include <grpcpp/support/client_interceptor.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "client/lease_timer.h"
#include "client/rpc_client.h"
#include "client/testing/local_server.h"
#include "gtest/gtest.h"

namespace leasekeeper::client::testing {

// Polls `condition` every 20 ms for up to `timeout`.
template <typename Condition>
bool Eventually(Condition condition,
                absl::Duration timeout = absl::Seconds(5)) {
  const MonotonicTime deadline = MonotonicNow() + timeout;
  while (MonotonicNow() < deadline) {
    if (condition()) return true;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return condition();
}

// The server's view through `rpc`, for assertions. Each is empty (nullopt,
// false) when the call fails, so that it may be polled with Eventually
// while the server restarts.
inline std::vector<HolderInfo> HoldersAt(const RpcClient& rpc,
                                         const std::string& lock) {
  absl::StatusOr<LockInfo> info = rpc.Inspect(lock);
  return info.ok() ? info->holders : std::vector<HolderInfo>{};
}
// True when `client_id` waits in the queue of `lock`.
inline bool QueuedAt(const RpcClient& rpc, const std::string& lock,
                     const std::string& client_id) {
  absl::StatusOr<LockInfo> info = rpc.Inspect(lock);
  if (!info.ok()) return false;
  for (const WaiterInfo& waiter : info->queue) {
    if (waiter.client_id == client_id) return true;
  }
  return false;
}
inline std::optional<SessionState> SessionAt(const RpcClient& rpc,
                                             const std::string& client_id) {
  absl::StatusOr<ClientStatus> status = rpc.Status(client_id);
  if (!status.ok()) return std::nullopt;
  return status->session;
}

// A plaintext channel to `address` whose calls pass through the
// interceptors `factory` makes, with MakeChannel's reconnect settings.
inline std::shared_ptr<grpc::Channel> InterceptedChannel(
    const std::string& address,
    std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>
        factory) {
  std::vector<
      std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>>
      interceptors;
  interceptors.push_back(std::move(factory));
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  return grpc::experimental::CreateCustomChannelWithInterceptors(
      address, grpc::InsecureChannelCredentials(), args,
      std::move(interceptors));
}

// Counts the ClientEvents of one client.
class EventLog {
 public:
  std::function<void(const ClientEvent&)> Sink() {
    return [this](const ClientEvent& event) {
      absl::MutexLock lock(&mu_);
      ++counts_[static_cast<int>(event.kind)];
    };
  }
  int Count(ClientEvent::Kind kind) const {
    absl::MutexLock lock(&mu_);
    auto it = counts_.find(static_cast<int>(kind));
    return it == counts_.end() ? 0 : it->second;
  }

 private:
  mutable absl::Mutex mu_;
  absl::flat_hash_map<int, int> counts_ ABSL_GUARDED_BY(mu_);
};

// The server's session grace in these tests.
inline constexpr absl::Duration kGrace = absl::Milliseconds(500);

class LiveServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    LocalServerOptions options;
    options.session_grace = kGrace;
    absl::StatusOr<std::unique_ptr<LocalServer>> started =
        LocalServer::Start(options);
    ASSERT_TRUE(started.ok()) << started.status();
    server_ = std::move(*started).release();
    rpc_ = new RpcClient(server_->NewChannel());
  }
  static void TearDownTestSuite() {
    delete rpc_;
    rpc_ = nullptr;
    if (server_ != nullptr) {
      EXPECT_TRUE(server_->Stop().ok());
      delete server_;
      server_ = nullptr;
    }
  }
  void SetUp() override {
    ASSERT_NE(server_, nullptr) << "leasekeeperd did not start";
  }

  static LocalServer& server() { return *server_; }

  // A lock name unique to the running test.
  static std::string LockName(absl::string_view suffix = "") {
    const ::testing::TestInfo* test =
        ::testing::UnitTest::GetInstance()->current_test_info();
    return absl::StrCat(test->test_suite_name(), "/", test->name(), suffix);
  }

  static std::unique_ptr<Client> NewClient(ClientOptions options = {}) {
    return NewClient(server_->NewChannel(), std::move(options));
  }

  // A client over `channel`, e.g. one with interceptors.
  static std::unique_ptr<Client> NewClient(
      std::shared_ptr<grpc::Channel> channel, ClientOptions options) {
    absl::StatusOr<std::unique_ptr<Client>> client =
        Client::Create(std::move(channel), std::move(options));
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? *std::move(client) : nullptr;
  }

  static std::unique_ptr<Client> NewClient(const std::string& client_id) {
    ClientOptions options;
    options.client_id = client_id;
    return NewClient(std::move(options));
  }

  static RpcClient& rpc() { return *rpc_; }
  static std::vector<HolderInfo> Holders(const std::string& lock) {
    return HoldersAt(rpc(), lock);
  }
  // True once `client_id` waits in the queue of `lock`.
  static bool IsQueued(const std::string& lock, const std::string& client_id) {
    return QueuedAt(rpc(), lock, client_id);
  }

 private:
  static inline LocalServer* server_ = nullptr;
  static inline RpcClient* rpc_ = nullptr;
};

}  // namespace leasekeeper::client::testing

#endif  // LEASEKEEPER_TESTS_CLIENT_LIVE_SERVER_H_
