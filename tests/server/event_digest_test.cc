// EventDigest, OwnerClock and OperationApplier alone, with plain ticks: what
// each core event turns into beside the core, how the owner reads time and
// rounds grants, and what every applied operation feeds (counters, watches).
#include "server/event_digest.h"

#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "server/server_errors.h"
#include "tests/server/completion_recorder.h"
#include "tests/server/owner_parts.h"

namespace leasekeeper::server {
namespace {

using testing::CountingSink;
using testing::OwnerParts;
using testing::RecordingCall;

Event MakeEvent(Event::Kind kind, Tick at, const std::string& client,
                FencingToken token = 0, Tick expires_at = 0) {
  Event e;
  e.kind = kind;
  e.at = at;
  e.client = client;
  e.lock = "L";
  e.token = token;
  e.expires_at = expires_at;
  return e;
}

class EventDigestTest : public ::testing::Test {
 protected:
  // Opens a session for `client` whose stream is `sink`.
  void OpenSession(const std::string& client,
                   std::shared_ptr<CountingSink> sink) {
    ASSERT_TRUE(p_.rules.sessions.Open(client, std::move(sink), 0).ok());
  }

  OwnerParts p_;
  OwnerEffects fx_;
};

TEST_F(EventDigestTest, LapseIsCountedAndNoticedToTheHoldersSession) {
  auto sink = std::make_shared<CountingSink>();
  OpenSession("a", sink);
  p_.rules.digest.Digest({MakeEvent(Event::Kind::kLapsed, 5, "a", 3)}, 5, {},
                         fx_);
  ASSERT_EQ(fx_.notices.size(), 1u);
  EXPECT_EQ(fx_.notices[0].first, sink);
  EXPECT_EQ(fx_.notices[0].second.kind, SessionNotice::Kind::kLeaseLapsed);
  EXPECT_EQ(fx_.notices[0].second.token, 3u);
  EXPECT_EQ(p_.rules.counters.counts().lapses, 1u);
}

TEST_F(EventDigestTest, ClientWithoutASessionGetsNoNotice) {
  p_.rules.digest.Digest({MakeEvent(Event::Kind::kLapsed, 5, "a", 3)}, 5, {},
                         fx_);
  EXPECT_TRUE(fx_.notices.empty());
}

TEST_F(EventDigestTest, GrantFromTheQueueAnswersTheParkedCallWithItsWait) {
  RecordingCall call;
  p_.rules.parked.Park({"b", "L"}, &call, "", /*queued_at=*/10,
                       /*deadline=*/100);
  p_.rules.digest.Digest({MakeEvent(Event::Kind::kGrantedFromQueue, 25, "b", 4,
                                    /*expires_at=*/1'025)},
                         /*now=*/30, {}, fx_);
  ASSERT_EQ(fx_.completions.size(), 1u);
  EXPECT_EQ(fx_.completions[0].first, &call);
  const absl::StatusOr<AcquireAnswer>& answer =
      fx_.completions[0].second.result;
  ASSERT_TRUE(answer.ok());
  EXPECT_EQ(answer->kind, AcquireAnswer::Kind::kGranted);
  EXPECT_EQ(answer->token, 4u);
  EXPECT_EQ(answer->waited_ms, 15);
  EXPECT_EQ(answer->ttl_ms, 995);  // what remains at the answer's tick
  EXPECT_FALSE(p_.rules.parked.contains({"b", "L"}));
  EXPECT_EQ(p_.rules.counters.counts().acquire_wait_ms_sum, 15u);
}

TEST_F(EventDigestTest, GrantKeepsTheWaitsLabelAndEveryOtherEndDropsIt) {
  p_.rules.labels.Set({"b", "L"}, "waiting");
  p_.rules.labels.Set({"a", "L"}, "holding");
  p_.rules.digest.Digest(
      {MakeEvent(Event::Kind::kLapsed, 5, "a", 3),
       MakeEvent(Event::Kind::kGrantedFromQueue, 5, "b", 4, 50)},
      5, {}, fx_);
  EXPECT_TRUE(p_.rules.labels.find({"a", "L"}) == p_.rules.labels.end());
  EXPECT_EQ(p_.rules.labels.find({"b", "L"})->second, "waiting");
}

TEST_F(EventDigestTest, AbortedWaiterIsAnsweredDeadlockVictimNamingVictims) {
  RecordingCall call;
  p_.rules.parked.Park({"b", "L"}, &call, "", 0, 100);
  p_.rules.digest.Digest({MakeEvent(Event::Kind::kAbortedWaiter, 5, "b")}, 5,
                         {"b"}, fx_);
  ASSERT_EQ(fx_.completions.size(), 1u);
  EXPECT_EQ(fx_.completions[0].second.result.status(), DeadlockVictim({"b"}));
}

TEST_F(EventDigestTest, WaitWithdrawnBySessionEndAnswersWithdrawnSessionEnded) {
  RecordingCall call;
  p_.rules.parked.Park({"b", "L"}, &call, "", 0, 100);
  p_.rules.digest.Digest({MakeEvent(Event::Kind::kWithdrawnByOwner, 5, "b")}, 5,
                         {}, fx_);
  ASSERT_EQ(fx_.completions.size(), 1u);
  const absl::StatusOr<AcquireAnswer>& answer =
      fx_.completions[0].second.result;
  ASSERT_TRUE(answer.ok());
  EXPECT_EQ(answer->kind, AcquireAnswer::Kind::kWithdrawn);
  EXPECT_EQ(answer->withdraw_cause, WithdrawCause::kSessionEnded);
}

// Parks request "r" of "b" (pending in the retry gate), finishes it with
// `result` and `cache`; returns how a retry of "r" is admitted then.
RetryAdmission RetryAfterFinishing(OwnerParts& p, OwnerEffects& fx,
                                   absl::Status result, bool cache) {
  const Fingerprint fingerprint{.method = Fingerprint::Method::kAcquire,
                                .lock = "L"};
  RecordingCall call;
  p.rules.retries.Begin("b", "r", fingerprint);
  p.rules.parked.Park({"b", "L"}, &call, "r", 0, 100);
  p.rules.digest.FinishParked({"b", "L"}, std::move(result), cache, 7, fx);
  EXPECT_EQ(fx.completions.size(), 1u);
  return p.rules.retries
      .Admit<absl::StatusOr<AcquireAnswer>>("b", "r", fingerprint, 8, false)
      .kind;
}

TEST_F(EventDigestTest, FinishedParkedAnswerIsKeptAsTheRequestsFirstAnswer) {
  EXPECT_EQ(RetryAfterFinishing(p_, fx_, WaitTimedOut(), /*cache=*/true),
            RetryAdmission::kReplay);
  ASSERT_EQ(fx_.completions.size(), 1u);
  EXPECT_TRUE(fx_.completions[0].second.tracked);
}

TEST_F(EventDigestTest, FinishedParkedCallWithoutCacheForgetsItsRequestId) {
  EXPECT_EQ(RetryAfterFinishing(p_, fx_, WaitCancelled(), /*cache=*/false),
            RetryAdmission::kNew);
  ASSERT_EQ(fx_.completions.size(), 1u);
  EXPECT_FALSE(fx_.completions[0].second.tracked);
}

// A clock that answers the readings it was given, in order.
class ScriptedClock final : public Clock {
 public:
  explicit ScriptedClock(std::vector<Reading> readings)
      : readings_(std::move(readings)) {}
  Tick Now() override { return readings_[next_].tick; }
  Reading Read() override { return readings_[next_++]; }
  void SleepUntil(Tick) override {}
  void Interrupt() override {}

 private:
  std::vector<Reading> readings_;
  size_t next_ = 0;
};

TEST(OwnerClockTest, ReadingInsideATickRoundsTheGrantUpButNotItsAnswer) {
  ScriptedClock clock({{.tick = 10, .inside = true}});
  OwnerClock time(clock);
  EXPECT_EQ(time.Read(), 10);
  EXPECT_EQ(time.CoreTtl(1'000), 1'000 + kGrantRoundingTicks);
  EXPECT_EQ(time.SureLeft(10 + 1'000 + kGrantRoundingTicks, 10), 1'000);
}

TEST(OwnerClockTest, ReadingOnATickBoundaryIsNotRounded) {
  ScriptedClock clock({{.tick = 10, .inside = false}});
  OwnerClock time(clock);
  EXPECT_EQ(time.Read(), 10);
  EXPECT_EQ(time.CoreTtl(1'000), 1'000);
  EXPECT_EQ(time.SureLeft(1'010, 10), 1'000);
}

TEST(OwnerClockTest, ReadingBehindTheLatestTickCountsAsItWithoutRounding) {
  ScriptedClock clock(
      {{.tick = 20, .inside = true}, {.tick = 15, .inside = true}});
  OwnerClock time(clock);
  EXPECT_EQ(time.Read(), 20);
  EXPECT_EQ(time.Read(), 20);
  EXPECT_FALSE(time.inside_tick());
  EXPECT_EQ(time.CoreTtl(1'000), 1'000);
}

TEST(OwnerClockTest, TtlOutOfRangeIsLeftForTheCoreToRefuse) {
  ScriptedClock clock({{.tick = 10, .inside = true}});
  OwnerClock time(clock);
  time.Read();
  EXPECT_EQ(time.CoreTtl(0), 0);
  EXPECT_EQ(time.CoreTtl(kMaxTtlMs + 1), kMaxTtlMs + 1);
}

TEST(OwnerClockTest, RecoveredTimeIsNeverGoneBackFrom) {
  ScriptedClock clock({{.tick = 5, .inside = false}});
  OwnerClock time(clock);
  time.ContinueFrom(40);
  EXPECT_EQ(time.Read(), 40);
}

TEST(OperationApplierTest, AppliedOperationIsCountedAndRaisesTheWatchSequence) {
  OwnerParts p;
  const uint64_t before = p.hub.GetStats().sequence;
  ASSERT_TRUE(
      p.rules.applier
          .Apply(Operation{
              p.Read(1), op::Acquire{"a", "L", 1'000, LockMode::kExclusive, 0}})
          .ok());
  EXPECT_EQ(p.rules.counters.counts().acquired_at_once, 1u);
  EXPECT_GT(p.hub.GetStats().sequence, before);
}

TEST(OperationApplierTest, OperationTheCoreRefusesCountsAndPublishesNothing) {
  OwnerParts p;
  const uint64_t before = p.hub.GetStats().sequence;
  EXPECT_FALSE(
      p.rules.applier.Apply(Operation{p.Read(1), op::Release{"a", "L"}}).ok());
  EXPECT_EQ(p.rules.counters.counts().releases, 0u);
  EXPECT_EQ(p.hub.GetStats().sequence, before);
}

}  // namespace
}  // namespace leasekeeper::server
