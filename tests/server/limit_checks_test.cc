// LimitChecks alone: where each limit refuses, and the flag it names.
#include "server/limit_checks.h"

#include <string>

#include "gtest/gtest.h"
#include "server/server_errors.h"

namespace leasekeeper::server {
namespace {

// The flag a refusal names ("" for OK).
std::string RefusedBy(const absl::Status& status) {
  return status.ok() ? "" : ErrorInfoOf(status).limit;
}

TEST(LimitChecksTest, AFieldAtItsSizePassesAndOneByteMoreIsRefused) {
  const Limits limits{.max_client_id_bytes = 3, .max_lock_name_bytes = 4};
  const LimitChecks checks(limits);
  EXPECT_EQ(RefusedBy(checks.ClientId("abc")), "");
  EXPECT_EQ(RefusedBy(checks.ClientId("abcd")), "max-client-id-bytes");
  EXPECT_EQ(RefusedBy(checks.LockName("abcde")), "max-lock-name-bytes");
  EXPECT_EQ(ErrorInfoOf(checks.ClientId("abcd")).limit_value, 3);
}

TEST(LimitChecksTest, ACountBelowItsLimitFitsOneMore) {
  const Limits limits{.max_waiters_per_lock = 2,
                      .max_sessions = 2,
                      .max_locks_per_client = 1};
  const LimitChecks checks(limits);
  EXPECT_EQ(RefusedBy(checks.Waiters(1)), "");
  EXPECT_EQ(RefusedBy(checks.Waiters(2)), "max-waiters-per-lock");
  EXPECT_EQ(RefusedBy(checks.Sessions(1)), "");
  EXPECT_EQ(RefusedBy(checks.Sessions(2)), "max-sessions");
  EXPECT_EQ(RefusedBy(checks.LocksHeld(1)), "max-locks-per-client");
}

TEST(LimitChecksTest, OnlyAPrefixWatcherCountsAgainstThePrefixLimit) {
  const Limits limits{.max_watchers = 3, .max_prefix_watchers = 1};
  const LimitChecks checks(limits);
  EXPECT_EQ(RefusedBy(checks.Watchers(2, /*prefix=*/false, 1)), "");
  EXPECT_EQ(RefusedBy(checks.Watchers(2, /*prefix=*/true, 1)),
            "max-prefix-watchers");
  EXPECT_EQ(RefusedBy(checks.Watchers(3, /*prefix=*/false, 0)),
            "max-watchers");
}

TEST(LimitChecksTest, ANewKeyOnAFullLockIsRefusedButAnOverwriteIsNot) {
  const Limits limits{.max_keys_per_lock = 1};
  const LimitChecks checks(limits);
  FencedStore store;
  ASSERT_TRUE(store.Write("L", "k", "v", 1).ok());
  EXPECT_EQ(RefusedBy(checks.StoreWrite(store, "L", "k", "w")), "");
  EXPECT_EQ(RefusedBy(checks.StoreWrite(store, "L", "other", "w")),
            "max-keys-per-lock");
  EXPECT_EQ(RefusedBy(checks.StoreWrite(store, "M", "other", "w")), "");
}

TEST(LimitChecksTest, AWriteThatDoesNotGrowAFullStoreIsNeverRefused) {
  const Limits limits{.max_store_bytes = 4};
  const LimitChecks checks(limits);
  FencedStore store;
  ASSERT_TRUE(store.Write("L", "k", "12345678", 1).ok());  // over already
  EXPECT_EQ(RefusedBy(checks.StoreWrite(store, "L", "k", "1")), "");
  EXPECT_EQ(RefusedBy(checks.StoreWrite(store, "L", "k", "123456789")),
            "max-store-bytes");
}

}  // namespace
}  // namespace leasekeeper::server
