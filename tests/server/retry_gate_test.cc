// RetryGate alone, on a FakeOperationLog, with ticks for time: what a retry
// of Acquire, Renew or Release is answered, what is logged, and when an
// Acquire's answer counts as undelivered.
#include "server/retry_gate.h"

#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "gtest/gtest.h"
#include "server/retry_entry_codec.h"
#include "tests/server/fake_operation_log.h"

namespace leasekeeper::server {
namespace {

using testing::FakeOperationLog;

using AcquireResult = absl::StatusOr<AcquireAnswer>;
using RenewResult = absl::StatusOr<RenewAnswer>;

const Fingerprint kAcquireL{.method = Fingerprint::Method::kAcquire,
                            .lock = "L",
                            .ttl_ms = 5'000};
const Fingerprint kRenewL{
    .method = Fingerprint::Method::kRenew, .lock = "L", .ttl_ms = 5'000};

AcquireAnswer Granted(FencingToken token) {
  AcquireAnswer answer;
  answer.kind = AcquireAnswer::Kind::kGranted;
  answer.token = token;
  return answer;
}

class RetryGateTest : public ::testing::Test {
 protected:
  RetryGateTest()
      : machine_(CoreConfig{}, [] { return storage::ServerState{}; }),
        gate_(RetryCacheConfig{.ttl_ms = 1'000, .max_entries = 10},
              machine_) {
    auto log = std::make_unique<FakeOperationLog>();
    log_ = log.get();
    EXPECT_TRUE(machine_.UseLog(std::move(log)).ok());
  }

  std::vector<storage::ServerRecord> Records() const {
    return log_->server_records();
  }

  // Applies a granted Acquire "r" of client "c" at tick 10, as the owner
  // would; returns whether its answer is tracked.
  bool GrantFirstAcquire() {
    EXPECT_EQ(gate_.Admit<AcquireResult>("c", "r", kAcquireL, 10, false).kind,
              RetryAdmission::kNew);
    gate_.Begin("c", "r", kAcquireL);
    return gate_.Answer("c", "r", AcquireResult(Granted(7)), 10);
  }

  DurableStateMachine machine_;
  RetryGate gate_;
  FakeOperationLog* log_ = nullptr;
};

TEST_F(RetryGateTest, ReplayOfAFinishedRequestReturnsItsFirstAnswer) {
  ASSERT_TRUE(GrantFirstAcquire());
  const auto replay = gate_.Admit<AcquireResult>("c", "r", kAcquireL, 500, false);
  ASSERT_EQ(replay.kind, RetryAdmission::kReplay);
  ASSERT_TRUE(replay.first.has_value());
  ASSERT_TRUE(replay.first->ok());
  EXPECT_EQ((*replay.first)->token, 7u);
}

TEST_F(RetryGateTest, AReplayWithAnotherAnswerTypeIsAReusedId) {
  gate_.Begin("c", "r", kRenewL);
  gate_.Answer("c", "r", RenewResult(RenewAnswer{.token = 3}), 10);
  // Same fingerprint, asked for as another method's answer.
  EXPECT_EQ(gate_.Admit<AcquireResult>("c", "r", kRenewL, 20, false).kind,
            RetryAdmission::kReused);
}

TEST_F(RetryGateTest, AWaitingFirstCallMakesTheRetryInFlight) {
  gate_.Begin("c", "r", kAcquireL);
  EXPECT_EQ(gate_.Admit<AcquireResult>("c", "r", kAcquireL, 20, true).kind,
            RetryAdmission::kInFlight);
  // Its call gone, the retry takes the id over and applies afresh.
  EXPECT_EQ(gate_.Admit<AcquireResult>("c", "r", kAcquireL, 20, false).kind,
            RetryAdmission::kNew);
  EXPECT_EQ(gate_.size(), 0u);
}

TEST_F(RetryGateTest, AnAnswerIsLoggedSoARestartReplaysIt) {
  ASSERT_TRUE(GrantFirstAcquire());
  const std::vector<storage::ServerRecord> records = Records();
  ASSERT_EQ(records.size(), 1u);
  const auto* answered =
      std::get_if<storage::srec::RetryAnswered>(&records[0].body);
  ASSERT_NE(answered, nullptr);
  EXPECT_EQ(records[0].at, 10);
  EXPECT_EQ(answered->client, "c");
  EXPECT_EQ(answered->request_id, "r");
  absl::StatusOr<DecodedRetryEntry> entry = DecodeRetryEntry(answered->entry);
  ASSERT_TRUE(entry.ok());
  EXPECT_EQ(entry->fingerprint, kAcquireL);
}

TEST_F(RetryGateTest, OnlyAnAcquiresAnswerIsTracked) {
  gate_.Begin("c", "renew", kRenewL);
  EXPECT_FALSE(gate_.Answer("c", "renew", RenewResult(RenewAnswer{}), 10));
  // An evicted or forgotten entry tracks nothing either.
  EXPECT_FALSE(gate_.Answer("c", "gone", AcquireResult(Granted(1)), 10));
}

TEST_F(RetryGateTest, ACancelledOnlyDeliveryIsUndeliveredAndForgotten) {
  ASSERT_TRUE(GrantFirstAcquire());
  EXPECT_TRUE(gate_.CallFinished("c", "r", /*cancelled=*/true, 20));
  EXPECT_EQ(gate_.Admit<AcquireResult>("c", "r", kAcquireL, 30, false).kind,
            RetryAdmission::kNew);
  const std::vector<storage::ServerRecord> records = Records();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_TRUE(
      std::holds_alternative<storage::srec::RetryForgotten>(records[1].body));
}

TEST_F(RetryGateTest, AReplayThatDeliversKeepsTheAnswerOfACancelledFirstCall) {
  ASSERT_TRUE(GrantFirstAcquire());
  // A retry is handed the same answer while the first call still runs.
  ASSERT_EQ(gate_.Admit<AcquireResult>("c", "r", kAcquireL, 15, false).kind,
            RetryAdmission::kReplay);
  EXPECT_FALSE(gate_.CallFinished("c", "r", /*cancelled=*/true, 20));
  EXPECT_FALSE(gate_.CallFinished("c", "r", /*cancelled=*/false, 20));
  // Delivered once: a later cancelled replay undoes nothing.
  ASSERT_EQ(gate_.Admit<AcquireResult>("c", "r", kAcquireL, 25, false).kind,
            RetryAdmission::kReplay);
  EXPECT_FALSE(gate_.CallFinished("c", "r", /*cancelled=*/true, 30));
}

TEST_F(RetryGateTest, AnExpiredEntryLeavesACancelledCallUndelivered) {
  ASSERT_TRUE(GrantFirstAcquire());
  EXPECT_TRUE(gate_.CallFinished("c", "r", /*cancelled=*/true, 1'010));
  EXPECT_FALSE(gate_.CallFinished("c", "r", /*cancelled=*/false, 1'010));
}

TEST_F(RetryGateTest, RestoredEntriesReplayButAQueuedAcquireDoesNot) {
  AcquireAnswer queued;
  queued.kind = AcquireAnswer::Kind::kQueued;
  const std::vector<storage::ServerState::Retry> recovered = {
      {.client = "c",
       .request_id = "granted",
       .entry = EncodeRetryEntry(kAcquireL, AcquireResult(Granted(4))),
       .answered_at = 0},
      {.client = "c",
       .request_id = "queued",
       .entry = EncodeRetryEntry(kAcquireL, AcquireResult(queued)),
       .answered_at = 0},
      {.client = "c", .request_id = "bad", .entry = "?", .answered_at = 0}};
  EXPECT_EQ(gate_.Restore(recovered), 1u);
  EXPECT_EQ(gate_.size(), 1u);
  EXPECT_EQ(
      gate_.Admit<AcquireResult>("c", "granted", kAcquireL, 10, false).kind,
      RetryAdmission::kReplay);
  // Its delivery is unknown: it counts as delivered, never undone.
  EXPECT_FALSE(gate_.CallFinished("c", "granted", /*cancelled=*/true, 10));
  storage::ServerState saved;
  gate_.SaveTo(saved);
  ASSERT_EQ(saved.retries.size(), 1u);
  EXPECT_EQ(saved.retries[0].request_id, "granted");
}

}  // namespace
}  // namespace leasekeeper::server
