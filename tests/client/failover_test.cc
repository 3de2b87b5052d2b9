// The client library against several endpoints: it follows NOT_LEADER to the
// leader a node names, skips nodes that are down or know no leader, and a
// lease rides over a failover (the leader gone, another node serving the
// same state) as it rides over a restart. The "cluster" here is real
// leasekeeperd processes on one data dir, one at a time, plus FakeFollower,
// which refuses everything as a follower does and names the leader.
#include <sys/socket.h>
#include <netinet/in.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "client/client.h"
#include "client/errors.h"
#include "client/rpc_client.h"
#include "client/testing/local_server.h"
#include "gtest/gtest.h"
#include "tests/client/fake_follower.h"
#include "tests/client/live_server.h"

namespace leasekeeper::client::testing {
namespace {

// A loopback port nobody listens on (bound, then closed).
std::string DeadAddress() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  return absl::StrCat("127.0.0.1:", ntohs(address.sin_port));
}

// A loopback port that accepts connections (the kernel completes the TCP
// handshake into the backlog) and never answers, like a paused process.
class HungEndpoint {
 public:
  HungEndpoint() : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address));
    listen(fd_, 16);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
    address_ = absl::StrCat("127.0.0.1:", ntohs(address.sin_port));
  }
  ~HungEndpoint() { close(fd_); }
  HungEndpoint(const HungEndpoint&) = delete;
  HungEndpoint& operator=(const HungEndpoint&) = delete;
  const std::string& address() const { return address_; }

 private:
  int fd_;
  std::string address_;
};

AcquireCall Call(const std::string& client_id, const std::string& lock,
                 const std::string& request_id) {
  AcquireCall call;
  call.client_id = client_id;
  call.lock = lock;
  call.ttl = absl::Seconds(10);
  call.request_id = request_id;
  return call;
}

class FailoverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TEST_TMPDIR");
    std::string pattern = absl::StrCat(tmp != nullptr ? tmp : "/tmp",
                                       "/leasekeeper_failover_XXXXXX");
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    data_dir_ = pattern;
    options_.session_grace = absl::Seconds(5);
    options_.extra_flags.push_back(absl::StrCat("--data-dir=", data_dir_));
    StartLeader();
    absl::StatusOr<std::unique_ptr<FakeFollower>> follower =
        FakeFollower::Start(leader_->address());
    ASSERT_TRUE(follower.ok()) << follower.status();
    follower_ = *std::move(follower);
  }

  void TearDown() override {
    clients_.clear();
    follower_.reset();
    if (leader_ != nullptr) (void)leader_->Stop();
    leader_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(data_dir_, ignored);
  }

  void StartLeader() {
    absl::StatusOr<std::unique_ptr<LocalServer>> started =
        LocalServer::Start(options_);
    ASSERT_TRUE(started.ok()) << started.status();
    leader_ = *std::move(started);
  }

  // The leader dies (SIGKILL) and another process takes over its state on
  // another address, which the follower names from then on.
  void FailOver() {
    leader_->Kill();
    StartLeader();
    follower_->SetLeader(leader_->address());
  }

  Client& NewClient(const std::string& endpoints, const std::string& id,
                    EventLog* events = nullptr) {
    ClientOptions options;
    options.client_id = id;
    options.call_timeout = absl::Milliseconds(800);
    if (events != nullptr) options.on_event = events->Sink();
    absl::StatusOr<std::unique_ptr<Client>> client =
        Client::Connect(endpoints, {}, std::move(options));
    EXPECT_TRUE(client.ok()) << client.status();
    clients_.push_back(*std::move(client));
    return *clients_.back();
  }

  std::vector<HolderInfo> HoldersAtLeader(const std::string& lock) {
    return HoldersAt(RpcClient(leader_->NewChannel()), lock);
  }
  std::optional<SessionState> SessionAtLeader(const std::string& id) {
    return SessionAt(RpcClient(leader_->NewChannel()), id);
  }

  static std::string LockName() {
    return ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }

  std::string data_dir_;
  LocalServerOptions options_;
  std::unique_ptr<LocalServer> leader_;
  std::unique_ptr<FakeFollower> follower_;
  std::vector<std::unique_ptr<Client>> clients_;
};

TEST_F(FailoverTest, RpcClientFollowsNotLeaderToTheLeaderTheNodeNames) {
  absl::StatusOr<std::unique_ptr<RpcClient>> rpc =
      RpcClient::Connect(follower_->address());
  ASSERT_TRUE(rpc.ok()) << rpc.status();
  absl::StatusOr<AcquireResult> granted = (*rpc)->Acquire(Call("redirected", LockName(), "r-1"));
  ASSERT_TRUE(granted.ok()) << granted.status();
  EXPECT_EQ(granted->outcome, AcquireOutcome::kGranted);
  EXPECT_EQ(follower_->Calls("Acquire"), 1);
  std::vector<HolderInfo> holders = HoldersAtLeader(LockName());
  ASSERT_EQ(holders.size(), 1u);
  EXPECT_EQ(holders[0].client_id, "redirected");
  // Later calls go to the leader directly.
  ASSERT_TRUE((*rpc)->Inspect(LockName()).ok());
  EXPECT_EQ(follower_->TotalCalls(), 1);
}

TEST_F(FailoverTest, ARefusalIsFollowedEvenForACallThatCannotBeRepeated) {
  // No request id: a transport failure would not be repeated, but a
  // NOT_LEADER refusal applied nothing.
  absl::StatusOr<std::unique_ptr<RpcClient>> rpc =
      RpcClient::Connect(follower_->address());
  ASSERT_TRUE(rpc.ok());
  absl::StatusOr<AcquireResult> granted = (*rpc)->Acquire(Call("no-id", LockName(), ""));
  ASSERT_TRUE(granted.ok()) << granted.status();
  EXPECT_EQ(granted->outcome, AcquireOutcome::kGranted);
}

TEST_F(FailoverTest, ANodeThatKnowsNoLeaderSendsTheCallToTheNextEndpoint) {
  follower_->SetLeader("");
  absl::StatusOr<std::unique_ptr<RpcClient>> rpc = RpcClient::Connect(
      absl::StrCat(follower_->address(), ",", leader_->address()));
  ASSERT_TRUE(rpc.ok());
  absl::StatusOr<LockInfo> info = (*rpc)->Inspect(LockName());
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(follower_->Calls("Inspect"), 1);
}

TEST_F(FailoverTest, WithNoNodeServingACallFailsUnavailableWithinItsTimeout) {
  follower_->SetLeader("");
  absl::StatusOr<std::unique_ptr<RpcClient>> rpc =
      RpcClient::Connect(absl::StrCat(follower_->address(), ",", DeadAddress()));
  ASSERT_TRUE(rpc.ok());
  CallOptions options;
  options.timeout = absl::Seconds(2);
  const MonotonicTime started = MonotonicNow();
  absl::StatusOr<LockInfo> info = (*rpc)->Inspect(LockName(), options);
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.status().code(), absl::StatusCode::kUnavailable);
  // All attempts together, not each (slack for a loaded machine).
  EXPECT_LT(MonotonicNow() - started, options.timeout + absl::Seconds(1));
}

TEST_F(FailoverTest, AnUnreachableEndpointIsSkipped) {
  absl::StatusOr<std::unique_ptr<RpcClient>> rpc = RpcClient::Connect(
      absl::StrCat(DeadAddress(), ",", leader_->address()));
  ASSERT_TRUE(rpc.ok());
  absl::StatusOr<AcquireResult> granted = (*rpc)->Acquire(Call("skipper", LockName(), "s-1"));
  ASSERT_TRUE(granted.ok()) << granted.status();
  EXPECT_EQ(granted->outcome, AcquireOutcome::kGranted);
}

TEST_F(FailoverTest, AnEndpointThatNeverAnswersIsLeftForTheNextOne) {
  HungEndpoint hung;
  Client& client = NewClient(
      absl::StrCat(hung.address(), ",", leader_->address()), "past-hung");
  const MonotonicTime started = MonotonicNow();
  absl::StatusOr<Lease> lease =
      client.Acquire(LockName(), absl::Seconds(10), absl::Seconds(5));
  ASSERT_TRUE(lease.ok()) << lease.status();
  // The hung endpoint cost less than a call timeout or two.
  EXPECT_LT(MonotonicNow() - started, absl::Seconds(3));
  EXPECT_EQ(SessionAtLeader("past-hung"), SessionState::kOpen);
}

// Opening the session is part of the Acquire's wait: two hung nodes cost
// more than one call timeout of open timeouts, and the Acquire still gets
// its lease from the third endpoint within its wait.
TEST_F(FailoverTest, HungEndpointsAreLeftWithinTheAcquiresWait) {
  HungEndpoint first;
  HungEndpoint second;
  Client& client = NewClient(absl::StrCat(first.address(), ",",
                                          second.address(), ",",
                                          leader_->address()),
                             "past-two-hung");
  const MonotonicTime started = MonotonicNow();
  absl::StatusOr<Lease> lease =
      client.Acquire(LockName(), absl::Seconds(10), absl::Seconds(5));
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_LT(MonotonicNow() - started, absl::Seconds(4));
  EXPECT_EQ(SessionAtLeader("past-two-hung"), SessionState::kOpen);
}

TEST_F(FailoverTest, APausedNodeIsLeftOnceItsKeepaliveGoesUnanswered) {
  // The other node is a separate service here (no shared state), so it
  // refuses to resume the session: that refusal shows the client went.
  LocalServerOptions other_options;
  absl::StatusOr<std::unique_ptr<LocalServer>> other =
      LocalServer::Start(other_options);
  ASSERT_TRUE(other.ok()) << other.status();
  EventLog events;
  Client& client =
      NewClient(absl::StrCat(leader_->address(), ",", (*other)->address()),
                "leaves-paused", &events);
  absl::StatusOr<Lease> lease =
      client.Acquire(LockName(), absl::Seconds(10), absl::Seconds(5));
  ASSERT_TRUE(lease.ok()) << lease.status();
  ASSERT_EQ(kill(leader_->pid(), SIGSTOP), 0);
  const bool moved = Eventually(
      [&] { return events.Count(ClientEvent::Kind::kSessionLost) >= 1; },
      absl::Seconds(8));
  ASSERT_EQ(kill(leader_->pid(), SIGCONT), 0);
  EXPECT_TRUE(moved) << "the client stayed with the paused node";
  EXPECT_GE(events.Count(ClientEvent::Kind::kSessionInterrupted), 1);
}

TEST_F(FailoverTest, TheClientOpensItsSessionOnTheLeaderAFollowerNames) {
  Client& client = NewClient(follower_->address(), "session-redirected");
  absl::StatusOr<Lease> lease =
      client.Acquire(LockName(), absl::Seconds(10), absl::Seconds(5));
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_GE(follower_->Calls("Session"), 1);
  EXPECT_EQ(SessionAtLeader("session-redirected"), SessionState::kOpen);
  std::vector<HolderInfo> holders = HoldersAtLeader(LockName());
  ASSERT_EQ(holders.size(), 1u);
  EXPECT_EQ(holders[0].token, lease->token());
}

TEST_F(FailoverTest, ALeaseRidesOverAFailoverWithItsToken) {
  EventLog events;
  Client& client =
      NewClient(absl::StrCat(leader_->address(), ",", follower_->address()),
                "rides-over", &events);
  absl::StatusOr<Lease> lease =
      client.Acquire(LockName(), absl::Seconds(10), absl::Seconds(5));
  ASSERT_TRUE(lease.ok()) << lease.status();
  FailOver();
  EXPECT_TRUE(Eventually(
      [&] { return events.Count(ClientEvent::Kind::kSessionResumed) >= 1; },
      absl::Seconds(10)))
      << "the session was not resumed on the new leader";
  EXPECT_GE(follower_->Calls("Session"), 1) << "not redirected";
  EXPECT_FALSE(lease->Ended().stop_requested());
  EXPECT_TRUE(lease->IsHeld());
  EXPECT_EQ(events.Count(ClientEvent::Kind::kSessionLost), 0);
  EXPECT_EQ(SessionAtLeader("rides-over"), SessionState::kOpen);
  std::vector<HolderInfo> holders = HoldersAtLeader(LockName());
  ASSERT_EQ(holders.size(), 1u);
  EXPECT_EQ(holders[0].client_id, "rides-over");
  EXPECT_EQ(holders[0].token, lease->token()) << "same grant, same token";
  // Renewals reach the new leader: the lease outlives its first ttl there.
  EXPECT_TRUE(lease->Renew().ok());
}

TEST_F(FailoverTest, AWaitingAcquireIsReissuedOnTheNewLeaderAndGrantedOnce) {
  const std::string endpoints =
      absl::StrCat(leader_->address(), ",", follower_->address());
  Client& holder = NewClient(endpoints, "holder");
  Client& waiter = NewClient(endpoints, "waiter");
  absl::StatusOr<Lease> held =
      holder.Acquire(LockName(), absl::Seconds(10), absl::Seconds(5));
  ASSERT_TRUE(held.ok()) << held.status();
  absl::StatusOr<Lease> waited = absl::UnknownError("not done");
  std::thread wait([&] {
    waited = waiter.Acquire(LockName(), absl::Seconds(10), absl::Seconds(20));
  });
  ASSERT_TRUE(Eventually([&] {
    RpcClient rpc(leader_->NewChannel());
    absl::StatusOr<LockInfo> info = rpc.Inspect(LockName());
    return info.ok() && info->queue.size() == 1;
  }));
  FailOver();
  // The waiter queues again at the new leader; then the holder lets go.
  ASSERT_TRUE(Eventually([&] {
    RpcClient rpc(leader_->NewChannel());
    absl::StatusOr<LockInfo> info = rpc.Inspect(LockName());
    return info.ok() && info->queue.size() == 1;
  }, absl::Seconds(10))) << "the waiting Acquire was not re-issued";
  ASSERT_TRUE(held->Release().ok());
  wait.join();
  ASSERT_TRUE(waited.ok()) << waited.status();
  EXPECT_EQ(waited->token(), held->token() + 1) << "granted exactly once";
  std::vector<HolderInfo> holders = HoldersAtLeader(LockName());
  ASSERT_EQ(holders.size(), 1u);
  EXPECT_EQ(holders[0].client_id, "waiter");
}

}  // namespace
}  // namespace leasekeeper::client::testing
