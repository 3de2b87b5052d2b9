// AcquireFlow and LeaseCalls alone, with plain ticks: the steps of an
// Acquire (retry admission, limits, parking) and how a wait ends, and what
// Renew, Release and an operator's forced release do beside the core.
#include "server/acquire_flow.h"

#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/lease_calls.h"
#include "server/owner_consistency.h"
#include "server/server_errors.h"
#include "tests/server/completion_recorder.h"
#include "tests/server/owner_parts.h"

namespace leasekeeper::server {
namespace {

using testing::OwnerParts;
using testing::RecordingCall;

AcquireArgs Args(const std::string& client, int64_t wait_timeout_ms = 0,
                 const std::string& request_id = "") {
  return AcquireArgs{.client = client,
                     .lock = "L",
                     .ttl_ms = 10'000,
                     .wait_timeout_ms = wait_timeout_ms,
                     .request_id = request_id};
}

class AcquireFlowTest : public ::testing::Test {
 protected:
  explicit AcquireFlowTest(ServerConfig config = {}) : p_(std::move(config)) {}

  std::optional<AcquireCallAnswer> Acquire(const AcquireArgs& args,
                                           PendingAcquire* call, Tick now,
                                           bool shutting_down = false) {
    return p_.rules.acquires.Acquire(args, call, shutting_down, p_.Read(now),
                                     fx_);
  }
  // Holds "L" for "a" and parks a waiting Acquire of "b" on `call`.
  void HoldAndPark(RecordingCall& call, const std::string& request_id = "") {
    RecordingCall holder;
    ASSERT_TRUE(Acquire(Args("a"), &holder, 1).has_value());
    ASSERT_FALSE(Acquire(Args("b", 5'000, request_id), &call, 2).has_value());
    ASSERT_TRUE(p_.rules.parked.contains({"b", "L"}));
  }
  absl::Status Consistency() {
    return CheckOwnerConsistency(p_.machine.table(), p_.rules.parked,
                                 p_.rules.labels, p_.hub,
                                 p_.rules.sessions.table(), false);
  }
  void TearDown() override { EXPECT_TRUE(Consistency().ok()) << Consistency(); }

  OwnerParts p_;
  OwnerEffects fx_;
};

TEST_F(AcquireFlowTest, FreeLockIsGrantedAtOnce) {
  RecordingCall call;
  std::optional<AcquireCallAnswer> reply = Acquire(Args("a"), &call, 1);
  ASSERT_TRUE(reply.has_value());
  ASSERT_TRUE(reply->result.ok());
  EXPECT_EQ(reply->result->kind, AcquireAnswer::Kind::kGranted);
  EXPECT_EQ(reply->result->ttl_ms, 10'000);
}

TEST_F(AcquireFlowTest, WaitingAcquireIsParkedAndAnsweredByTheRelease) {
  RecordingCall call;
  HoldAndPark(call);
  absl::StatusOr<ReleaseAnswer> released = p_.rules.leases.Release(
      ReleaseArgs{.client = "a", .lock = "L"}, p_.Read(12), fx_);
  ASSERT_TRUE(released.ok());
  ASSERT_EQ(fx_.completions.size(), 1u);
  EXPECT_EQ(fx_.completions[0].first, &call);
  ASSERT_TRUE(fx_.completions[0].second.result.ok());
  EXPECT_EQ(fx_.completions[0].second.result->kind,
            AcquireAnswer::Kind::kGranted);
  EXPECT_EQ(fx_.completions[0].second.result->waited_ms, 10);
}

TEST_F(AcquireFlowTest, RetryOfAParkedRequestSupersedesTheFirstCall) {
  RecordingCall first;
  HoldAndPark(first, "r");
  RecordingCall retry;
  EXPECT_FALSE(Acquire(Args("b", 5'000, "r"), &retry, 3).has_value());
  ASSERT_EQ(fx_.completions.size(), 1u);
  EXPECT_EQ(fx_.completions[0].first, &first);
  EXPECT_EQ(fx_.completions[0].second.result.status(), SupersededByRetry());
  EXPECT_EQ(p_.rules.parked.Find({"b", "L"})->call, &retry);
}

TEST_F(AcquireFlowTest, RetryThatNoLongerWaitsLearnsItsQueuedPosition) {
  RecordingCall first;
  HoldAndPark(first, "r");
  RecordingCall retry;
  std::optional<AcquireCallAnswer> reply =
      Acquire(Args("b", 0, "r"), &retry, 3);
  ASSERT_TRUE(reply.has_value());
  ASSERT_TRUE(reply->result.ok());
  EXPECT_EQ(reply->result->kind, AcquireAnswer::Kind::kQueued);
  EXPECT_EQ(reply->result->position, 1);
  EXPECT_FALSE(p_.rules.parked.contains({"b", "L"}));
  ASSERT_EQ(fx_.completions.size(), 1u);
  EXPECT_EQ(fx_.completions[0].second.result.status(), SupersededByRetry());
}

TEST_F(AcquireFlowTest, ReplayGetsTheFirstAnswerWithoutApplying) {
  RecordingCall call;
  std::optional<AcquireCallAnswer> first = Acquire(Args("a", 0, "r"), &call, 1);
  const uint64_t applied = p_.rules.counters.counts().acquired_at_once;
  std::optional<AcquireCallAnswer> again = Acquire(Args("a", 0, "r"), &call, 2);
  ASSERT_TRUE(again.has_value());
  EXPECT_TRUE(again->tracked);
  EXPECT_EQ(again->result->token, first->result->token);
  EXPECT_EQ(p_.rules.counters.counts().acquired_at_once, applied);
}

TEST_F(AcquireFlowTest, RequestIdWithOtherArgumentsIsRefusedReused) {
  RecordingCall call;
  ASSERT_TRUE(Acquire(Args("a", 0, "r"), &call, 1).has_value());
  AcquireArgs other = Args("a", 0, "r");
  other.ttl_ms = 20'000;
  std::optional<AcquireCallAnswer> reply = Acquire(other, &call, 2);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->result.status(), RequestIdReused("request_id"));
}

TEST_F(AcquireFlowTest, WaitingAcquireIsRefusedWhileShuttingDown) {
  RecordingCall call;
  std::optional<AcquireCallAnswer> reply =
      Acquire(Args("a", 5'000), &call, 1, /*shutting_down=*/true);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->result.status(), ShuttingDown());
  // One that would not wait is still served.
  EXPECT_TRUE(Acquire(Args("a"), &call, 1, true)->result.ok());
}

class AcquireLimitsTest : public AcquireFlowTest {
 protected:
  static ServerConfig OneWaiter() {
    ServerConfig config;
    config.limits.max_waiters_per_lock = 1;
    return config;
  }
  AcquireLimitsTest() : AcquireFlowTest(OneWaiter()) {}
};

TEST_F(AcquireLimitsTest,
       WaiterLimitRefusesTheNextWaiterButTheTtlErrorComesFirst) {
  RecordingCall a, b, c;
  ASSERT_TRUE(Acquire(Args("a"), &a, 1)->result.ok());
  ASSERT_TRUE(Acquire(Args("b"), &b, 1)->result.ok());  // queued
  std::optional<AcquireCallAnswer> refused = Acquire(Args("c"), &c, 1);
  EXPECT_EQ(refused->result.status(), LimitExceeded("max-waiters-per-lock", 1));
  AcquireArgs bad_ttl = Args("c");
  bad_ttl.ttl_ms = 0;
  const absl::Status ttl_error = Acquire(bad_ttl, &c, 1)->result.status();
  EXPECT_FALSE(ttl_error.ok());
  EXPECT_NE(ttl_error, LimitExceeded("max-waiters-per-lock", 1));
}

TEST_F(AcquireFlowTest, TimedOutWaitIsWithdrawnAndAnsweredWaitTimedOut) {
  RecordingCall call;
  HoldAndPark(call);
  p_.rules.acquires.TimeOut({"b", "L"}, 5'002, p_.Read(5'002), fx_);
  ASSERT_EQ(fx_.completions.size(), 1u);
  EXPECT_EQ(fx_.completions[0].second.result.status(), WaitTimedOut());
  EXPECT_FALSE(p_.machine.table().WaitingFor("b").has_value());
}

TEST_F(AcquireFlowTest, CancelledWaitIsWithdrawnOnlyForTheCallParked) {
  RecordingCall call;
  HoldAndPark(call);
  RecordingCall other;
  p_.rules.acquires.CancelWait("b", "L", &other, p_.Read(3), fx_);
  EXPECT_TRUE(p_.rules.parked.contains({"b", "L"}));
  p_.rules.acquires.CancelWait("b", "L", &call, p_.Read(3), fx_);
  ASSERT_EQ(fx_.completions.size(), 1u);
  EXPECT_EQ(fx_.completions[0].second.result.status(), WaitCancelled());
  EXPECT_FALSE(p_.machine.table().WaitingFor("b").has_value());
}

TEST_F(AcquireFlowTest, UndeliveredGrantIsReleasedAgain) {
  RecordingCall call;
  std::optional<AcquireCallAnswer> reply = Acquire(Args("a"), &call, 1);
  p_.rules.acquires.CallFinished(Args("a"), *reply, /*cancelled=*/true,
                                 p_.Read(2), fx_);
  EXPECT_FALSE(p_.machine.table().LeaseOf("a", "L").has_value());
}

TEST_F(AcquireFlowTest, DeliveredGrantIsKept) {
  RecordingCall call;
  std::optional<AcquireCallAnswer> reply = Acquire(Args("a"), &call, 1);
  p_.rules.acquires.CallFinished(Args("a"), *reply, /*cancelled=*/false,
                                 p_.Read(2), fx_);
  EXPECT_TRUE(p_.machine.table().LeaseOf("a", "L").has_value());
}

TEST_F(AcquireFlowTest, ShutdownWithdrawsEveryParkedCall) {
  RecordingCall call;
  HoldAndPark(call);
  p_.rules.acquires.WithdrawAll(p_.Read(3), fx_);
  ASSERT_EQ(fx_.completions.size(), 1u);
  EXPECT_EQ(fx_.completions[0].second.result.status(), ShuttingDown());
  EXPECT_EQ(p_.rules.parked.size(), 0u);
}

TEST_F(AcquireFlowTest, ReleaseOfAWaitAnswersItsParkedCallWithdrawnByClient) {
  RecordingCall call;
  HoldAndPark(call);
  absl::StatusOr<ReleaseAnswer> released = p_.rules.leases.Release(
      ReleaseArgs{.client = "b", .lock = "L"}, p_.Read(3), fx_);
  ASSERT_TRUE(released.ok());
  EXPECT_EQ(*released, ReleaseAnswer::kWithdrawn);
  ASSERT_EQ(fx_.completions.size(), 1u);
  EXPECT_EQ(fx_.completions[0].second.result->withdraw_cause,
            WithdrawCause::kReleasedByClient);
}

TEST_F(AcquireFlowTest, RenewRetryGetsTheFirstAnswer) {
  RecordingCall call;
  ASSERT_TRUE(Acquire(Args("a"), &call, 1)->result.ok());
  const RenewArgs renew{
      .client = "a", .lock = "L", .ttl_ms = 10'000, .request_id = "r"};
  absl::StatusOr<RenewAnswer> first =
      p_.rules.leases.Renew(renew, p_.Read(2), fx_);
  absl::StatusOr<RenewAnswer> again =
      p_.rules.leases.Renew(renew, p_.Read(9), fx_);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->ttl_ms, first->ttl_ms);
  EXPECT_EQ(p_.rules.counters.counts().renewals, 1u);
}

TEST_F(AcquireFlowTest, ForcedReleaseEndsTheHolderButNotTheWaiterItGrants) {
  RecordingCall a, b;
  ASSERT_TRUE(Acquire(Args("a"), &a, 1)->result.ok());
  ASSERT_TRUE(Acquire(Args("b"), &b, 1)->result.ok());  // queued
  absl::StatusOr<std::vector<ForcedRelease>> released =
      p_.rules.leases.ForceRelease("L", "", p_.Read(2), fx_);
  ASSERT_TRUE(released.ok());
  ASSERT_EQ(released->size(), 1u);
  EXPECT_EQ((*released)[0].client, "a");
  EXPECT_TRUE(p_.machine.table().LeaseOf("b", "L").has_value());
  EXPECT_EQ(p_.rules.counters.counts().forced_releases, 1u);
}

TEST_F(AcquireFlowTest,
       ForcedReleaseOfNoMatchingLeaseSaysWhomTheLockIsNotHeldBy) {
  RecordingCall a;
  ASSERT_TRUE(Acquire(Args("a"), &a, 1)->result.ok());
  absl::StatusOr<std::vector<ForcedRelease>> released =
      p_.rules.leases.ForceRelease("L", "z", p_.Read(2), fx_);
  EXPECT_EQ(released.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(released.status().message(), "L is not held by z");
  EXPECT_TRUE(p_.machine.table().LeaseOf("a", "L").has_value());
}

}  // namespace
}  // namespace leasekeeper::server
