// ParkedCalls alone, with ticks for time: which wait is due when, ties,
// supersede by a retry, finish.
#include "server/parked_calls.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace leasekeeper::server {
namespace {

class NullCall final : public PendingAcquire {
 public:
  void Complete(AcquireCallAnswer) override {}
};

class ParkedCallsTest : public ::testing::Test {
 protected:
  void TearDown() override {
    EXPECT_TRUE(parked_.CheckInvariants().ok()) << parked_.CheckInvariants();
  }

  ParkedCalls parked_;
  NullCall first_, second_, third_;
};

const ParkedCalls::Key kJobOnL{"job", "L"};

TEST_F(ParkedCallsTest, AWaitIsDueAtItsDeadlineNotBefore) {
  parked_.Park(kJobOnL, &first_, "r-1", 100, 600);
  EXPECT_EQ(parked_.NextDeadline(), 600);
  EXPECT_FALSE(parked_.NextDue(599).has_value());
  ASSERT_TRUE(parked_.NextDue(600).has_value());
  EXPECT_EQ(*parked_.NextDue(600), kJobOnL);
  EXPECT_TRUE(parked_.contains(kJobOnL));  // due is a question, not a removal
}

TEST_F(ParkedCallsTest, WaitsEndingAtTheSameTickAreDueInParkingOrder) {
  parked_.Park({"b", "L"}, &first_, "", 0, 500);
  parked_.Park({"a", "L"}, &second_, "", 0, 500);
  parked_.Park({"c", "M"}, &third_, "", 0, 400);
  std::vector<std::string> order;
  while (std::optional<ParkedCalls::Key> due = parked_.NextDue(500)) {
    order.push_back(due->first);
    parked_.Finish(*due);
  }
  EXPECT_EQ(order, (std::vector<std::string>{"c", "b", "a"}));
}

TEST_F(ParkedCallsTest, ARetryTakesTheSlotAndItsWaitStartsAgain) {
  parked_.Park(kJobOnL, &first_, "r-1", 100, 600);
  EXPECT_EQ(parked_.Supersede(kJobOnL, &second_, 900), &first_);
  const ParkedCalls::Call* call = parked_.Find(kJobOnL);
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(call->call, &second_);
  EXPECT_EQ(call->request_id, "r-1");
  EXPECT_EQ(call->queued_at, 100);  // the request's place in line is kept
  EXPECT_FALSE(parked_.NextDue(899).has_value());
  EXPECT_EQ(parked_.NextDeadline(), 900);
}

TEST_F(ParkedCallsTest, FinishRemovesTheCallAndItsDeadlineOnce) {
  parked_.Park(kJobOnL, &first_, "r-1", 100, 600);
  std::optional<ParkedCalls::Call> finished = parked_.Finish(kJobOnL);
  ASSERT_TRUE(finished.has_value());
  EXPECT_EQ(finished->call, &first_);
  EXPECT_FALSE(parked_.Finish(kJobOnL).has_value());
  EXPECT_EQ(parked_.NextDeadline(), kMaxTick);
  EXPECT_EQ(parked_.size(), 0u);
}

}  // namespace
}  // namespace leasekeeper::server
