#include "server/reactor_alarm.h"

#include <chrono>
#include <memory>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace leasekeeper::server {
namespace {

// A stand-in for a stream's reactor: it owns its alarm, as they do.
class Owner : public std::enable_shared_from_this<Owner> {
 public:
  explicit Owner(absl::Notification* fired) : fired_(fired) {}

  void Arm(absl::Duration in) {
    alarm_.Set(
        std::chrono::system_clock::now() + absl::ToChronoMilliseconds(in),
        weak_from_this(), &Owner::Fire);
  }
  void Cancel() { alarm_.Cancel(); }

 private:
  void Fire() { fired_->Notify(); }

  absl::Notification* const fired_;
  ReactorAlarm<Owner> alarm_;
};

TEST(ReactorAlarm, AnArmedAlarmDoesNotKeepItsOwnerAlive) {
  absl::Notification fired;
  auto owner = std::make_shared<Owner>(&fired);
  owner->Arm(absl::Hours(1));
  std::weak_ptr<Owner> watched = owner;
  owner.reset();
  EXPECT_TRUE(watched.expired());
}

TEST(ReactorAlarm, ACancelledAlarmDoesNotKeepItsOwnerAlive) {
  absl::Notification fired;
  auto owner = std::make_shared<Owner>(&fired);
  owner->Arm(absl::Hours(1));
  owner->Cancel();
  std::weak_ptr<Owner> watched = owner;
  owner.reset();
  EXPECT_TRUE(watched.expired());
  EXPECT_FALSE(fired.HasBeenNotified());
}

TEST(ReactorAlarm, AFiredAlarmDoesNotKeepItsOwnerAlive) {
  absl::Notification fired;
  auto owner = std::make_shared<Owner>(&fired);
  owner->Arm(absl::Milliseconds(10));
  ASSERT_TRUE(fired.WaitForNotificationWithTimeout(absl::Seconds(10)));
  std::weak_ptr<Owner> watched = owner;
  owner.reset();
  EXPECT_TRUE(watched.expired());
}

// Live: real time, a 50 ms alarm and a 300 ms wait.
TEST(ReactorAlarm, ACancelledAlarmNeverCallsItsOwner) {
  absl::Notification fired;
  auto owner = std::make_shared<Owner>(&fired);
  owner->Arm(absl::Milliseconds(50));
  owner->Cancel();
  EXPECT_FALSE(fired.WaitForNotificationWithTimeout(absl::Milliseconds(300)));
}

}  // namespace
}  // namespace leasekeeper::server
