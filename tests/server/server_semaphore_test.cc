// Counting semaphores through the API: capacity validated at the edge,
// mismatches with their reasons, Inspect and ListLocks show the capacity, a
// crashed holder's permit passes on when its session grace ends, and the
// capacity survives a restart (log replay and snapshot). In-process server
// with a fake clock (grace 2 s), except the restart tests (child daemons).
#include <csignal>
#include <memory>
#include <optional>
#include <string>

#include "gtest/gtest.h"
#include "tests/server/test_support.h"

namespace leasekeeper::testing {
namespace {

using std::chrono::milliseconds;

pb::AcquireRequest Permit(const std::string& client, const std::string& lock,
                          uint32_t capacity, int64_t ttl_ms,
                          int64_t wait_ms = 0) {
  pb::AcquireRequest request = AcquireRequest(client, lock, ttl_ms, wait_ms);
  request.set_mode(pb::LOCK_MODE_SEMAPHORE);
  request.set_capacity(capacity);
  return request;
}

class SemaphoreTest : public ServerTest {};

TEST_F(SemaphoreTest, UpToCapacityHoldersThenTheQueue) {
  for (const char* client : {"a", "b", "c"}) {
    Result<pb::AcquireResponse> r = client_->Acquire(Permit(client, "S", 3, 10'000));
    ASSERT_TRUE(r.response.has_granted()) << client;
  }
  Result<pb::AcquireResponse> fourth = client_->Acquire(Permit("d", "S", 3, 10'000));
  ASSERT_TRUE(fourth.response.has_queued());
  EXPECT_EQ(fourth.response.queued().position(), 1);
  Result<pb::InspectResponse> view = client_->Inspect("S");
  EXPECT_EQ(view.response.capacity(), 3u);
  ASSERT_EQ(view.response.holders_size(), 3);
  EXPECT_EQ(view.response.holders(2).mode(), pb::LOCK_MODE_SEMAPHORE);
  EXPECT_EQ(view.response.holders(2).token(), 3u);
  pb::ListLocksRequest list;
  Result<pb::ListLocksResponse> locks = client_->ListLocks(list);
  ASSERT_EQ(locks.response.locks_size(), 1);
  EXPECT_EQ(locks.response.locks(0).capacity(), 3u);
  EXPECT_EQ(locks.response.locks(0).queue_length(), 1);
  // A released permit goes to the head at once.
  ASSERT_TRUE(client_->Release("b", "S").ok());
  EXPECT_EQ(client_->Inspect("S").response.holders(2).client_id(), "d");
}

TEST_F(SemaphoreTest, CapacityOutsideItsRangeOrOnAPlainModeIsInvalid) {
  for (uint32_t capacity : {0u, 65'536u}) {
    Result<pb::AcquireResponse> r = client_->Acquire(Permit("a", "S", capacity, 1'000));
    EXPECT_EQ(r.code(), grpc::StatusCode::INVALID_ARGUMENT) << capacity;
    EXPECT_EQ(r.reason, "INVALID_ARGUMENTS");
    EXPECT_EQ(r.detail.field(), "capacity");
  }
  pb::AcquireRequest plain = AcquireRequest("a", "S", 1'000);
  plain.set_capacity(2);
  EXPECT_EQ(client_->Acquire(plain).detail.field(), "capacity");
  // Reported before a bad ttl.
  EXPECT_EQ(client_->Acquire(Permit("a", "S", 0, 0)).detail.field(),
            "capacity");
  EXPECT_FALSE(client_->Status("a").response.registered());
}

TEST_F(SemaphoreTest, MismatchesAreRefusedNamingTheLocksKindAndChangeNothing) {
  ASSERT_TRUE(client_->Acquire(Permit("a", "S", 2, 10'000)).response.has_granted());
  Result<pb::AcquireResponse> other = client_->Acquire(Permit("b", "S", 3, 10'000));
  EXPECT_EQ(other.code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(other.status.error_message(),
            "capacity mismatch: S is a semaphore of 2, asked 3");
  EXPECT_EQ(other.reason, "CAPACITY_MISMATCH");
  EXPECT_EQ(other.detail.reason(), pb::CAPACITY_MISMATCH);
  Result<pb::AcquireResponse> plain = client_->Acquire("b", "S", 10'000);
  EXPECT_EQ(plain.status.error_message(),
            "mode mismatch: S is a semaphore of 2");
  EXPECT_EQ(plain.reason, "MODE_MISMATCH");
  ASSERT_TRUE(client_->Acquire("a", "X", 10'000).response.has_granted());
  Result<pb::AcquireResponse> reverse = client_->Acquire(Permit("b", "X", 1, 10'000));
  EXPECT_EQ(reverse.reason, "MODE_MISMATCH");
  EXPECT_EQ(reverse.status.error_message(),
            "mode mismatch: X is held exclusive");
  pb::AcquireRequest shared = AcquireRequest("a", "R", 10'000, 0);
  shared.set_mode(pb::LOCK_MODE_SHARED);
  ASSERT_TRUE(client_->Acquire(shared).response.has_granted());
  EXPECT_EQ(
      client_->Acquire(Permit("b", "R", 1, 10'000)).status.error_message(),
      "mode mismatch: R is held shared");
  EXPECT_FALSE(client_->Status("b").response.registered());
  EXPECT_EQ(client_->Inspect("S").response.holders_size(), 1);
}

TEST_F(SemaphoreTest, ARetryWithAnotherCapacityIsARequestIdReuse) {
  pb::AcquireRequest first = Permit("a", "S", 2, 10'000);
  first.set_request_id("r-1");
  ASSERT_TRUE(client_->Acquire(first).response.has_granted());
  pb::AcquireRequest again = first;
  again.set_capacity(3);
  EXPECT_EQ(client_->Acquire(again).reason, "REQUEST_ID_REUSED");
  EXPECT_EQ(client_->Acquire(first).response.granted().token(), 1u);
}

TEST_F(SemaphoreTest, CrashedHoldersPermitPassesOnWhenTheGraceEnds) {
  // A client process holds one of two permits in a session and is killed;
  // the other permit is held by "steady". "next" waits for a permit: it is
  // granted when the crashed session's grace ends, not at the 10-minute
  // lease's end.
  ChildProcess crashy(TestClientPath(), {"session-hold", address_, "crashy",
                                         "S", "600000", "2"});
  std::optional<std::string> line = crashy.ReadLine(milliseconds(10'000));
  ASSERT_TRUE(line.has_value() && line->rfind("holding ", 0) == 0)
      << line.value_or("<nothing>");
  ASSERT_TRUE(client_->Acquire(Permit("steady", "S", 2, 600'000))
                  .response.has_granted());
  auto waiter = client_->StartAcquire(Permit("next", "S", 2, 5'000, 600'000));
  ASSERT_TRUE(ParkedCallsAre(1));

  crashy.Signal(SIGKILL);
  ASSERT_TRUE(Eventually([&] {
    return client_->Status("crashy").response.session() ==
           pb::SESSION_STATE_GRACE;
  }));
  At(1'999);
  EXPECT_FALSE(waiter->Done(milliseconds(50)));
  At(2'000);
  ASSERT_TRUE(waiter->Done(milliseconds(5'000)));
  Result<pb::AcquireResponse> result = waiter->Get();
  ASSERT_TRUE(result.response.has_granted());
  EXPECT_EQ(result.response.granted().token(), 3u);
  EXPECT_EQ(result.response.granted().waited_ms(), 2'000);
  Result<pb::InspectResponse> view = client_->Inspect("S");
  ASSERT_EQ(view.response.holders_size(), 2);
  EXPECT_EQ(view.response.holders(0).client_id(), "steady");
  EXPECT_EQ(view.response.holders(1).client_id(), "next");
}

// Live: child daemons on a data dir, real clock.
void ExpectCapacitySurvivesARestart(std::vector<std::string> flags) {
  DataDir dir;
  flags.push_back(dir.flag());
  {
    Daemon daemon = StartDaemon(flags);
    ASSERT_FALSE(daemon.address.empty());
    TestClient client(daemon.address);
    ASSERT_TRUE(client.Acquire(Permit("a", "S", 3, 60'000)).response.has_granted());
    ASSERT_TRUE(client.Acquire(Permit("b", "S", 3, 60'000)).response.has_granted());
    ASSERT_TRUE(client.Acquire("c", "M", 60'000).response.has_granted());
    daemon.process->Signal(SIGKILL);
    ASSERT_TRUE(daemon.process->WaitExit(milliseconds(5'000)).has_value());
  }
  Daemon daemon = StartDaemon(flags);
  ASSERT_FALSE(daemon.address.empty());
  TestClient client(daemon.address);
  EXPECT_EQ(client.Inspect("S").response.capacity(), 3u);
  EXPECT_EQ(client.Acquire(Permit("d", "S", 2, 60'000)).reason,
            "CAPACITY_MISMATCH");
  Result<pb::AcquireResponse> third = client.Acquire(Permit("d", "S", 3, 60'000));
  ASSERT_TRUE(third.response.has_granted());
  EXPECT_EQ(third.response.granted().token(), 3u);
  EXPECT_TRUE(client.Acquire(Permit("e", "S", 3, 60'000)).response.has_queued());
}

TEST(SemaphoreDurabilityTest, CapacitySurvivesARestartFromTheLog) {
  ExpectCapacitySurvivesARestart({});
}

TEST(SemaphoreDurabilityTest, CapacitySurvivesARestartFromASnapshot) {
  // A snapshot after every logged operation: the restart starts from a
  // snapshot that holds the semaphore (and replays the log after it).
  ExpectCapacitySurvivesARestart({"--snapshot-every=1"});
}

}  // namespace
}  // namespace leasekeeper::testing
