// WatchPublisher alone, fed by a core (StateMachine) driven with ticks: the
// order a watcher sees one operation's changes in, and what a watcher is
// shown of a grant. Positions are 0 (no log), so events are taken at once.
#include "server/watch_publisher.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/clock.h"
#include "tests/server/watch_events.h"

namespace leasekeeper::server {
namespace {

class NullSink final : public WatchSink {
 public:
  void Wake() override {}
};

class WatchPublisherTest : public ::testing::Test {
 protected:
  // Applies `op` to the core and publishes it as the owner does.
  void Apply(const Operation& op, bool inside_tick = false) {
    const WatchPublisher::Scope scope = publisher_.Begin(op, core_.table());
    const absl::StatusOr<Reply> reply = core_.Apply(op);
    publisher_.Publish(scope, op, reply, core_.table().pending_events(),
                       WatchPublisher::Moment{.now = op.at,
                                              .inside_tick = inside_tick,
                                              .wall = absl::UnixEpoch()},
                       /*position=*/0);
    (void)core_.TakeEvents();
  }

  WatchHub::WatcherId Watch(const std::string& lock) {
    absl::StatusOr<WatchHub::Subscribed> subscribed = hub_.Subscribe(
        WatchTarget{.name = lock}, std::make_shared<NullSink>());
    EXPECT_TRUE(subscribed.ok()) << subscribed.status();
    return subscribed.ok() ? subscribed->id : 0;
  }

  std::vector<WatchEvent> Drain(WatchHub::WatcherId id) {
    return testing::DrainWatcher(hub_, id);
  }

  StateMachine core_;
  WatchHub hub_{WatchHub::Options{}};
  WatchPublisher publisher_{hub_};
};

TEST_F(WatchPublisherTest, AReleaseIsPublishedBeforeTheGrantItCauses) {
  const WatchHub::WatcherId id = Watch("L");
  Apply(Operation{10, op::Acquire{"a", "L", 1'000}});
  Apply(Operation{20, op::Acquire{"b", "L", 1'000}});
  Apply(Operation{30, op::Release{"a", "L"}});
  const std::vector<WatchEvent> events = Drain(id);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].kind, WatchEvent::Kind::kGranted);
  EXPECT_EQ(events[1].kind, WatchEvent::Kind::kQueued);
  EXPECT_EQ(events[1].client, "b");
  EXPECT_EQ(events[2].kind, WatchEvent::Kind::kReleased);
  EXPECT_EQ(events[2].client, "a");
  EXPECT_EQ(events[2].token, 1u);
  EXPECT_EQ(events[3].kind, WatchEvent::Kind::kGranted);
  EXPECT_EQ(events[3].client, "b");
  EXPECT_EQ(events[3].at, 30);
}

TEST_F(WatchPublisherTest, AnOperatorsReleaseIsPublishedAsForced) {
  const WatchHub::WatcherId id = Watch("L");
  Apply(Operation{10, op::Acquire{"a", "L", 1'000}});
  publisher_.set_forced_release(true);
  Apply(Operation{20, op::Release{"a", "L"}});
  publisher_.set_forced_release(false);
  const std::vector<WatchEvent> events = Drain(id);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].kind, WatchEvent::Kind::kForcedRelease);
}

TEST_F(WatchPublisherTest, AWithdrawnWaitIsPublishedWithItsMode) {
  const WatchHub::WatcherId id = Watch("L");
  Apply(Operation{10, op::Acquire{"a", "L", 1'000}});
  Apply(Operation{20, op::Acquire{"b", "L", 1'000, LockMode::kShared}});
  Apply(Operation{30, op::Withdraw{"b", "L"}});
  const std::vector<WatchEvent> events = Drain(id);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[2].kind, WatchEvent::Kind::kWithdrawn);
  EXPECT_EQ(events[2].mode, LockMode::kShared);
}

TEST_F(WatchPublisherTest, AGrantInsideATickShowsTheTtlAskedFor) {
  const WatchHub::WatcherId id = Watch("L");
  Apply(Operation{10, op::Acquire{"a", "L", 1'000 + kGrantRoundingTicks}},
        /*inside_tick=*/true);
  const std::vector<WatchEvent> events = Drain(id);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].ttl_ms, 1'000);
}

TEST_F(WatchPublisherTest, ALapseIsPublishedAtItsInstantOnTheWallClock) {
  const WatchHub::WatcherId id = Watch("L");
  Apply(Operation{10, op::Acquire{"a", "L", 100}});
  Apply(Operation{500, op::Advance{}});
  const std::vector<WatchEvent> events = Drain(id);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].kind, WatchEvent::Kind::kLapsed);
  EXPECT_EQ(events[1].at, 110);
  EXPECT_EQ(events[1].wall_time, absl::UnixEpoch() - absl::Milliseconds(390));
}

TEST_F(WatchPublisherTest, WithoutAWatcherEventsAreCountedInTheSequence) {
  Apply(Operation{10, op::Acquire{"a", "L", 1'000}});
  Apply(Operation{20, op::Release{"a", "L"}});
  EXPECT_EQ(hub_.GetStats().sequence, 2u);
  // A refused operation publishes nothing of its own.
  Apply(Operation{30, op::Release{"a", "L"}});
  EXPECT_EQ(hub_.GetStats().sequence, 2u);
}

}  // namespace
}  // namespace leasekeeper::server
