// The grant instant is rounded up: a tick names the millisecond a request
// arrived in, so a lease granted or renewed at a moment inside tick T lasts
// until T + 1 + ttl, never ending before ttl after the request arrived.
// FakeClock::SetInside(T) puts the clock between T and T + 1; on a tick's
// boundary (Set) nothing is rounded, as the contract's examples require.
// Answers report the ttl asked for.
#include "gtest/gtest.h"
#include "tests/server/test_support.h"

namespace leasekeeper::testing {
namespace {

class GrantRoundingTest : public ServerTest {
 protected:
  std::string HolderOf(const std::string& lock) {
    Result<pb::InspectResponse> view = client_->Inspect(lock);
    EXPECT_TRUE(view.ok());
    return view.response.holders_size() == 0
               ? std::string()
               : view.response.holders(0).client_id();
  }
};

TEST_F(GrantRoundingTest, GrantedLeaseLastsTtlAfterTheEndOfItsMillisecond) {
  clock_.SetInside(10);  // the Acquire arrives between 10 and 11
  Result<pb::AcquireResponse> granted = client_->Acquire("a", "L", 100);
  ASSERT_TRUE(granted.ok());
  EXPECT_EQ(granted.response.granted().ttl_ms(), 100);
  clock_.SetInside(110);  // maybe not yet 100 ms after the request arrived
  EXPECT_EQ(HolderOf("L"), "a");
  EXPECT_FALSE(client_->Acquire("b", "L", 100).response.has_granted());
  At(111);  // surely 100 ms after
  EXPECT_EQ(HolderOf("L"), "b");
}

TEST_F(GrantRoundingTest, RenewedLeaseLastsTtlAfterTheEndOfItsMillisecond) {
  clock_.SetInside(10);
  ASSERT_TRUE(client_->Acquire("a", "L", 100).ok());
  clock_.SetInside(50);
  Result<pb::RenewResponse> renewed = client_->Renew("a", "L", 100);
  ASSERT_TRUE(renewed.ok());
  EXPECT_EQ(renewed.response.ttl_ms(), 100);
  At(150);
  EXPECT_EQ(HolderOf("L"), "a");
  At(151);
  EXPECT_EQ(HolderOf("L"), "");
}

TEST_F(GrantRoundingTest, OnATickBoundaryNothingIsRounded) {
  At(10);
  ASSERT_TRUE(client_->Acquire("a", "L", 100).ok());
  At(109);
  EXPECT_EQ(HolderOf("L"), "a");
  At(110);
  EXPECT_EQ(HolderOf("L"), "");
}

}  // namespace
}  // namespace leasekeeper::testing
