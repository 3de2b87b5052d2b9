#include "proto/lock_mode.h"

#include "client/types.h"
#include "gtest/gtest.h"

namespace leasekeeper {
namespace {

namespace pb = ::leasekeeper::v1;

TEST(LockModeToProtoTest, EachClientModeIsItsProtocolMode) {
  EXPECT_EQ(LockModeToProto(client::LockMode::kExclusive),
            pb::LOCK_MODE_EXCLUSIVE);
  EXPECT_EQ(LockModeToProto(client::LockMode::kShared), pb::LOCK_MODE_SHARED);
  EXPECT_EQ(LockModeToProto(client::LockMode::kSemaphore),
            pb::LOCK_MODE_SEMAPHORE);
}

TEST(LockModeFromProtoTest, EachProtocolModeIsItsClientModeAndUnsetIsExclusive) {
  EXPECT_EQ(LockModeFromProto<client::LockMode>(pb::LOCK_MODE_EXCLUSIVE),
            client::LockMode::kExclusive);
  EXPECT_EQ(LockModeFromProto<client::LockMode>(pb::LOCK_MODE_SHARED),
            client::LockMode::kShared);
  EXPECT_EQ(LockModeFromProto<client::LockMode>(pb::LOCK_MODE_SEMAPHORE),
            client::LockMode::kSemaphore);
  EXPECT_EQ(LockModeFromProto<client::LockMode>(pb::LOCK_MODE_UNSPECIFIED),
            client::LockMode::kExclusive);
  EXPECT_EQ(LockModeFromProto<client::LockMode>(99),
            client::LockMode::kExclusive);
}

}  // namespace
}  // namespace leasekeeper
