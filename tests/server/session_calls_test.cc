// SessionCalls and CheckOwnerConsistency alone, with plain ticks: what the
// session calls and a session's end do to the core (leases, waits, streams),
// and which disagreements between the server's indexes and the core the
// consistency check names.
#include "server/session_calls.h"

#include <memory>
#include <optional>
#include <string>

#include "gtest/gtest.h"
#include "server/owner_consistency.h"
#include "server/server_errors.h"
#include "tests/server/completion_recorder.h"
#include "tests/server/owner_parts.h"

namespace leasekeeper::server {
namespace {

using testing::CountingSink;
using testing::OwnerParts;
using testing::RecordingCall;

ServerConfig WithGrace(int64_t grace_ms) {
  ServerConfig config;
  config.session_grace_ms = grace_ms;
  return config;
}

class SessionCallsTest : public ::testing::Test {
 protected:
  explicit SessionCallsTest(int64_t grace_ms = 5'000)
      : p_(WithGrace(grace_ms)) {}

  // Opens a session for "a" at `now` and has it hold "L".
  std::string OpenAndHold(std::shared_ptr<CountingSink> sink, Tick now) {
    absl::StatusOr<SessionOpenedAnswer> opened =
        p_.rules.session_calls.Open("a", "", sink, p_.Read(now), fx_);
    EXPECT_TRUE(opened.ok());
    RecordingCall call;
    EXPECT_TRUE(p_.rules.acquires
                    .Acquire(AcquireArgs{.client = "a",
                                         .lock = "L",
                                         .ttl_ms = 60'000,
                                         .session_id = opened->session_id},
                             &call, false, p_.Read(now), fx_)
                    ->result.ok());
    return opened->session_id;
  }
  bool Holds(const std::string& client) const {
    return p_.machine.table().LeaseOf(client, "L").has_value();
  }

  OwnerParts p_;
  OwnerEffects fx_;
};

TEST_F(SessionCallsTest, OpeningANewSessionEndsThePreviousOneAtOnce) {
  auto first = std::make_shared<CountingSink>();
  const std::string id = OpenAndHold(first, 1);
  auto second = std::make_shared<CountingSink>();
  ASSERT_TRUE(
      p_.rules.session_calls.Open("a", "", second, p_.Read(2), fx_).ok());
  EXPECT_FALSE(Holds("a"));
  ASSERT_EQ(fx_.stream_ends.size(), 1u);
  EXPECT_EQ(fx_.stream_ends[0].first, first);
  EXPECT_EQ(fx_.stream_ends[0].second, SessionEnded());
  EXPECT_EQ(p_.rules.sessions.table().Find(id), nullptr);
}

TEST_F(SessionCallsTest, ResumeKeepsTheLeasesAndEndsTheStreamStillAttached) {
  auto first = std::make_shared<CountingSink>();
  const std::string id = OpenAndHold(first, 1);
  auto second = std::make_shared<CountingSink>();
  absl::StatusOr<SessionOpenedAnswer> resumed =
      p_.rules.session_calls.Open("a", id, second, p_.Read(2), fx_);
  ASSERT_TRUE(resumed.ok());
  EXPECT_TRUE(resumed->resumed);
  EXPECT_TRUE(Holds("a"));
  ASSERT_EQ(fx_.stream_ends.size(), 1u);
  EXPECT_EQ(fx_.stream_ends[0].first, first);
}

TEST_F(SessionCallsTest, KeepaliveRenewsOnlyForTheSinkThatCarriesTheSession) {
  auto sink = std::make_shared<CountingSink>();
  const std::string id = OpenAndHold(sink, 1);
  EXPECT_EQ(*p_.rules.session_calls.Keepalive(id, sink.get(), p_.Read(2), fx_),
            1);
  CountingSink stranger;
  EXPECT_EQ(
      p_.rules.session_calls.Keepalive(id, &stranger, p_.Read(2), fx_).status(),
      SessionEnded());
}

TEST_F(SessionCallsTest, CloseReleasesTheLeasesOnlyForTheCarryingSink) {
  auto sink = std::make_shared<CountingSink>();
  const std::string id = OpenAndHold(sink, 1);
  CountingSink stranger;
  p_.rules.session_calls.Close(id, &stranger, p_.Read(2), fx_);
  EXPECT_TRUE(Holds("a"));
  p_.rules.session_calls.Close(id, sink.get(), p_.Read(2), fx_);
  EXPECT_FALSE(Holds("a"));
  EXPECT_EQ(p_.rules.sessions.table().Find(id), nullptr);
}

TEST_F(SessionCallsTest, LostStreamStartsTheGraceAndKeepsTheLeases) {
  auto sink = std::make_shared<CountingSink>();
  const std::string id = OpenAndHold(sink, 1);
  p_.rules.session_calls.StreamLost(id, p_.Read(2), fx_);
  EXPECT_TRUE(Holds("a"));
  EXPECT_EQ(p_.rules.sessions.table().NextDeadline(), 2 + 5'000);
}

TEST_F(SessionCallsTest, GraceThatRanOutEndsTheSessionAtItsDeadline) {
  auto sink = std::make_shared<CountingSink>();
  const std::string id = OpenAndHold(sink, 1);
  p_.rules.session_calls.StreamLost(id, p_.Read(2), fx_);
  p_.rules.session_calls.GraceEnded(id, 5'002, p_.Read(6'000), fx_);
  EXPECT_FALSE(Holds("a"));
  EXPECT_EQ(p_.rules.counters.counts().sessions_lost, 1u);
  // Idle from the session's end on.
  EXPECT_EQ(p_.machine.table().OldestIdleClient()->since, 5'002);
}

class NoGraceSessionCallsTest : public SessionCallsTest {
 protected:
  NoGraceSessionCallsTest() : SessionCallsTest(0) {}
};

TEST_F(NoGraceSessionCallsTest, LostStreamWithoutGraceEndsTheSessionAtOnce) {
  auto sink = std::make_shared<CountingSink>();
  const std::string id = OpenAndHold(sink, 1);
  p_.rules.session_calls.StreamLost(id, p_.Read(2), fx_);
  EXPECT_FALSE(Holds("a"));
  EXPECT_EQ(p_.rules.sessions.table().Find(id), nullptr);
  EXPECT_EQ(p_.rules.counters.counts().sessions_lost, 0u);  // not by its grace
}

absl::Status Consistency(OwnerParts& p) {
  return CheckOwnerConsistency(p.machine.table(), p.rules.parked,
                               p.rules.labels, p.hub, p.rules.sessions.table(),
                               /*detached_all=*/false);
}

TEST(OwnerConsistencyTest, ParkedCallWithoutAWaitInTheCoreIsNamed) {
  OwnerParts p;
  EXPECT_TRUE(Consistency(p).ok());
  RecordingCall call;
  p.rules.parked.Park({"b", "L"}, &call, "", 0, 100);
  EXPECT_EQ(Consistency(p).code(), absl::StatusCode::kInternal);
}

TEST(OwnerConsistencyTest, LabelWithoutALeaseOrAWaitIsNamed) {
  OwnerParts p;
  p.rules.labels.Set({"a", "L"}, "orphan");
  EXPECT_EQ(Consistency(p).code(), absl::StatusCode::kInternal);
}

TEST(OwnerConsistencyTest, LabelOfAHeldLeaseIsConsistent) {
  OwnerParts p;
  OwnerEffects fx;
  RecordingCall call;
  ASSERT_TRUE(p.rules.acquires
                  .Acquire(AcquireArgs{.client = "a",
                                       .lock = "L",
                                       .ttl_ms = 1'000,
                                       .label = "job-1"},
                           &call, false, p.Read(1), fx)
                  ->result.ok());
  EXPECT_EQ(p.rules.labels.find({"a", "L"})->second, "job-1");
  EXPECT_TRUE(Consistency(p).ok());
}

}  // namespace
}  // namespace leasekeeper::server
