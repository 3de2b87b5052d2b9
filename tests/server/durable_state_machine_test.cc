// DurableStateMachine alone, on a FakeOperationLog that holds durability
// back: what is applied is appended in apply order, what the core refuses is
// not, a failed log refuses everything but the passage of time, snapshots
// cover exactly the records appended, and "when durable" answers once per
// question. Ticks are plain parameters (the machine reads no clock).
#include "server/durable_state_machine.h"

#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "gtest/gtest.h"
#include "tests/server/fake_operation_log.h"

namespace leasekeeper::server {
namespace {

using storage::LogPosition;
using testing::FakeOperationLog;

Operation AcquireOp(Tick at, const std::string& client,
                    const std::string& lock) {
  return Operation{at, op::Acquire{client, lock, /*ttl=*/1'000}};
}

class DurableStateMachineTest : public ::testing::Test {
 protected:
  DurableStateMachineTest()
      : machine_(CoreConfig{}, [this] { return server_state_; }) {
    auto log = std::make_unique<FakeOperationLog>();
    log_ = log.get();
    EXPECT_TRUE(machine_.UseLog(std::move(log)).ok());
  }

  // The operations in the log, in order (server records left out).
  std::vector<Operation> LoggedOperations() const {
    std::vector<Operation> ops;
    for (const storage::LogEntry& entry : log_->entries()) {
      if (const auto* op = std::get_if<Operation>(&entry)) ops.push_back(*op);
    }
    return ops;
  }

  storage::ServerState server_state_;
  DurableStateMachine machine_;
  FakeOperationLog* log_ = nullptr;
};

TEST_F(DurableStateMachineTest, AppliedOperationsAreAppendedInApplyOrder) {
  ASSERT_TRUE(machine_.Apply(AcquireOp(10, "a", "L")).ok());
  ASSERT_TRUE(machine_.Apply(AcquireOp(20, "b", "M")).ok());
  const std::vector<Operation> ops = LoggedOperations();
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].at, 10);
  EXPECT_EQ(std::get<op::Acquire>(ops[0].body).client, "a");
  EXPECT_EQ(ops[1].at, 20);
  EXPECT_EQ(std::get<op::Acquire>(ops[1].body).client, "b");
  EXPECT_EQ(machine_.last_position(), 2u);
  EXPECT_EQ(machine_.table().held_lease_count(), 2u);
}

TEST_F(DurableStateMachineTest, AnOperationTheCoreRefusesIsNotAppended) {
  absl::StatusOr<Reply> refused =
      machine_.Apply(Operation{10, op::Release{"a", "L"}});
  EXPECT_FALSE(refused.ok());
  EXPECT_TRUE(log_->entries().empty());
  EXPECT_EQ(machine_.last_position(), 0u);
  // Time still passed: it is carried by the next appended operation.
  EXPECT_EQ(machine_.table().now(), 10);
}

TEST_F(DurableStateMachineTest, AFailedLogRefusesMutationsButTimeStillPasses) {
  ASSERT_TRUE(machine_.Apply(AcquireOp(10, "a", "L")).ok());
  log_->Fail(absl::UnavailableError("disk full"));
  absl::StatusOr<Reply> refused = machine_.Apply(AcquireOp(20, "b", "M"));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(machine_.table().held_lease_count(), 1u);  // M never granted
  // The lease of `a` ends at 1010: the passage of time retires it.
  EXPECT_TRUE(machine_.Apply(Operation{2'000, op::Advance{}}).ok());
  EXPECT_EQ(machine_.table().held_lease_count(), 0u);
  EXPECT_EQ(log_->entries().size(), 1u);
}

TEST_F(DurableStateMachineTest, ServerRecordsJoinTheSameStreamInOrder) {
  ASSERT_TRUE(machine_.Apply(AcquireOp(10, "a", "L")).ok());
  machine_.Log(storage::ServerRecord{
      10, storage::srec::SessionOpened{"s-1", "a"}});
  ASSERT_TRUE(machine_.Apply(AcquireOp(20, "b", "M")).ok());
  const std::vector<storage::LogEntry> entries = log_->entries();
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_TRUE(std::holds_alternative<Operation>(entries[0]));
  EXPECT_TRUE(std::holds_alternative<storage::ServerRecord>(entries[1]));
  EXPECT_TRUE(std::holds_alternative<Operation>(entries[2]));
}

TEST_F(DurableStateMachineTest, ASnapshotCoversExactlyTheRecordsAppended) {
  ASSERT_TRUE(machine_.Apply(AcquireOp(10, "a", "L")).ok());
  log_->SetSnapshotDue(true);
  server_state_.sessions.push_back({.session_id = "s-1", .client = "b"});
  ASSERT_TRUE(machine_.Apply(AcquireOp(20, "b", "M")).ok());
  const std::vector<FakeOperationLog::Snapshot> snapshots =
      log_->snapshots();
  ASSERT_EQ(snapshots.size(), 1u);
  EXPECT_EQ(snapshots[0].covered, 2u);
  ASSERT_EQ(snapshots[0].core.locks.size(), 2u);
  ASSERT_EQ(snapshots[0].server.sessions.size(), 1u);
  EXPECT_EQ(snapshots[0].server.sessions[0].session_id, "s-1");
}

TEST_F(DurableStateMachineTest, WhenDurableAnswersOnceThePositionIsDurable) {
  ASSERT_TRUE(machine_.Apply(AcquireOp(10, "a", "L")).ok());
  ASSERT_TRUE(machine_.Apply(AcquireOp(20, "b", "M")).ok());
  std::optional<absl::Status> first, second;
  machine_.durability().WhenDurable(1, [&](absl::Status s) { first = s; });
  machine_.durability().WhenDurable(2, [&](absl::Status s) { second = s; });
  EXPECT_FALSE(first.has_value());
  log_->MakeDurable(1);
  ASSERT_TRUE(first.has_value());
  EXPECT_TRUE(first->ok());
  EXPECT_FALSE(second.has_value());
  log_->MakeDurable(2);
  ASSERT_TRUE(second.has_value());
  EXPECT_TRUE(second->ok());
  // A durable position answers at once, on the caller's thread.
  std::optional<absl::Status> again;
  machine_.durability().WhenDurable(2, [&](absl::Status s) { again = s; });
  ASSERT_TRUE(again.has_value());
  EXPECT_TRUE(again->ok());
}

TEST_F(DurableStateMachineTest, ALogFailureFailsWaitersAndIsReportedOnce) {
  int reported = 0;
  machine_.durability().SetFailureObserver(
      [&](const absl::Status&) { ++reported; });
  ASSERT_TRUE(machine_.Apply(AcquireOp(10, "a", "L")).ok());
  std::optional<absl::Status> waiting, later;
  machine_.durability().WhenDurable(1, [&](absl::Status s) { waiting = s; });
  log_->Fail(absl::UnavailableError("fsync failed"));
  ASSERT_TRUE(waiting.has_value());
  EXPECT_EQ(waiting->code(), absl::StatusCode::kUnavailable);
  machine_.durability().WhenDurable(1, [&](absl::Status s) { later = s; });
  ASSERT_TRUE(later.has_value());
  EXPECT_EQ(later->code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(reported, 1);
}

TEST(DurableStateMachineWithoutLogTest, EverythingIsDurableAtOnce) {
  DurableStateMachine machine(CoreConfig{}, [] { return storage::ServerState{}; });
  ASSERT_TRUE(machine.Apply(AcquireOp(10, "a", "L")).ok());
  EXPECT_FALSE(machine.persistent());
  EXPECT_EQ(machine.last_position(), 0u);
  std::optional<absl::Status> answered;
  machine.durability().WhenDurable(machine.last_position(),
                                   [&](absl::Status s) { answered = s; });
  ASSERT_TRUE(answered.has_value());
  EXPECT_TRUE(answered->ok());
}

TEST(DurableStateMachineWithoutLogTest, UseLogRefusesALogThatHoldsRecords) {
  DurableStateMachine machine(CoreConfig{}, [] { return storage::ServerState{}; });
  auto log = std::make_unique<FakeOperationLog>();
  ASSERT_TRUE(log->Append(AcquireOp(1, "a", "L")).ok());
  EXPECT_EQ(machine.UseLog(std::move(log)).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(machine.persistent());
}

// A log opened with clock records (cluster mode's): the clock is due one
// period after the last operation appended while a lease is held, and
// never while none is, without a period, or once the log failed.
TEST(DurableStateMachineClockTest, ClockIsDueOnePeriodAfterTheLastRecordWhileALeaseIsHeld) {
  storage::ServerState none;
  DurableStateMachine machine(CoreConfig{}, [&] { return none; });
  FakeOperationLog* log = nullptr;
  DurabilityConfig durability;
  durability.open_log = [&](StateMachine&, storage::ServerState&)
      -> absl::StatusOr<DurabilityConfig::OpenedLog> {
    auto fake = std::make_unique<FakeOperationLog>();
    log = fake.get();
    return DurabilityConfig::OpenedLog{.log = std::move(fake),
                                       .recovery = {},
                                       .clock_record_every_ms = 250};
  };
  storage::ServerState recovered;
  ASSERT_TRUE(machine.Open(durability, &recovered).ok());
  EXPECT_EQ(machine.NextClockRecord(), kMaxTick) << "nothing is held";
  ASSERT_TRUE(machine.Apply(AcquireOp(100, "a", "L")).ok());
  EXPECT_EQ(machine.NextClockRecord(), 350);
  // Any record carries the clock: the next one is due a period after it.
  ASSERT_TRUE(machine.Apply(AcquireOp(200, "b", "M")).ok());
  EXPECT_EQ(machine.NextClockRecord(), 450);
  ASSERT_TRUE(machine.Apply(Operation{450, op::Advance{}}).ok());
  EXPECT_EQ(machine.NextClockRecord(), 700);
  ASSERT_EQ(log->entries().size(), 3u);
  ASSERT_TRUE(machine.Apply(Operation{500, op::Release{"a", "L"}}).ok());
  ASSERT_TRUE(machine.Apply(Operation{500, op::Release{"b", "M"}}).ok());
  EXPECT_EQ(machine.NextClockRecord(), kMaxTick) << "nothing is held";
  ASSERT_TRUE(machine.Apply(AcquireOp(600, "a", "L")).ok());
  EXPECT_EQ(machine.NextClockRecord(), 850);
  log->Fail(absl::UnavailableError("not leader"));
  EXPECT_EQ(machine.NextClockRecord(), kMaxTick) << "the log failed";
}

TEST_F(DurableStateMachineTest, ALogWithoutClockRecordsIsNeverDueOne) {
  ASSERT_TRUE(machine_.Apply(AcquireOp(10, "a", "L")).ok());
  EXPECT_EQ(machine_.NextClockRecord(), kMaxTick);
}

}  // namespace
}  // namespace leasekeeper::server
