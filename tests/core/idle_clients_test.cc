// The daemon-only idle-client index and Forget (LockTable): a client that
// holds and waits for nothing is indexed by the instant it became idle, and
// Forget unregisters it; the replay's table (no tracking) keeps every
// client, as the contract says.
#include <optional>
#include <string>

#include "core/lock_table.h"
#include "core/snapshot.h"
#include "gtest/gtest.h"

namespace leasekeeper {
namespace {

constexpr LockMode kX = LockMode::kExclusive;

LockTable Tracking() {
  return LockTable(CoreConfig{.max_ttl = 1000, .track_idle_clients = true});
}

// "client@since" of the longest-idle client, or "none".
std::string Oldest(const LockTable& table) {
  std::optional<LockTable::IdleClient> oldest = table.OldestIdleClient();
  if (!oldest.has_value()) return "none";
  return std::string(oldest->client) + "@" + std::to_string(oldest->since);
}

TEST(IdleClients, IdleFromTheInstantTheLastLeaseOrWaitEnded) {
  LockTable table = Tracking();
  ASSERT_TRUE(table.Acquire(0, "a", "L", 10, kX).ok());
  ASSERT_TRUE(table.Acquire(1, "b", "L", 10, kX).ok());  // queued
  EXPECT_EQ(Oldest(table), "none");
  // a's lease lapses at 10 and b is granted at 10: a is idle since 10, not
  // since the operation at 15 that noticed.
  table.AdvanceTo(15);
  EXPECT_EQ(Oldest(table), "a@10");
  ASSERT_TRUE(table.Release(16, "b", "L").ok());
  EXPECT_EQ(Oldest(table), "a@10");
  // Busy again: out of the index.
  ASSERT_TRUE(table.Acquire(17, "a", "M", 10, kX).ok());
  EXPECT_EQ(Oldest(table), "b@16");
  EXPECT_TRUE(table.CheckInvariants().ok()) << table.CheckInvariants();
}

TEST(IdleClients, WithdrawnWaiterIsIdle) {
  LockTable table = Tracking();
  ASSERT_TRUE(table.Acquire(0, "a", "L", 100, kX).ok());
  ASSERT_TRUE(table.Acquire(1, "b", "L", 100, kX).ok());
  EXPECT_TRUE(table.Withdraw(5, "b", "L"));
  EXPECT_EQ(Oldest(table), "b@5");
}

TEST(IdleClients, ForgetUnregistersAnIdleClientAndItRegistersAfresh) {
  LockTable table = Tracking();
  ASSERT_TRUE(table.Acquire(0, "a", "L", 10, kX).ok());
  ASSERT_TRUE(table.Release(1, "a", "L").ok());
  ASSERT_EQ(table.Status(1, "a").age, 1u);
  EXPECT_TRUE(table.Forget(2, "a"));
  EXPECT_EQ(table.Status(2, "a").age, std::nullopt);
  EXPECT_EQ(table.registered_client_count(), 0u);
  EXPECT_EQ(Oldest(table), "none");
  EXPECT_FALSE(table.Forget(3, "a")) << "not registered any more";
  ASSERT_TRUE(table.Acquire(4, "a", "L", 10, kX).ok());
  EXPECT_EQ(table.Status(4, "a").age, 2u) << "a new, larger age";
  // The fencing counter is the lock's, untouched.
  EXPECT_EQ(table.LastToken("L"), 2u);
  EXPECT_TRUE(table.CheckInvariants().ok()) << table.CheckInvariants();
}

TEST(IdleClients, ForgetRefusesAClientThatHoldsOrWaits) {
  LockTable table = Tracking();
  ASSERT_TRUE(table.Acquire(0, "a", "L", 100, kX).ok());
  ASSERT_TRUE(table.Acquire(0, "b", "L", 100, kX).ok());
  EXPECT_FALSE(table.Forget(1, "a"));
  EXPECT_FALSE(table.Forget(1, "b"));
  EXPECT_EQ(table.registered_client_count(), 2u);
}

TEST(IdleClients, DeadlockVictimLeavesTheIndexWithItsRegistration) {
  LockTable table = Tracking();
  ASSERT_TRUE(table.Acquire(0, "alice", "L1", 100, kX).ok());
  ASSERT_TRUE(table.Acquire(1, "bob", "L2", 100, kX).ok());
  ASSERT_TRUE(table.Acquire(2, "bob", "L1", 100, kX).ok());
  ASSERT_TRUE(table.Acquire(3, "alice", "L2", 100, kX).ok());  // bob aborted
  EXPECT_EQ(Oldest(table), "none");
  EXPECT_TRUE(table.CheckInvariants().ok()) << table.CheckInvariants();
}

TEST(IdleClients, RestartIdleClockOnlyMovesForward) {
  LockTable table = Tracking();
  ASSERT_TRUE(table.Acquire(0, "a", "L", 10, kX).ok());
  ASSERT_TRUE(table.Release(5, "a", "L").ok());
  table.RestartIdleClock("a", 3);
  EXPECT_EQ(Oldest(table), "a@5");
  table.RestartIdleClock("a", 9);
  EXPECT_EQ(Oldest(table), "a@9");
  table.RestartIdleClock("nobody", 9);
  EXPECT_TRUE(table.CheckInvariants().ok()) << table.CheckInvariants();
}

TEST(IdleClients, RestoredIdleClientsAreIdleSinceTheSnapshot) {
  LockTable table = Tracking();
  ASSERT_TRUE(table.Acquire(0, "a", "L", 10, kX).ok());
  ASSERT_TRUE(table.Acquire(0, "b", "M", 100, kX).ok());
  ASSERT_TRUE(table.Release(1, "a", "L").ok());
  table.AdvanceTo(50);
  CoreSnapshot snapshot;
  table.ExportTo(snapshot);
  LockTable restored = Tracking();
  ASSERT_TRUE(restored.ImportFrom(snapshot).ok());
  EXPECT_EQ(Oldest(restored), "a@50");
  EXPECT_TRUE(restored.CheckInvariants().ok()) << restored.CheckInvariants();
}

TEST(IdleClients, WithoutTrackingThereIsNoIndexAndClientsStay) {
  LockTable table;  // the replay's table
  ASSERT_TRUE(table.Acquire(0, "a", "L", 10, kX).ok());
  ASSERT_TRUE(table.Release(1, "a", "L").ok());
  EXPECT_EQ(Oldest(table), "none");
  table.AdvanceTo(1'000'000);
  EXPECT_EQ(table.Status(1'000'000, "a").age, 1u);
  EXPECT_TRUE(table.CheckInvariants().ok()) << table.CheckInvariants();
}

}  // namespace
}  // namespace leasekeeper
