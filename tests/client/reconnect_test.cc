// The client rides over a dropped session stream and over a restart of
// leasekeeperd: a lease is lost only when the server says so or when its
// own deadline passes on the client's clock.
//
// Each test runs its own leasekeeperd (with a data directory, so that a
// restart keeps its state) behind a TcpProxy, which the clients and
// leasekeeper-ctl connect to: cutting the proxy is a dropped connection, and
// a restarted daemon (on a new port) is reached at the same address once
// the proxy points at it. Outages are a second or two against ttls and
// graces of several seconds, so the bounds hold on a loaded machine.
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/client_interceptor.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/numbers.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/synchronization/mutex.h"
#include "client/channel.h"
#include "client/client.h"
#include "client/errors.h"
#include "client/lease_timer.h"
#include "client/rpc_client.h"
#include "client/testing/local_server.h"
#include "gtest/gtest.h"
#include "leasekeeper/v1/lock_service.pb.h"
#include "tests/client/live_server.h"
#include "tests/client/subprocess.h"
#include "tests/client/tcp_proxy.h"

namespace leasekeeper::client::testing {
namespace {

// The server's session grace: longer than every outage below, except in the
// test that outlasts it on purpose.
constexpr absl::Duration kRideGrace = absl::Seconds(4);
// Longer than every outage below.
constexpr absl::Duration kTtl = absl::Seconds(4);
constexpr absl::Duration kOutage = absl::Milliseconds(1500);

// Records the request id of every unary Renew call sent over the channels
// it makes, in order.
class RenewRecorder {
 public:
  // REQUIRES: the recorder outlives the channel.
  std::shared_ptr<grpc::Channel> NewChannel(const std::string& address) {
    return InterceptedChannel(address, std::make_unique<Factory>(*this));
  }

  std::vector<std::string> request_ids() const {
    absl::MutexLock lock(&mu_);
    return request_ids_;
  }

 private:
  class Interceptor : public grpc::experimental::Interceptor {
   public:
    explicit Interceptor(RenewRecorder& recorder) : recorder_(recorder) {}
    void Intercept(grpc::experimental::InterceptorBatchMethods* methods)
        override {
      if (methods->QueryInterceptionHookPoint(
              grpc::experimental::InterceptionHookPoints::PRE_SEND_MESSAGE)) {
        const auto* request = static_cast<const leasekeeper::v1::RenewRequest*>(
            methods->GetSendMessage());
        if (request != nullptr) {
          absl::MutexLock lock(&recorder_.mu_);
          recorder_.request_ids_.push_back(request->request_id());
        }
      }
      methods->Proceed();
    }

   private:
    RenewRecorder& recorder_;
  };
  class Factory : public grpc::experimental::ClientInterceptorFactoryInterface {
   public:
    explicit Factory(RenewRecorder& recorder) : recorder_(recorder) {}
    grpc::experimental::Interceptor* CreateClientInterceptor(
        grpc::experimental::ClientRpcInfo* info) override {
      if (!absl::EndsWith(info->method(), "/Renew")) return nullptr;
      return new Interceptor(recorder_);
    }

   private:
    RenewRecorder& recorder_;
  };

  mutable absl::Mutex mu_;
  std::vector<std::string> request_ids_ ABSL_GUARDED_BY(mu_);
};

// The way the daemon stops before a restart.
enum class Stop { kTerm, kKill };

class ReconnectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TEST_TMPDIR");
    std::string pattern =
        absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/leasekeeper_ride_XXXXXX");
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    data_dir_ = pattern;
    Configure(server_options_);
    server_options_.extra_flags.push_back(
        absl::StrCat("--data-dir=", data_dir_));
    StartServer();
    ASSERT_NE(server_, nullptr);
    absl::StatusOr<std::unique_ptr<TcpProxy>> proxy =
        TcpProxy::Start(server_->port());
    ASSERT_TRUE(proxy.ok()) << proxy.status();
    proxy_ = *std::move(proxy);
  }

  void TearDown() override {
    clients_.clear();
    proxy_.reset();
    if (server_ != nullptr) (void)server_->Stop();
    server_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(data_dir_, ignored);
  }

  // The daemon's options (the data dir is added): session grace kRideGrace.
  virtual void Configure(LocalServerOptions& options) {
    options.session_grace = kRideGrace;
  }

  // A daemon on data_dir_ (a new port each time).
  void StartServer() {
    absl::StatusOr<std::unique_ptr<LocalServer>> started =
        LocalServer::Start(server_options_);
    ASSERT_TRUE(started.ok()) << started.status();
    server_ = *std::move(started);
    if (proxy_ != nullptr) proxy_->SetTarget(server_->port());
  }

  // Stops the daemon, waits `down` and starts it again on the same data,
  // reached through the same proxy address.
  void RestartServer(Stop how, absl::Duration down) {
    StopServer(how);
    absl::SleepFor(down);
    StartServer();
    ASSERT_TRUE(proxy_->Restore().ok());
  }
  // Cuts the proxy (its clients see the server go) and stops the daemon.
  void StopServer(Stop how) {
    proxy_->Cut();
    if (how == Stop::kTerm) {
      EXPECT_TRUE(server_->Stop().ok()) << "not a clean drain";
    } else {
      server_->Kill();
    }
  }

  // A client through the proxy (over `channel` if given).
  Client& NewClient(const std::string& client_id, EventLog* events = nullptr,
                    std::shared_ptr<grpc::Channel> channel = nullptr) {
    ClientOptions options;
    options.client_id = client_id;
    options.call_timeout = absl::Milliseconds(500);
    if (events != nullptr) options.on_event = events->Sink();
    if (channel == nullptr) channel = MakeChannel(proxy_->address());
    absl::StatusOr<std::unique_ptr<Client>> client =
        Client::Create(std::move(channel), std::move(options));
    EXPECT_TRUE(client.ok()) << client.status();
    clients_.push_back(*std::move(client));
    return *clients_.back();
  }

  // The server's view, asked directly (not through the proxy).
  std::vector<HolderInfo> Holders(const std::string& lock) {
    return HoldersAt(RpcClient(server_->NewChannel()), lock);
  }
  std::optional<SessionState> SessionOf(const std::string& client_id) {
    return SessionAt(RpcClient(server_->NewChannel()), client_id);
  }

  // True once `lease` was renewed after this call: its client-side deadline
  // (now + TimeLeft) moved later than it was.
  static bool RenewedFromNowOn(const Lease& lease) {
    const MonotonicTime deadline = MonotonicNow() + lease.TimeLeft();
    return Eventually(
        [&] {
          return MonotonicNow() + lease.TimeLeft() >
                 deadline + absl::Milliseconds(100);
        },
        lease.ttl());
  }

  // Checks that `lease` is held by `client_id` at the server, is being
  // renewed, and has not ended.
  void ExpectRiddenOver(const Lease& lease, const std::string& client_id) {
    EXPECT_FALSE(lease.Ended().stop_requested())
        << "ended: " << LeaseEndReasonName(*lease.EndReason());
    EXPECT_TRUE(RenewedFromNowOn(lease)) << "no renewal after the outage";
    EXPECT_TRUE(lease.IsHeld());
    std::vector<HolderInfo> holders = Holders(lease.lock());
    ASSERT_EQ(holders.size(), 1u);
    EXPECT_EQ(holders[0].client_id, client_id);
    EXPECT_EQ(holders[0].token, lease.token()) << "same grant, same token";
    EXPECT_EQ(SessionOf(client_id), SessionState::kOpen);
  }

  static std::string LockName() {
    return ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }

  std::string data_dir_;
  LocalServerOptions server_options_;
  std::unique_ptr<LocalServer> server_;
  std::unique_ptr<TcpProxy> proxy_;
  std::vector<std::unique_ptr<Client>> clients_;
};

TEST_F(ReconnectTest, DroppedStreamIsResumedAndTheLeaseGoesOnBeingRenewed) {
  EventLog events;
  Client& client = NewClient("dropped", &events);
  absl::StatusOr<Lease> lease = client.Acquire(LockName(), kTtl, kTtl);
  ASSERT_TRUE(lease.ok()) << lease.status();
  ASSERT_TRUE(Eventually([&] {
    return events.Count(ClientEvent::Kind::kSessionOpened) == 1;
  }));

  proxy_->Cut();
  ASSERT_TRUE(Eventually([&] {
    return events.Count(ClientEvent::Kind::kSessionInterrupted) >= 1;
  }));
  absl::SleepFor(kOutage);
  EXPECT_TRUE(lease->IsHeld()) << "lost during an outage shorter than its ttl";
  ASSERT_TRUE(proxy_->Restore().ok());

  EXPECT_TRUE(Eventually([&] {
    return events.Count(ClientEvent::Kind::kSessionResumed) >= 1;
  }));
  ExpectRiddenOver(*lease, "dropped");
  EXPECT_EQ(events.Count(ClientEvent::Kind::kSessionLost), 0);
  EXPECT_EQ(events.Count(ClientEvent::Kind::kLeaseLost), 0);
}

// A connection attempt has as long as gRPC's minimum connect timeout to
// finish its handshake: a link that is slow (a far region, a loaded host)
// but up must connect on the first attempt, where a call that does not
// wait for ready (leasekeeper-ctl's) would otherwise fail UNAVAILABLE.
TEST_F(ReconnectTest, ALinkSlowerThanTheReconnectBackoffConnectsAtOnce) {
  proxy_->SetLatency(absl::Milliseconds(300));
  RpcClient rpc(MakeChannel(proxy_->address()));
  absl::StatusOr<ClientStatus> status = rpc.Status("slow-link");
  EXPECT_TRUE(status.ok()) << status.status();
}

TEST_F(ReconnectTest, OutageLongerThanTheTtlExpiresTheLeaseOnTheClientsClock) {
  Client& client = NewClient("outlasted");
  const absl::Duration ttl = absl::Seconds(1);
  absl::StatusOr<Lease> lease = client.Acquire(LockName(), ttl, ttl);
  ASSERT_TRUE(lease.ok()) << lease.status();
  const MonotonicTime cut_at = MonotonicNow();
  proxy_->Cut();
  EXPECT_EQ(lease->WaitForEnd(absl::Seconds(5)), LeaseEndReason::kExpired);
  EXPECT_LE(MonotonicNow() - cut_at, ttl + absl::Milliseconds(200))
      << "the client's deadline passes at the latest a ttl after the cut";
  ASSERT_TRUE(proxy_->Restore().ok());
}

TEST_F(ReconnectTest, RenewDuringAnOutageIsRetriedUntilTheServerAnswers) {
  RenewRecorder renewals;
  Client& client = NewClient("renewer", nullptr,
                             renewals.NewChannel(proxy_->address()));
  absl::StatusOr<Lease> lease = client.Acquire(LockName(), kTtl, kTtl);
  ASSERT_TRUE(lease.ok()) << lease.status();
  client.PauseRenewalsForTesting(true);  // only Renew() renews

  proxy_->Cut();
  absl::Notification answered;
  absl::Status renewed;
  std::thread renewer([&] {
    renewed = lease->Renew();
    answered.Notify();
  });
  EXPECT_FALSE(answered.WaitForNotificationWithTimeout(kOutage))
      << "Renew gave up during the outage: " << renewed;
  ASSERT_TRUE(proxy_->Restore().ok());
  renewer.join();
  EXPECT_TRUE(renewed.ok()) << renewed;
  EXPECT_TRUE(lease->IsHeld());
  const std::vector<std::string> ids = renewals.request_ids();
  ASSERT_GE(ids.size(), 2u) << "Renew was not retried";
  for (const std::string& id : ids) {
    EXPECT_EQ(id, ids.front()) << "every retry repeats the request id";
  }
}

TEST_F(ReconnectTest, BackgroundRenewalsDuringAnOutageRetryWithOneRequestId) {
  RenewRecorder renewals;
  Client& client = NewClient("background-renewer", nullptr,
                             renewals.NewChannel(proxy_->address()));
  absl::StatusOr<Lease> lease = client.Acquire(LockName(), kTtl, kTtl);
  ASSERT_TRUE(lease.ok()) << lease.status();

  proxy_->Cut();
  // Without a stream the lease is renewed by Renew calls, which fail.
  EXPECT_TRUE(Eventually([&] { return renewals.request_ids().size() >= 3; }))
      << "no renewal attempts during the outage";
  ASSERT_TRUE(proxy_->Restore().ok());
  EXPECT_TRUE(RenewedFromNowOn(*lease));
  const std::vector<std::string> ids = renewals.request_ids();
  ASSERT_GE(ids.size(), 3u);
  // The attempts before the first success share one id.
  EXPECT_EQ(ids[1], ids[0]);
  EXPECT_EQ(ids[2], ids[0]);
  EXPECT_TRUE(lease->IsHeld());
}

TEST_F(ReconnectTest, ReleaseThatFailedDuringAnOutageIsDoneOnceTheServerIsBack) {
  Client& holder = NewClient("releaser");
  const absl::Duration long_ttl = absl::Seconds(30);
  absl::StatusOr<Lease> lease = holder.Acquire(LockName(), long_ttl, kTtl);
  ASSERT_TRUE(lease.ok()) << lease.status();

  proxy_->Cut();
  absl::Status released = lease->Release();
  EXPECT_TRUE(IsTransient(released)) << released;
  EXPECT_EQ(lease->EndReason(), LeaseEndReason::kReleased);
  absl::SleepFor(kOutage);
  ASSERT_EQ(Holders(LockName()).size(), 1u) << "the server never heard it";
  ASSERT_TRUE(proxy_->Restore().ok());

  // Neither the ttl (30 s) nor the session's grace frees it this soon: the
  // session is resumed and keeps being renewed.
  EXPECT_TRUE(Eventually([&] { return Holders(LockName()).empty(); },
                         absl::Seconds(8)))
      << "the release was not retried once the server was back";
  EXPECT_TRUE(Eventually(
      [&] { return SessionOf("releaser") == SessionState::kOpen; }))
      << "the session was not resumed: its grace could have freed the lock";
}

TEST_F(ReconnectTest, WaitingAcquireDuringADropIsReissuedAndGrantedOnce) {
  Client& holder_client = NewClient("drop-holder");
  Client& waiter_client = NewClient("drop-waiter");
  absl::StatusOr<Lease> held = holder_client.Acquire(LockName(), kTtl, kTtl);
  ASSERT_TRUE(held.ok()) << held.status();
  std::optional<absl::StatusOr<Lease>> granted;
  std::thread waiter([&] {
    granted = waiter_client.Acquire(LockName(), kTtl, absl::Seconds(20));
  });
  ASSERT_TRUE(Eventually([&] {
    RpcClient rpc(server_->NewChannel());
    absl::StatusOr<LockInfo> info = rpc.Inspect(LockName());
    return info.ok() && info->queue.size() == 1;
  }));

  proxy_->Cut();
  absl::SleepFor(kOutage);
  ASSERT_TRUE(proxy_->Restore().ok());
  ASSERT_TRUE(Eventually([&] { return SessionOf("drop-holder") ==
                                      SessionState::kOpen; }));
  ASSERT_TRUE(Eventually([&] {
    RpcClient rpc(server_->NewChannel());
    absl::StatusOr<LockInfo> info = rpc.Inspect(LockName());
    return info.ok() && info->queue.size() == 1 &&
           info->queue[0].client_id == "drop-waiter";
  })) << "the waiting Acquire was not re-issued after the outage";
  EXPECT_TRUE(held->IsHeld());

  ASSERT_TRUE(held->Release().ok());
  waiter.join();
  ASSERT_TRUE(granted.has_value() && granted->ok())
      << (granted.has_value() ? granted->status() : absl::UnknownError("none"));
  EXPECT_EQ((*granted)->token(), held->token() + 1) << "granted once";
  EXPECT_TRUE((*granted)->IsHeld());
}

// ---------------------------------------------------------------------------
// Restarts of leasekeeperd on the same data dir. The restarted daemon keeps
// sessions, leases, tokens and the retry cache; each recovered session is in
// grace for max(session grace, --restart-grace) from the restart (downtime
// does not count).

// Longer than a stop (SIGTERM drains for up to --shutdown-grace, 2 s), the
// time down and a restart on a loaded machine.
constexpr absl::Duration kRestartTtl = absl::Seconds(10);
constexpr absl::Duration kDown = absl::Milliseconds(500);

class RestartTest : public ReconnectTest,
                    public ::testing::WithParamInterface<Stop> {
};

TEST_P(RestartTest, LeaseRidesOverARestartWithItsToken) {
  EventLog events;
  Client& client = NewClient("restarted", &events);
  absl::StatusOr<Lease> lease = client.Acquire(LockName(), kRestartTtl, kTtl);
  ASSERT_TRUE(lease.ok()) << lease.status();
  RestartServer(GetParam(), kDown);
  EXPECT_TRUE(Eventually([&] {
    return events.Count(ClientEvent::Kind::kSessionResumed) >= 1;
  })) << "the session was not resumed after the restart";
  ExpectRiddenOver(*lease, "restarted");
  EXPECT_EQ(events.Count(ClientEvent::Kind::kSessionLost), 0);
}

INSTANTIATE_TEST_SUITE_P(
    SigtermAndSigkill, RestartTest,
    ::testing::Values(Stop::kTerm, Stop::kKill),
    [](const ::testing::TestParamInfo<Stop>& info) {
      return info.param == Stop::kTerm ? "Sigterm" : "Sigkill";
    });

TEST_F(ReconnectTest, ReleaseThatFailedDuringARestartIsDoneOnceTheServerIsBack) {
  Client& holder = NewClient("restart-releaser");
  const absl::Duration long_ttl = absl::Seconds(30);
  absl::StatusOr<Lease> lease = holder.Acquire(LockName(), long_ttl, kTtl);
  ASSERT_TRUE(lease.ok()) << lease.status();

  StopServer(Stop::kKill);
  absl::Status released = lease->Release();
  EXPECT_TRUE(IsTransient(released)) << released;
  StartServer();
  ASSERT_EQ(Holders(LockName()).size(), 1u) << "the restart kept the lease";
  ASSERT_TRUE(proxy_->Restore().ok());
  // Neither the ttl (30 s) nor the recovered session's grace (at least
  // kRideGrace from the restart, and the session resumes) frees it so soon.
  EXPECT_TRUE(Eventually([&] { return Holders(LockName()).empty(); },
                         absl::Seconds(8)))
      << "the release was not retried once the server was back";
  EXPECT_EQ(SessionOf("restart-releaser"), SessionState::kOpen);
}

// A session grace (and restart grace) of 1 s, so that a client kept away
// from the restarted server for longer finds its session ended.
class ShortGraceReconnectTest : public ReconnectTest {
 protected:
  static constexpr absl::Duration kShortGrace = absl::Seconds(1);
  void Configure(LocalServerOptions& options) override {
    options.session_grace = kShortGrace;
    options.extra_flags.push_back("--restart-grace=1s");
  }
};

TEST_F(ShortGraceReconnectTest, ServerBackAfterTheGraceEndsTheLeaseSessionLost) {
  EventLog events;
  Client& client = NewClient("late", &events);
  const absl::Duration long_ttl = absl::Seconds(30);
  absl::StatusOr<Lease> lease = client.Acquire(LockName(), long_ttl, kTtl);
  ASSERT_TRUE(lease.ok()) << lease.status();
  StopServer(Stop::kKill);
  StartServer();
  // The client reaches the restarted server only after the grace.
  absl::SleepFor(3 * kShortGrace);
  EXPECT_TRUE(lease->IsHeld()) << "within its ttl, only the server ends it";
  ASSERT_TRUE(proxy_->Restore().ok());
  EXPECT_EQ(lease->WaitForEnd(absl::Seconds(5)), LeaseEndReason::kSessionLost);
  EXPECT_TRUE(Holders(LockName()).empty());
  EXPECT_GE(events.Count(ClientEvent::Kind::kSessionLost), 1);
}

// A job under `leasekeeper-ctl run` across a SIGKILL and restart of the
// daemon: it keeps running, its token stays valid for fenced writes, and
// the lock stays taken.
TEST_F(ReconnectTest, RunKeepsItsJobAndTokenAcrossADaemonKillAndRestart) {
  const std::string ctl = BinaryDirectory() + "/leasekeeper-ctl";
  const std::string go = data_dir_ + "/go";
  const std::string done = data_dir_ + "/done";
  // Waits for `go`, writes with its token, and holds the lock until `done`.
  const std::string job = absl::StrCat(
      "echo \"started $LEASEKEEPER_FENCING_TOKEN\"; ",
      "while [ ! -e ", go, " ]; do sleep 0.05; done; ",
      ctl, " write \"$LEASEKEEPER_LOCK\" key after-restart ",
      "--token \"$LEASEKEEPER_FENCING_TOKEN\" >/dev/null ",
      "&& echo \"wrote $LEASEKEEPER_FENCING_TOKEN\"; ",
      "while [ ! -e ", done, " ]; do sleep 0.05; done");
  const std::vector<std::pair<std::string, std::string>> environment = {
      {"LEASEKEEPER_SERVER", proxy_->address()}};
  absl::StatusOr<Subprocess> run = Subprocess::Start(
      {ctl, "run", LockName(), "--ttl", "10s", "--timeout", "1s",
       "--client", "nightly", "--", "/bin/sh", "-c", job},
      environment);
  ASSERT_TRUE(run.ok()) << run.status();
  std::optional<std::string> started =
      run->WaitForLine("started", absl::Seconds(10));
  ASSERT_TRUE(started.has_value()) << "the job did not start";
  const std::string token = started->substr(started->find(' ') + 1);

  RestartServer(Stop::kKill, kDown);
  std::vector<HolderInfo> holders = Holders(LockName());
  ASSERT_EQ(holders.size(), 1u);
  EXPECT_EQ(absl::StrCat(holders[0].token), token);

  // After the restart: the job's fenced write is accepted...
  { std::ofstream touch(go); }
  std::optional<std::string> wrote =
      run->WaitForLine("wrote", absl::Seconds(10));
  ASSERT_TRUE(wrote.has_value()) << "the fenced write after the restart failed";
  EXPECT_EQ(*wrote, absl::StrCat("wrote ", token));
  // ...and a second run on the lock waits for it.
  absl::StatusOr<Subprocess> second = Subprocess::Start(
      {ctl, "run", LockName(), "--ttl", "10s", "--client", "second", "--",
       "/bin/sh", "-c", "echo \"second $LEASEKEEPER_FENCING_TOKEN\""},
      environment);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(Eventually([&] {
    RpcClient rpc(server_->NewChannel());
    absl::StatusOr<LockInfo> info = rpc.Inspect(LockName());
    return info.ok() && info->queue.size() == 1 &&
           info->queue[0].client_id == "second";
  })) << "the second run does not wait in the queue";
  EXPECT_FALSE(second->WaitForLine("second", absl::Seconds(1)).has_value())
      << "the second run got the lock while the job held it";
  holders = Holders(LockName());
  ASSERT_EQ(holders.size(), 1u);
  EXPECT_EQ(holders[0].client_id, "nightly");

  { std::ofstream touch(done); }
  ProcessResult first_result = run->Wait(absl::Seconds(15));
  EXPECT_EQ(first_result.exit_code, 0) << first_result.err;
  ProcessResult second_result = second->Wait(absl::Seconds(15));
  EXPECT_EQ(second_result.exit_code, 0) << second_result.err;
  int64_t first_token = 0;
  ASSERT_TRUE(absl::SimpleAtoi(token, &first_token));
  EXPECT_NE(second_result.out.find(absl::StrCat("second ", first_token + 1)),
            std::string::npos)
      << second_result.out;
}

}  // namespace
}  // namespace leasekeeper::client::testing
