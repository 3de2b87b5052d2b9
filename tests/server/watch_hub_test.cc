// WatchHub alone (events with ticks, positions for durability), then
// through CoreOwner on a fake clock and a fake log: the snapshot and the
// first events without gap or duplicate, events only once durable, every
// kind of change. No gRPC.
#include "server/watch_hub.h"

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/clock.h"
#include "server/core_owner.h"
#include "server/server_errors.h"
#include "tests/server/completion_recorder.h"
#include "tests/server/fake_operation_log.h"
#include "tests/server/watch_events.h"

namespace leasekeeper::server {
namespace {

using storage::LogPosition;

class CountingSink final : public WatchSink {
 public:
  void Wake() override { ++wakes; }
  int wakes = 0;
};

WatchEvent Granted(const std::string& lock, const std::string& client,
                   FencingToken token, Tick at = 0) {
  return WatchEvent{.kind = WatchEvent::Kind::kGranted,
                    .lock = lock,
                    .client = client,
                    .token = token,
                    .ttl_ms = 1'000,
                    .at = at};
}

class WatchHubTest : public ::testing::Test {
 protected:
  void TearDown() override {
    EXPECT_TRUE(hub_.CheckInvariants().ok()) << hub_.CheckInvariants();
  }

  WatchHub::WatcherId Watch(const std::string& name, bool prefix,
                            std::shared_ptr<CountingSink> sink = nullptr) {
    if (sink == nullptr) sink = std::make_shared<CountingSink>();
    absl::StatusOr<WatchHub::Subscribed> subscribed =
        hub_.Subscribe(WatchTarget{.name = name, .prefix = prefix}, sink);
    EXPECT_TRUE(subscribed.ok()) << subscribed.status();
    return subscribed.ok() ? subscribed->id : 0;
  }

  // Every event the watcher can take now, in order.
  std::vector<WatchEvent> Drain(WatchHub::WatcherId id) {
    return testing::DrainWatcher(hub_, id);
  }

  WatchHub hub_{WatchHub::Options{
      .max_watchers = 4, .max_prefix_watchers = 2, .buffer_events = 3}};
};

TEST_F(WatchHubTest, AWatcherMayBufferUpToTheLimitAndIsCutByTheNextEvent) {
  const WatchHub::WatcherId id = Watch("L", /*prefix=*/false);
  for (FencingToken t = 1; t <= 3; ++t) hub_.Publish(Granted("L", "a", t), 0);
  EXPECT_EQ(hub_.GetStats().cut, 0u);
  hub_.Publish(Granted("L", "a", 4), 0);
  WatchHub::Next next = hub_.Take(id);
  // The buffered events are dropped: a watcher sees every change or none.
  EXPECT_FALSE(next.event.has_value());
  ASSERT_TRUE(next.end.has_value());
  EXPECT_EQ(next.end->code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(next.end->message(), "watch fell behind");
  const ErrorInfo info = ErrorInfoOf(*next.end);
  EXPECT_EQ(info.reason, v1::WATCH_FELL_BEHIND);
  EXPECT_EQ(info.limit, "watch-buffer-events");
  EXPECT_EQ(info.limit_value, 3);
  EXPECT_EQ(hub_.GetStats().cut, 1u);
  EXPECT_EQ(hub_.GetStats().watchers, 0u);
  // It keeps answering the end until unsubscribed.
  EXPECT_TRUE(hub_.Take(id).end.has_value());
}

TEST_F(WatchHubTest, ACutWatcherCostsLaterEventsNothingAndOthersGetThemAll) {
  const WatchHub::WatcherId slow = Watch("L", false);
  const WatchHub::WatcherId fast = Watch("L", false);
  std::vector<WatchEvent> seen;
  for (FencingToken t = 1; t <= 10; ++t) {
    hub_.Publish(Granted("L", "a", t), 0);
    for (WatchEvent& e : Drain(fast)) seen.push_back(e);
  }
  ASSERT_EQ(seen.size(), 10u);
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i].token, i + 1);
  EXPECT_TRUE(hub_.Take(slow).end.has_value());
  EXPECT_EQ(hub_.GetStats().watchers, 1u);
  EXPECT_EQ(hub_.GetStats().cut, 1u);
}

TEST_F(WatchHubTest, ACutWatcherFreesItsSlotUnderTheWatcherLimit) {
  for (int i = 0; i < 4; ++i) Watch("L" + std::to_string(i), false);
  absl::StatusOr<WatchHub::Subscribed> refused = hub_.Subscribe(
      WatchTarget{.name = "M"}, std::make_shared<CountingSink>());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(ErrorInfoOf(refused.status()).limit, "max-watchers");
  for (FencingToken t = 1; t <= 4; ++t) hub_.Publish(Granted("L0", "a", t), 0);
  EXPECT_TRUE(hub_.Subscribe(WatchTarget{.name = "M"},
                             std::make_shared<CountingSink>())
                  .ok());
}

TEST_F(WatchHubTest, PrefixWatchersAreLimitedApartFromAllWatchers) {
  Watch("a/", true);
  Watch("b/", true);
  absl::StatusOr<WatchHub::Subscribed> refused = hub_.Subscribe(
      WatchTarget{.name = "c/", .prefix = true},
      std::make_shared<CountingSink>());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ErrorInfoOf(refused.status()).limit, "max-prefix-watchers");
  EXPECT_EQ(hub_.GetStats().prefix_watchers, 2u);
  // An exact watch still fits under max-watchers.
  Watch("c/x", false);
}

TEST_F(WatchHubTest, APrefixMatchesExactlyTheNamesThatStartWithIt) {
  const WatchHub::WatcherId jobs = Watch("jobs/", true);
  const WatchHub::WatcherId all = Watch("", true);
  const WatchHub::WatcherId exact = Watch("jobs/a", false);
  for (const char* lock : {"jobs/a", "jobs", "jobs/", "jobsx/a", "jobs/a/b"}) {
    hub_.Publish(Granted(lock, "c", 1), 0);
    // Drained as they come, so nobody falls behind.
    for (WatchHub::WatcherId id : {jobs, all, exact}) {
      for (WatchEvent& e : Drain(id)) {
        if (id == jobs) {
          EXPECT_TRUE(e.lock.rfind("jobs/", 0) == 0) << e.lock;
        }
        if (id == exact) {
          EXPECT_EQ(e.lock, "jobs/a");
        }
      }
    }
  }
  EXPECT_EQ(hub_.GetStats().cut, 0u);
  // Counted: jobs/ saw 3, "" saw all 5, the exact watch 1.
  WatchHub counting{WatchHub::Options{.buffer_events = 10}};
  auto sink = std::make_shared<CountingSink>();
  const WatchHub::WatcherId p =
      counting.Subscribe(WatchTarget{.name = "jobs/", .prefix = true}, sink)
          ->id;
  const WatchHub::WatcherId e =
      counting.Subscribe(WatchTarget{.name = "jobs/a"}, sink)->id;
  const WatchHub::WatcherId a =
      counting.Subscribe(WatchTarget{.name = "", .prefix = true}, sink)->id;
  for (const char* lock : {"jobs/a", "jobs", "jobs/", "jobsx/a", "jobs/a/b"}) {
    counting.Publish(Granted(lock, "c", 1), 0);
  }
  auto count = [&](WatchHub::WatcherId id) {
    int n = 0;
    while (counting.Take(id).event.has_value()) ++n;
    return n;
  };
  EXPECT_EQ(count(p), 3);
  EXPECT_EQ(count(e), 1);
  EXPECT_EQ(count(a), 5);
  EXPECT_TRUE(counting.CheckInvariants().ok());
}

TEST_F(WatchHubTest, EventsArriveInPublishOrderWithSequenceRisingByOne) {
  const WatchHub::WatcherId id = Watch("", true);
  hub_.Publish(Granted("x", "a", 1, 10), 0);
  hub_.Publish(Granted("other", "b", 1, 11), 0);
  hub_.Publish(Granted("x", "c", 2, 12), 0);
  std::vector<WatchEvent> events = Drain(id);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].client, "a");
  EXPECT_EQ(events[1].client, "b");
  EXPECT_EQ(events[2].client, "c");
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].sequence, i + 1);
    EXPECT_EQ(events[i].at, static_cast<Tick>(10 + i));
  }
}

TEST_F(WatchHubTest, SubscribeAnswersTheLastSequenceSoTheFirstEventFollowsIt) {
  hub_.Publish(Granted("L", "a", 1), 0);
  hub_.Publish(Granted("L", "b", 2), 0);
  absl::StatusOr<WatchHub::Subscribed> subscribed = hub_.Subscribe(
      WatchTarget{.name = "L"}, std::make_shared<CountingSink>());
  ASSERT_TRUE(subscribed.ok());
  EXPECT_EQ(subscribed->sequence, 2u);
  EXPECT_TRUE(Drain(subscribed->id).empty());  // nothing from before
  hub_.Publish(Granted("L", "c", 3), 0);
  std::vector<WatchEvent> events = Drain(subscribed->id);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].sequence, 3u);
}

TEST_F(WatchHubTest, AnEventIsTakenOnlyOnceItsPositionIsDurable) {
  auto sink = std::make_shared<CountingSink>();
  const WatchHub::WatcherId id = Watch("L", false, sink);
  EXPECT_FALSE(hub_.Take(id).event.has_value());  // waits: owed a wake
  hub_.Publish(Granted("L", "a", 1), /*position=*/5);
  EXPECT_EQ(sink->wakes, 0);  // Publish never calls a sink
  EXPECT_TRUE(hub_.AwaitsDurable());
  hub_.MarkDurable(4);
  EXPECT_EQ(sink->wakes, 0);
  EXPECT_FALSE(hub_.Take(id).event.has_value());
  hub_.MarkDurable(5);
  EXPECT_EQ(sink->wakes, 1);
  EXPECT_FALSE(hub_.AwaitsDurable());
  WatchHub::Next next = hub_.Take(id);
  ASSERT_TRUE(next.event.has_value());
  EXPECT_EQ(next.event->token, 1u);
  // A lower position later changes nothing.
  hub_.MarkDurable(3);
  hub_.Publish(Granted("L", "a", 2), 5);
  EXPECT_TRUE(hub_.Take(id).event.has_value());
}

TEST_F(WatchHubTest, AWatcherIsWokenOncePerWaitNotPerEvent) {
  auto sink = std::make_shared<CountingSink>();
  const WatchHub::WatcherId id = Watch("L", false, sink);
  EXPECT_FALSE(hub_.Take(id).event.has_value());
  hub_.Publish(Granted("L", "a", 1), 0);
  hub_.Publish(Granted("L", "a", 2), 0);
  hub_.MarkDurable(0);
  hub_.MarkDurable(0);
  EXPECT_EQ(sink->wakes, 1);
  // It takes one event and is busy sending it (one left buffered): a
  // watcher that is not waiting is not woken by events ...
  ASSERT_TRUE(hub_.Take(id).event.has_value());
  hub_.Publish(Granted("L", "a", 3), 0);
  hub_.MarkDurable(0);
  EXPECT_EQ(sink->wakes, 1);
  // ... but is when it is cut, so that it can stop a send that hangs.
  for (FencingToken t = 4; t <= 5; ++t) hub_.Publish(Granted("L", "a", t), 0);
  hub_.MarkDurable(0);
  EXPECT_EQ(sink->wakes, 2);
  EXPECT_TRUE(hub_.Take(id).end.has_value());
  // An empty Take makes it wait again: the next event wakes it.
  const WatchHub::WatcherId other = Watch("M", false, sink);
  EXPECT_FALSE(hub_.Take(other).event.has_value());
  hub_.Publish(Granted("M", "a", 1), 0);
  hub_.MarkDurable(0);
  EXPECT_EQ(sink->wakes, 3);
}

TEST_F(WatchHubTest, EndAllEndsEveryWatcherAndRefusesLaterOnes) {
  auto sink = std::make_shared<CountingSink>();
  const WatchHub::WatcherId id = Watch("L", false, sink);
  hub_.Publish(Granted("L", "a", 1), 0);
  hub_.EndAll(ShuttingDown());
  EXPECT_EQ(sink->wakes, 1);
  WatchHub::Next next = hub_.Take(id);
  EXPECT_FALSE(next.event.has_value());
  ASSERT_TRUE(next.end.has_value());
  EXPECT_EQ(ErrorInfoOf(*next.end).reason, v1::SHUTTING_DOWN);
  absl::StatusOr<WatchHub::Subscribed> later = hub_.Subscribe(
      WatchTarget{.name = "L"}, std::make_shared<CountingSink>());
  ASSERT_FALSE(later.ok());
  EXPECT_EQ(ErrorInfoOf(later.status()).reason, v1::SHUTTING_DOWN);
}

TEST_F(WatchHubTest, AnUnsubscribedWatcherLeavesNoTrace) {
  const WatchHub::WatcherId id = Watch("p/", true);
  hub_.Unsubscribe(id);
  hub_.Unsubscribe(id);  // idempotent
  EXPECT_EQ(hub_.GetStats().watchers, 0u);
  EXPECT_EQ(hub_.GetStats().prefix_watchers, 0u);
  hub_.Publish(Granted("p/x", "a", 1), 0);
  EXPECT_EQ(hub_.Take(id).end->code(), absl::StatusCode::kNotFound);
}

// ---------------------------------------------------------------------------
// Through CoreOwner: fake clock, fake log that holds durability back.

class CoreWatchTest : public ::testing::Test {
 protected:
  CoreWatchTest() : owner_(ServerConfig{}, clock_) {
    auto log = std::make_unique<testing::FakeOperationLog>();
    log_ = log.get();
    EXPECT_TRUE(owner_.OpenStorage(std::move(log)).ok());
  }
  void TearDown() override {
    EXPECT_TRUE(owner_.watch_hub().CheckInvariants().ok());
    EXPECT_TRUE(owner_.CheckConsistency().ok());
  }

  // Answered once durable (the fake log holds that back): the calls and
  // completions live as long as the test.
  void Acquire(const std::string& client, const std::string& lock,
               int64_t ttl_ms = 60'000) {
    owner_.Acquire(
        AcquireArgs{.client = client, .lock = lock, .ttl_ms = ttl_ms},
        &calls_.emplace_back());
  }
  void Release(const std::string& client, const std::string& lock) {
    owner_.Lease(Ask(ReleaseArgs{.client = client, .lock = lock},
                     releases_.emplace_back().Callback()));
  }
  WatchStart Watch(const std::string& name, bool prefix) {
    absl::StatusOr<WatchStart> start =
        owner_.Watch(WatchTarget{.name = name, .prefix = prefix}, sink_);
    EXPECT_TRUE(start.ok()) << start.status();
    return start.ok() ? *std::move(start) : WatchStart{};
  }
  std::vector<WatchEvent> Events(WatchHub::WatcherId id) {
    std::vector<WatchEvent> events;
    while (std::optional<WatchEvent> e = owner_.watch_hub().Take(id).event) {
      events.push_back(*e);
    }
    return events;
  }
  std::vector<WatchEvent> DurableEvents(WatchHub::WatcherId id) {
    log_->MakeDurable(log_->last_position());
    return Events(id);
  }

  FakeClock clock_{100};
  CoreOwner owner_;
  testing::FakeOperationLog* log_ = nullptr;
  std::shared_ptr<CountingSink> sink_ = std::make_shared<CountingSink>();
  std::deque<testing::RecordingCall> calls_;
  std::deque<testing::CompletionRecorder<absl::StatusOr<ReleaseAnswer>>>
      releases_;
};

TEST_F(CoreWatchTest, TheSnapshotHoldsTheStateAndEventsContinueWithoutGap) {
  Acquire("a", "L");
  Acquire("b", "L");  // queued behind a
  log_->MakeDurable(log_->last_position());
  const uint64_t before = owner_.watch_hub().GetStats().sequence;
  WatchStart start = Watch("L", false);
  EXPECT_EQ(start.sequence, before);
  ASSERT_EQ(start.locks.size(), 1u);
  ASSERT_EQ(start.locks[0].holders.size(), 1u);
  EXPECT_EQ(start.locks[0].holders[0].view.client, "a");
  ASSERT_EQ(start.locks[0].queue.size(), 1u);
  EXPECT_EQ(start.locks[0].queue[0].view.client, "b");
  EXPECT_TRUE(Events(start.id).empty());  // nothing of the snapshot again

  Release("a", "L");
  std::vector<WatchEvent> events = DurableEvents(start.id);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].kind, WatchEvent::Kind::kReleased);
  EXPECT_EQ(events[0].client, "a");
  EXPECT_EQ(events[0].token, 1u);
  EXPECT_EQ(events[1].kind, WatchEvent::Kind::kGranted);
  EXPECT_EQ(events[1].client, "b");
  EXPECT_EQ(events[1].token, 2u);
  // The first event is the first change after the snapshot.
  EXPECT_EQ(events[0].sequence, start.sequence + 1);
  EXPECT_EQ(events[1].sequence, start.sequence + 2);
}

TEST_F(CoreWatchTest, NoEventIsTakenBeforeItsRecordIsDurable) {
  WatchStart start = Watch("L", false);
  EXPECT_TRUE(Events(start.id).empty());
  const int wakes = sink_->wakes;
  Acquire("a", "L");
  EXPECT_TRUE(Events(start.id).empty());
  EXPECT_EQ(sink_->wakes, wakes);
  log_->MakeDurable(log_->last_position());
  EXPECT_EQ(sink_->wakes, wakes + 1);
  std::vector<WatchEvent> events = Events(start.id);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, WatchEvent::Kind::kGranted);
}

TEST_F(CoreWatchTest, ALapseIsReportedAtItsExpiryInstant) {
  WatchStart start = Watch("L", false);
  Acquire("a", "L", /*ttl_ms=*/500);
  Acquire("b", "L", 700);
  clock_.Advance(600);
  owner_.RunDueTimers();
  std::vector<WatchEvent> events = DurableEvents(start.id);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].kind, WatchEvent::Kind::kGranted);
  EXPECT_EQ(events[0].at, 100);
  EXPECT_EQ(events[0].ttl_ms, 500);
  EXPECT_EQ(events[1].kind, WatchEvent::Kind::kQueued);
  EXPECT_EQ(events[1].client, "b");
  EXPECT_EQ(events[1].ttl_ms, 700);
  EXPECT_EQ(events[2].kind, WatchEvent::Kind::kLapsed);
  EXPECT_EQ(events[2].at, 600);
  EXPECT_EQ(events[3].kind, WatchEvent::Kind::kGranted);
  EXPECT_EQ(events[3].client, "b");
  EXPECT_EQ(events[3].at, 600);  // handed on at that exact instant
}

TEST_F(CoreWatchTest, AGrantInsideATickReportsTheTtlAskedFor) {
  WatchStart start = Watch("L", false);
  clock_.SetInside(200);  // the server adds a tick to such a lease
  Acquire("a", "L", 500);
  Acquire("b", "L", 700);
  std::vector<WatchEvent> events = DurableEvents(start.id);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].ttl_ms, 500);
  EXPECT_EQ(events[1].ttl_ms, 700);
}

TEST_F(CoreWatchTest, WithdrawalForcedReleaseAndDeadlockAbortAreEvents) {
  WatchStart start = Watch("", true);
  Acquire("a", "L");
  Acquire("b", "M");
  Acquire("b", "L");  // b waits for L (held by a)
  Release("b", "L");  // withdrawn
  Acquire("b", "L");
  // a waits for M, held by b, which waits for L held by a: a cycle. The
  // youngest client on it (b) is aborted.
  Acquire("a", "M");
  testing::CompletionRecorder<
      absl::StatusOr<std::vector<CoreOwner::ForcedRelease>>>
      forced;
  owner_.Lease(
      Ask(ForceReleaseArgs{.lock = "L", .client = "a"}, forced.Callback()));
  std::vector<WatchEvent> events = DurableEvents(start.id);
  ASSERT_TRUE(forced.answered());
  EXPECT_TRUE(forced.answer().ok()) << forced.answer().status();
  std::vector<std::pair<WatchEvent::Kind, std::string>> seen;
  for (const WatchEvent& e : events) seen.emplace_back(e.kind, e.client);
  using K = WatchEvent::Kind;
  const std::vector<std::pair<WatchEvent::Kind, std::string>> expected = {
      {K::kGranted, "a"},        {K::kGranted, "b"},
      {K::kQueued, "b"},         {K::kWithdrawn, "b"},
      {K::kQueued, "b"},         {K::kDeadlockAbort, "b"},  // its wait on L
      {K::kDeadlockAbort, "b"},  // its lease on M
      {K::kGranted, "a"},        // M, freed by the abort
      {K::kForcedRelease, "a"},
  };
  EXPECT_EQ(seen, expected);
  EXPECT_EQ(events[5].lock, "L");
  EXPECT_EQ(events[5].token, 0u);
  EXPECT_EQ(events[6].lock, "M");
  EXPECT_EQ(events[6].token, 1u);
  EXPECT_EQ(events[7].lock, "M");
  EXPECT_EQ(events[7].token, 2u);
  EXPECT_EQ(events[8].lock, "L");
  EXPECT_EQ(events[8].token, 1u);
}

// Without a watcher the events are counted, not made: the sequence rises
// by as much as the events a watcher of the same changes sees.
TEST_F(CoreWatchTest, TheSequenceRisesAsMuchWithoutAWatcher) {
  testing::CompletionRecorder<
      absl::StatusOr<std::vector<CoreOwner::ForcedRelease>>>
      forced[2];
  int round = 0;
  auto changes = [&](const std::string& p) {
    const uint64_t before = owner_.watch_hub().GetStats().sequence;
    Acquire(p + "a", p + "L");
    Acquire(p + "b", p + "M");
    Acquire(p + "b", p + "L");  // queued
    Release(p + "b", p + "L");  // withdrawn
    Acquire(p + "b", p + "L");
    Acquire(p + "a", p + "M");  // a cycle: b is aborted, a gets M
    owner_.Lease(Ask(ForceReleaseArgs{.lock = p + "L", .client = p + "a"},
                     forced[round++].Callback()));
    Acquire(p + "c", p + "N", /*ttl_ms=*/500);
    Acquire(p + "d", p + "N", 700);  // queued
    clock_.Advance(600);             // c lapses, d is granted N ...
    Release(p + "d", p + "N");       // ... and lets it go
    Release(p + "a", p + "M");
    log_->MakeDurable(log_->last_position());
    return owner_.watch_hub().GetStats().sequence - before;
  };
  const uint64_t unwatched = changes("u/");
  WatchStart start = Watch("w/", true);
  const uint64_t watched = changes("w/");
  EXPECT_EQ(watched, Events(start.id).size());
  EXPECT_GE(watched, 12u);
  EXPECT_EQ(unwatched, watched);
}

TEST_F(CoreWatchTest, APrefixSnapshotListsOnlyMatchingLocksInUse) {
  Acquire("a", "jobs/1");
  Acquire("b", "jobs/2");
  Acquire("c", "other");
  Release("b", "jobs/2");
  WatchStart start = Watch("jobs/", true);
  ASSERT_EQ(start.locks.size(), 1u);
  EXPECT_EQ(start.locks[0].name, "jobs/1");
}

TEST_F(CoreWatchTest, AStoreFailureEndsEveryWatcher) {
  WatchStart start = Watch("L", false);
  Acquire("a", "L");
  log_->Fail(absl::DataLossError("disk gone"));
  WatchHub::Next next = owner_.watch_hub().Take(start.id);
  EXPECT_FALSE(next.event.has_value());
  ASSERT_TRUE(next.end.has_value());
  EXPECT_EQ(next.end->code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace leasekeeper::server
