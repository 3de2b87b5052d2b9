// Live tests against the real build/bin/leasekeeperd child process on
// 127.0.0.1:0 with the real clock. Marked live: they wait for real leases
// and check timing with tolerances (the machine may be loaded).
#include <sys/wait.h>

#include <csignal>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/server/test_support.h"

namespace leasekeeper::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

int64_t MillisSince(steady_clock::time_point start) {
  return std::chrono::duration_cast<milliseconds>(steady_clock::now() - start)
      .count();
}

TEST(LiveTest, LeaseLapsesAtItsInstantAndTheWaiterIsPushed) {
  Daemon daemon = StartDaemon();
  ASSERT_FALSE(daemon.address.empty());
  TestClient client(daemon.address);
  ASSERT_TRUE(client.Status("warm-up").ok());  // connect first
  // The lease starts somewhere between sending the Acquire and its answer.
  const auto sent = steady_clock::now();
  ASSERT_TRUE(client.Acquire("holder", "L", 300).ok());
  const auto answered = steady_clock::now();
  auto waiter =
      client.StartAcquire(AcquireRequest("waiter", "L", 5'000, 10'000));
  ASSERT_TRUE(waiter->Done(milliseconds(5'000)));
  const int64_t since_sent = MillisSince(sent);
  const int64_t since_answered = MillisSince(answered);
  Result<pb::AcquireResponse> result = waiter->Get();
  ASSERT_TRUE(result.response.has_granted()) << result.status.error_message();
  EXPECT_EQ(result.response.granted().token(), 2u);
  EXPECT_GE(since_sent, 299);
  EXPECT_LE(since_answered, 300 + 250);
  EXPECT_GE(result.response.granted().ttl_ms(), 4'800);
}

TEST(LiveTest, ReleaseHandsTheLockToTheWaiterAtOnce) {
  Daemon daemon = StartDaemon();
  ASSERT_FALSE(daemon.address.empty());
  TestClient client(daemon.address);
  ASSERT_TRUE(client.Acquire("holder", "L", 60'000).ok());
  auto waiter =
      client.StartAcquire(AcquireRequest("waiter", "L", 5'000, 10'000));
  ASSERT_TRUE(Eventually(
      [&] { return client.Inspect("L").response.queue_size() == 1; }));
  const auto start = steady_clock::now();
  ASSERT_TRUE(client.Release("holder", "L").ok());
  ASSERT_TRUE(waiter->Done(milliseconds(5'000)));
  EXPECT_LE(MillisSince(start), 200);
  EXPECT_TRUE(waiter->Get().response.has_granted());
}

TEST(LiveTest, CrashedSessionHoldersLockPassesOnAfterTheGrace) {
  Daemon daemon = StartDaemon({"--session-grace=300ms"});
  ASSERT_FALSE(daemon.address.empty());
  TestClient client(daemon.address);
  ChildProcess crashy(TestClientPath(), {"session-hold", daemon.address,
                                         "crashy", "L", "600000"});
  std::optional<std::string> line = crashy.ReadLine(milliseconds(10'000));
  ASSERT_TRUE(line.has_value() && line->rfind("holding ", 0) == 0)
      << line.value_or("<nothing>");
  auto waiter = client.StartAcquire(AcquireRequest("next", "L", 5'000, 20'000));
  ASSERT_TRUE(Eventually(
      [&] { return client.Inspect("L").response.queue_size() == 1; }));

  const auto start = steady_clock::now();
  crashy.Signal(SIGKILL);
  ASSERT_TRUE(waiter->Done(milliseconds(10'000)));
  const int64_t elapsed = MillisSince(start);
  EXPECT_TRUE(waiter->Get().response.has_granted());
  EXPECT_GE(elapsed, 290);    // the grace, not less
  EXPECT_LE(elapsed, 1'000);  // and not the 10-minute lease
}

TEST(LiveTest,
     SigtermWithAThousandWaitingClientsExitsCleanlyWithinFiveSeconds) {
  Daemon daemon = StartDaemon();
  ASSERT_FALSE(daemon.address.empty());
  constexpr int kWaiters = 1'000;
  constexpr int kConnections = 8;
  std::vector<std::unique_ptr<TestClient>> clients;
  for (int i = 0; i < kConnections; ++i) {
    clients.push_back(std::make_unique<TestClient>(daemon.address));
  }
  ASSERT_TRUE(clients[0]->Acquire("holder", "L", 600'000).ok());
  std::vector<std::unique_ptr<AsyncAcquire>> waiters;
  for (int i = 0; i < kWaiters; ++i) {
    waiters.push_back(clients[i % kConnections]->StartAcquire(
        AcquireRequest(absl::StrCat("waiter-", i), "L", 60'000, 600'000),
        std::chrono::seconds(60)));
  }
  ASSERT_TRUE(Eventually(
      [&] {
        // More waiters than one Inspect page holds: count across pages.
        int queued = 0;
        pb::InspectRequest request;
        request.set_lock("L");
        do {
          Result<pb::InspectResponse> page = clients[0]->Inspect(request);
          if (!page.ok()) return false;
          queued += page.response.queue_size();
          request.set_page_token(page.response.next_page_token());
        } while (!request.page_token().empty());
        return queued == kWaiters;
      },
      std::chrono::seconds(20)));

  const auto start = steady_clock::now();
  daemon.process->Signal(SIGTERM);
  std::optional<int> status = daemon.process->WaitExit(milliseconds(5'000));
  const int64_t elapsed = MillisSince(start);
  ASSERT_TRUE(status.has_value()) << "still running after 5 s";
  EXPECT_TRUE(WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 0);
  EXPECT_LT(elapsed, 5'000);
  int unavailable = 0;
  for (auto& waiter : waiters) {
    ASSERT_TRUE(waiter->Done(milliseconds(1'000)));
    const grpc::StatusCode code = waiter->Get().code();
    EXPECT_TRUE(code == grpc::StatusCode::UNAVAILABLE ||
                code == grpc::StatusCode::CANCELLED)
        << code;
    if (code == grpc::StatusCode::UNAVAILABLE) ++unavailable;
  }
  EXPECT_EQ(unavailable, kWaiters);
}

TEST(LiveTest, BadFlagExitsWithUsage) {
  ChildProcess bad(LEASEKEEPERD_PATH, {"--no-such-flag=1"});
  std::optional<int> status = bad.WaitExit(milliseconds(5'000));
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 2);
}

}  // namespace
}  // namespace leasekeeper::testing
