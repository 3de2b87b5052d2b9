// Waiting Acquires (wait_timeout_ms > 0): answered by push the moment they
// are granted, and withdrawn when they time out, are cancelled, or their
// client disconnects. In-process server, fake clock: the timer thread, not a
// request, hands a lapsed lease on.
#include <csignal>
#include <string>

#include "gtest/gtest.h"
#include "tests/server/test_support.h"

namespace leasekeeper::testing {
namespace {

using std::chrono::milliseconds;

class WaitingTest : public ServerTest {
 protected:
  size_t QueueLength(const std::string& lock) {
    return static_cast<size_t>(client_->Inspect(lock).response.queue_size());
  }
};

TEST_F(WaitingTest, WaiterIsGrantedOnReleaseWithoutPolling) {
  ASSERT_TRUE(client_->Acquire("holder", "L", 60'000).response.has_granted());
  At(1'000);
  auto waiter =
      client_->StartAcquire(AcquireRequest("waiter", "L", 5'000, 60'000));
  ASSERT_TRUE(ParkedCallsAre(1));
  EXPECT_FALSE(waiter->Done(milliseconds(50)));

  At(4'000);
  ASSERT_TRUE(client_->Release("holder", "L").ok());
  ASSERT_TRUE(waiter->Done(milliseconds(5'000)));
  Result<pb::AcquireResponse> result = waiter->Get();
  ASSERT_TRUE(result.ok()) << result.status.error_message();
  ASSERT_TRUE(result.response.has_granted());
  EXPECT_EQ(result.response.granted().token(), 2u);
  EXPECT_EQ(result.response.granted().ttl_ms(), 5'000);
  EXPECT_EQ(result.response.granted().waited_ms(), 3'000);
}

TEST_F(WaitingTest, TimerGrantsWaiterAtTheExpiryInstantWithoutAnyRequest) {
  ASSERT_TRUE(client_->Acquire("holder", "L", 10'000).ok());
  At(1'000);
  auto waiter =
      client_->StartAcquire(AcquireRequest("waiter", "L", 5'000, 60'000));
  ASSERT_TRUE(ParkedCallsAre(1));
  At(9'999);
  EXPECT_FALSE(waiter->Done(milliseconds(50)));

  At(10'000);  // only the clock moves: the timer thread does the rest
  ASSERT_TRUE(waiter->Done(milliseconds(5'000)));
  Result<pb::AcquireResponse> result = waiter->Get();
  ASSERT_TRUE(result.response.has_granted());
  EXPECT_EQ(result.response.granted().token(), 2u);
  EXPECT_EQ(result.response.granted().ttl_ms(), 5'000);
  EXPECT_EQ(result.response.granted().waited_ms(), 9'000);
}

TEST_F(WaitingTest, LateTimerStillHandsOverAtTheExpiryInstant) {
  ASSERT_TRUE(client_->Acquire("holder", "L", 10'000).ok());
  auto waiter =
      client_->StartAcquire(AcquireRequest("waiter", "L", 5'000, 60'000));
  ASSERT_TRUE(ParkedCallsAre(1));
  At(12'000);  // the server notices two seconds late
  ASSERT_TRUE(waiter->Done(milliseconds(5'000)));
  Result<pb::AcquireResponse> result = waiter->Get();
  ASSERT_TRUE(result.response.has_granted());
  // The lease is [10000, 15000), not [12000, 17000).
  EXPECT_EQ(result.response.granted().ttl_ms(), 3'000);
  EXPECT_EQ(result.response.granted().waited_ms(), 10'000);
  EXPECT_EQ(client_->Inspect("L").response.holders(0).expires_in_ms(), 3'000);
}

TEST_F(WaitingTest, WaitTimeoutWithdrawsTheRequest) {
  ASSERT_TRUE(client_->Acquire("holder", "L", 60'000).ok());
  auto waiter =
      client_->StartAcquire(AcquireRequest("waiter", "L", 5'000, 2'000));
  ASSERT_TRUE(ParkedCallsAre(1));
  At(1'999);
  EXPECT_FALSE(waiter->Done(milliseconds(50)));
  At(2'000);
  ASSERT_TRUE(waiter->Done(milliseconds(5'000)));
  Result<pb::AcquireResponse> result = waiter->Get();
  EXPECT_EQ(result.code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_EQ(result.reason, "WAIT_TIMEOUT");
  EXPECT_EQ(QueueLength("L"), 0u);
  EXPECT_TRUE(client_->Status("waiter").response.waiting_for().empty());
}

TEST_F(WaitingTest, GrantAtTheTimeoutInstantWins) {
  ASSERT_TRUE(client_->Acquire("holder", "L", 2'000).ok());
  auto waiter =
      client_->StartAcquire(AcquireRequest("waiter", "L", 5'000, 2'000));
  ASSERT_TRUE(ParkedCallsAre(1));
  At(2'000);
  ASSERT_TRUE(waiter->Done(milliseconds(5'000)));
  EXPECT_TRUE(waiter->Get().response.has_granted());
}

TEST_F(WaitingTest, CancelledWaitIsWithdrawn) {
  ASSERT_TRUE(client_->Acquire("holder", "L", 60'000).ok());
  auto waiter =
      client_->StartAcquire(AcquireRequest("waiter", "L", 5'000, 60'000));
  ASSERT_TRUE(ParkedCallsAre(1));
  ASSERT_EQ(QueueLength("L"), 1u);
  waiter->Cancel();
  ASSERT_TRUE(waiter->Done(milliseconds(5'000)));
  EXPECT_EQ(waiter->Get().code(), grpc::StatusCode::CANCELLED);
  EXPECT_TRUE(Eventually([&] { return QueueLength("L") == 0; }));
  EXPECT_TRUE(ParkedCallsAre(0));
  // Releasing now grants nobody.
  ASSERT_TRUE(client_->Release("holder", "L").ok());
  EXPECT_EQ(client_->Inspect("L").response.holders_size(), 0);
}

TEST_F(WaitingTest, ExpiredGrpcDeadlineWithdrawsTheWait) {
  ASSERT_TRUE(client_->Acquire("holder", "L", 60'000).ok());
  auto waiter = client_->StartAcquire(
      AcquireRequest("waiter", "L", 5'000, 60'000), milliseconds(200));
  ASSERT_TRUE(waiter->Done(milliseconds(5'000)));
  EXPECT_EQ(waiter->Get().code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_TRUE(Eventually([&] { return QueueLength("L") == 0; }));
  EXPECT_TRUE(ParkedCallsAre(0));
}

TEST_F(WaitingTest, DisconnectedWaiterIsWithdrawn) {
  ASSERT_TRUE(client_->Acquire("holder", "L", 60'000).ok());
  ChildProcess ghost(TestClientPath(),
                     {"wait", address_, "ghost", "L", "5000", "60000"});
  ASSERT_TRUE(ghost.running());
  ASSERT_EQ(ghost.ReadLine(milliseconds(10'000)), "started");
  ASSERT_TRUE(ParkedCallsAre(1));
  ASSERT_EQ(client_->Inspect("L").response.queue(0).client_id(), "ghost");

  ghost.Signal(SIGKILL);  // the connection drops without a goodbye
  EXPECT_TRUE(Eventually([&] { return QueueLength("L") == 0; }));
  EXPECT_TRUE(ParkedCallsAre(0));
  ASSERT_TRUE(client_->Release("holder", "L").ok());
  EXPECT_EQ(client_->Inspect("L").response.holders_size(), 0);
}

TEST_F(WaitingTest, ClientsOwnReleaseWithdrawsItsParkedWait) {
  ASSERT_TRUE(client_->Acquire("holder", "L", 60'000).ok());
  auto waiter =
      client_->StartAcquire(AcquireRequest("waiter", "L", 5'000, 60'000));
  ASSERT_TRUE(ParkedCallsAre(1));
  Result<pb::ReleaseResponse> release = client_->Release("waiter", "L");
  ASSERT_TRUE(release.ok());
  EXPECT_EQ(release.response.result(), pb::RELEASE_RESULT_WITHDRAWN);
  ASSERT_TRUE(waiter->Done(milliseconds(5'000)));
  Result<pb::AcquireResponse> result = waiter->Get();
  ASSERT_TRUE(result.ok());
  ASSERT_TRUE(result.response.has_withdrawn());
  EXPECT_EQ(result.response.withdrawn().reason(),
            pb::WITHDRAW_REASON_RELEASED_BY_CLIENT);
}

TEST_F(WaitingTest, ParkedWaiterAbortedAsDeadlockVictimIsAnsweredAborted) {
  ASSERT_TRUE(client_->Acquire("alice", "L1", 100'000).ok());
  ASSERT_TRUE(client_->Acquire("bob", "L2", 100'000).ok());
  auto bob =
      client_->StartAcquire(AcquireRequest("bob", "L1", 100'000, 60'000));
  ASSERT_TRUE(ParkedCallsAre(1));

  Result<pb::AcquireResponse> alice = client_->Acquire("alice", "L2", 100'000);
  ASSERT_TRUE(alice.response.has_granted());
  ASSERT_EQ(alice.response.aborted_clients_size(), 1);
  EXPECT_EQ(alice.response.aborted_clients(0), "bob");

  ASSERT_TRUE(bob->Done(milliseconds(5'000)));
  Result<pb::AcquireResponse> result = bob->Get();
  EXPECT_EQ(result.code(), grpc::StatusCode::ABORTED);
  EXPECT_EQ(result.reason, "DEADLOCK_VICTIM");
  ASSERT_EQ(result.detail.victims_size(), 1);
  EXPECT_EQ(result.detail.victims(0), "bob");
}

TEST_F(WaitingTest, SharedWaitersAtTheHeadAreGrantedTogether) {
  ASSERT_TRUE(client_->Acquire("writer", "cfg", 10'000).ok());
  pb::AcquireRequest r1 = AcquireRequest("r1", "cfg", 5'000, 60'000);
  r1.set_mode(pb::LOCK_MODE_SHARED);
  pb::AcquireRequest r2 = AcquireRequest("r2", "cfg", 7'000, 60'000);
  r2.set_mode(pb::LOCK_MODE_SHARED);
  auto reader1 = client_->StartAcquire(r1);
  ASSERT_TRUE(ParkedCallsAre(1));
  auto reader2 = client_->StartAcquire(r2);
  ASSERT_TRUE(ParkedCallsAre(2));
  At(10'000);
  ASSERT_TRUE(reader1->Done(milliseconds(5'000)));
  ASSERT_TRUE(reader2->Done(milliseconds(5'000)));
  EXPECT_EQ(reader1->Get().response.granted().token(), 2u);
  EXPECT_EQ(reader2->Get().response.granted().token(), 3u);
}

TEST_F(WaitingTest, FullQueueIsRefusedAndChangesNothing) {
  server::ServerConfig config = DefaultConfig();
  config.limits.max_waiters_per_lock = 2;
  Restart(config);
  ASSERT_TRUE(client_->Acquire("holder", "L", 60'000).ok());
  ASSERT_TRUE(client_->Acquire("q1", "L", 60'000).response.has_queued());
  ASSERT_TRUE(client_->Acquire("q2", "L", 60'000).response.has_queued());
  Result<pb::AcquireResponse> refused = client_->Acquire("q3", "L", 60'000);
  EXPECT_EQ(refused.code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(refused.reason, "LIMIT_EXCEEDED");
  EXPECT_EQ(refused.detail.limit(), "max-waiters-per-lock");
  EXPECT_EQ(refused.detail.limit_value(), 2);
  EXPECT_EQ(QueueLength("L"), 2u);
  EXPECT_FALSE(client_->Status("q3").response.registered());
  // Room again once a waiter leaves.
  ASSERT_TRUE(client_->Release("q1", "L").ok());
  EXPECT_TRUE(client_->Acquire("q3", "L", 60'000).response.has_queued());
}

TEST_F(WaitingTest, ShutdownAnswersParkedWaitersUnavailable) {
  ASSERT_TRUE(client_->Acquire("holder", "L", 60'000).ok());
  auto waiter =
      client_->StartAcquire(AcquireRequest("waiter", "L", 5'000, 60'000));
  ASSERT_TRUE(ParkedCallsAre(1));
  server_->Shutdown();
  ASSERT_TRUE(waiter->Done(milliseconds(5'000)));
  Result<pb::AcquireResponse> result = waiter->Get();
  EXPECT_EQ(result.code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(result.reason, "SHUTTING_DOWN");
}

}  // namespace
}  // namespace leasekeeper::testing
