// StorageLifecycle alone, on a DurableStateMachine and FakeOperationLogs,
// ticks as plain parameters: which log it opens, what the opening
// recovered, the order in which settling withdraws recovered waits, and
// that the recovered server state is handed over once.
#include "server/storage_lifecycle.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/server/fake_operation_log.h"

namespace leasekeeper::server {
namespace {

using testing::FakeOperationLog;

class StorageLifecycleTest : public ::testing::Test {
 protected:
  StorageLifecycleTest()
      : machine_(CoreConfig{}, [] { return storage::ServerState{}; }) {}

  // A log opened by `durability.open_log` that recovers three waits on two
  // locks and one session, as a cluster log's opening would.
  DurabilityConfig RecoveringLog() {
    DurabilityConfig durability;
    durability.open_log = [](StateMachine& machine,
                             storage::ServerState& server)
        -> absl::StatusOr<DurabilityConfig::OpenedLog> {
      for (const auto& [client, lock] :
           std::vector<std::pair<std::string, std::string>>{
               {"a", "L"}, {"b", "L"}, {"c", "L"}, {"a", "M"}, {"d", "M"}}) {
        if (!machine.Apply(Operation{10, op::Acquire{client, lock, 1'000}})
                 .ok()) {
          return absl::InternalError("recovery refused");
        }
      }
      server.sessions.push_back({.session_id = "s-1", .client = "a"});
      storage::RecoveryReport recovery;
      recovery.fresh = false;
      recovery.records_replayed = 5;
      return DurabilityConfig::OpenedLog{
          .log = std::make_unique<FakeOperationLog>(), .recovery = recovery};
    };
    return durability;
  }

  DurableStateMachine machine_;
};

TEST_F(StorageLifecycleTest, WithoutADataDirNothingOpensAndTheStateIsFresh) {
  StorageLifecycle lifecycle(DurabilityConfig{}, machine_);
  absl::StatusOr<storage::RecoveryReport> report = lifecycle.Open(nullptr);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->fresh);
  EXPECT_FALSE(machine_.persistent());
  EXPECT_TRUE(lifecycle.RecoveredWaitWithdrawals().empty());
  EXPECT_TRUE(lifecycle.TakeRecoveredServerState().sessions.empty());
}

TEST_F(StorageLifecycleTest, AGivenEmptyLogIsUsedWithAFreshState) {
  StorageLifecycle lifecycle(RecoveringLog(), machine_);
  absl::StatusOr<storage::RecoveryReport> report =
      lifecycle.Open(std::make_unique<FakeOperationLog>());
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->fresh);
  EXPECT_TRUE(machine_.persistent());
  // The configured opener did not run: nothing was recovered.
  EXPECT_EQ(machine_.table().waiter_count(), 0u);
}

TEST_F(StorageLifecycleTest, AGivenLogThatHoldsRecordsIsRefused) {
  StorageLifecycle lifecycle(DurabilityConfig{}, machine_);
  auto log = std::make_unique<FakeOperationLog>();
  ASSERT_TRUE(log->Append(Operation{1, op::Advance{}}).ok());
  EXPECT_EQ(lifecycle.Open(std::move(log)).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(machine_.persistent());
}

TEST_F(StorageLifecycleTest, AnOpenersErrorIsTheOutcomeAndNoLogIsInUse) {
  DurabilityConfig durability;
  durability.open_log =
      [](StateMachine&,
         storage::ServerState&) -> absl::StatusOr<DurabilityConfig::OpenedLog> {
    return absl::UnavailableError("etcd unreachable");
  };
  StorageLifecycle lifecycle(std::move(durability), machine_);
  EXPECT_EQ(lifecycle.Open(nullptr).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_FALSE(machine_.persistent());
}

TEST_F(StorageLifecycleTest, TheOpenedLogsRecoveryIsReported) {
  StorageLifecycle lifecycle(RecoveringLog(), machine_);
  absl::StatusOr<storage::RecoveryReport> report = lifecycle.Open(nullptr);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_FALSE(report->fresh);
  EXPECT_EQ(report->records_replayed, 5u);
  EXPECT_TRUE(machine_.persistent());
  EXPECT_EQ(machine_.table().waiter_count(), 3u);
}

TEST_F(StorageLifecycleTest, RecoveredWaitsAreWithdrawnLastInLineFirst) {
  StorageLifecycle lifecycle(RecoveringLog(), machine_);
  ASSERT_TRUE(lifecycle.Open(nullptr).ok());
  const std::vector<op::Withdraw> withdrawals =
      lifecycle.RecoveredWaitWithdrawals();
  // Lock by lock (in the snapshot's order), each queue from its tail.
  std::map<std::string, std::vector<std::string>> by_lock;
  for (const op::Withdraw& withdrawal : withdrawals) {
    by_lock[withdrawal.lock].push_back(withdrawal.client);
  }
  EXPECT_EQ(by_lock["L"], (std::vector<std::string>{"c", "b"}));
  EXPECT_EQ(by_lock["M"], (std::vector<std::string>{"d"}));
  ASSERT_EQ(withdrawals.size(), 3u);
  // Applied in that order, none of them grants anything.
  for (const op::Withdraw& withdrawal : withdrawals) {
    ASSERT_TRUE(machine_.Apply(Operation{20, withdrawal}).ok());
  }
  for (const Event& event : machine_.TakeEvents()) {
    EXPECT_NE(event.kind, Event::Kind::kGrantedFromQueue);
  }
  EXPECT_EQ(machine_.table().waiter_count(), 0u);
  EXPECT_TRUE(lifecycle.RecoveredWaitWithdrawals().empty());
}

TEST_F(StorageLifecycleTest, TheRecoveredServerStateIsHandedOverOnce) {
  StorageLifecycle lifecycle(RecoveringLog(), machine_);
  ASSERT_TRUE(lifecycle.Open(nullptr).ok());
  storage::ServerState recovered = lifecycle.TakeRecoveredServerState();
  ASSERT_EQ(recovered.sessions.size(), 1u);
  EXPECT_EQ(recovered.sessions[0].session_id, "s-1");
  EXPECT_TRUE(lifecycle.TakeRecoveredServerState().sessions.empty());
}

}  // namespace
}  // namespace leasekeeper::server
