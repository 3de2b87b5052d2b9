#include "metrics/connection_table.h"

#include <vector>

#include "gtest/gtest.h"

namespace leasekeeper::metrics {
namespace {

using Id = ConnectionTable::Id;

ConnectionLimits Limits(int max_connections) {
  return ConnectionLimits{.max_connections = max_connections,
                          .header_timeout_ms = 2'000,
                          .write_timeout_ms = 10'000};
}

TEST(ConnectionTableTest, BelowTheCapNothingIsEvicted) {
  ConnectionTable table(Limits(3));
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(table.Admit(i).evicted.has_value());
  EXPECT_EQ(table.size(), 3u);
}

TEST(ConnectionTableTest, AtTheCapTheOldestIdleConnectionIsEvictedFirst) {
  ConnectionTable table(Limits(3));
  const Id a = table.Admit(0).id;
  const Id b = table.Admit(10).id;
  const Id c = table.Admit(20).id;
  // a moved a byte after b and c arrived: b is now the oldest idle.
  table.Progress(a, 30);
  ConnectionTable::Admission d = table.Admit(40);
  EXPECT_EQ(d.evicted, b);
  ConnectionTable::Admission e = table.Admit(50);
  EXPECT_EQ(e.evicted, c);
  ConnectionTable::Admission f = table.Admit(60);
  EXPECT_EQ(f.evicted, a);
  EXPECT_EQ(table.size(), 3u);
}

TEST(ConnectionTableTest, EqualProgressTimesEvictTheEarlierAdmittedFirst) {
  ConnectionTable table(Limits(2));
  const Id a = table.Admit(5).id;
  table.Admit(5);
  EXPECT_EQ(table.Admit(5).evicted, a);
}

TEST(ConnectionTableTest, AHeaderDeadlineFallsDueAtTheTimeoutFromAdmission) {
  ConnectionTable table(Limits(10));
  const Id a = table.Admit(100).id;
  const Id b = table.Admit(150).id;
  EXPECT_EQ(table.NextDeadline(), 2'100);
  EXPECT_TRUE(table.TakeExpired(2'099).empty());
  EXPECT_EQ(table.TakeExpired(2'100), std::vector<Id>{a});
  EXPECT_EQ(table.NextDeadline(), 2'150);
  EXPECT_EQ(table.TakeExpired(5'000), std::vector<Id>{b});
  EXPECT_EQ(table.size(), 0u);
  EXPECT_FALSE(table.NextDeadline().has_value());
}

TEST(ConnectionTableTest, ATrickleDoesNotMoveTheHeaderDeadline) {
  ConnectionTable table(Limits(10));
  const Id a = table.Admit(0).id;
  for (int t = 100; t < 2'000; t += 100) table.Progress(a, t);
  EXPECT_EQ(table.TakeExpired(2'000), std::vector<Id>{a});
}

TEST(ConnectionTableTest, AStartedResponseHasTheWriteTimeoutInstead) {
  ConnectionTable table(Limits(10));
  const Id a = table.Admit(0).id;
  table.StartResponse(a, 500);
  EXPECT_TRUE(table.TakeExpired(2'000).empty());
  EXPECT_EQ(table.NextDeadline(), 10'500);
  EXPECT_EQ(table.TakeExpired(10'500), std::vector<Id>{a});
}

TEST(ConnectionTableTest, ARemovedConnectionIsNeitherEvictedNorExpired) {
  ConnectionTable table(Limits(2));
  const Id a = table.Admit(0).id;
  const Id b = table.Admit(1).id;
  table.Remove(a);
  table.Remove(a);            // twice: ignored
  table.Progress(a, 3);       // unknown: ignored
  table.StartResponse(a, 3);  // unknown: ignored
  EXPECT_FALSE(table.Admit(2).evicted.has_value());
  EXPECT_EQ(table.Admit(3).evicted, b);
  EXPECT_EQ(table.TakeExpired(100'000).size(), 2u);
}

}  // namespace
}  // namespace leasekeeper::metrics
