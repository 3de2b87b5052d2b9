// Unit tests of the server's parts without gRPC calls: CoreOwner's
// delivery and timer rules (driven by a fake clock, no timer thread), the
// retry cache, error mapping and flag parsing.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/errors.h"
#include "gtest/gtest.h"
#include "server/clock.h"
#include "server/core_owner.h"
#include "server/flags.h"
#include "server/grpc_status.h"
#include "server/retry_cache.h"
#include "server/server_errors.h"
#include "test_support.h"
#include "tests/server/completion_recorder.h"

namespace leasekeeper::server {
namespace {

using testing::RecordingCall;

absl::StatusOr<ReleaseAnswer> ReleaseNow(CoreOwner& owner,
                                         const ReleaseArgs& args) {
  return testing::AnswerNow<absl::StatusOr<ReleaseAnswer>>(
      [&](auto done) { owner.Lease(Ask(args, std::move(done))); });
}

AcquireArgs Args(const std::string& client, const std::string& lock,
                 int64_t ttl_ms, int64_t wait_timeout_ms = 0,
                 const std::string& request_id = "") {
  AcquireArgs args;
  args.client = client;
  args.lock = lock;
  args.ttl_ms = ttl_ms;
  args.wait_timeout_ms = wait_timeout_ms;
  args.request_id = request_id;
  return args;
}

class CoreOwnerTest : public ::testing::Test {
 protected:
  CoreOwnerTest() : owner_(ServerConfig{}, clock_) {}

  std::vector<HolderInfo> Holders(const std::string& lock) {
    absl::StatusOr<InspectAnswer> answer =
        testing::AnswerNow<absl::StatusOr<InspectAnswer>>([&](auto done) {
          owner_.Query(
              Ask(InspectQuery{.lock = lock, .limit = 1000}, std::move(done)));
        });
    return answer.ok() ? answer->holders : std::vector<HolderInfo>{};
  }

  void TearDown() override {
    EXPECT_TRUE(owner_.CheckConsistency().ok())
        << owner_.CheckConsistency().message();
  }

  FakeClock clock_{0};
  CoreOwner owner_;
};

TEST_F(CoreOwnerTest, UndeliveredImmediateGrantIsReleasedAgain) {
  RecordingCall call;
  const AcquireArgs args = Args("job", "L", 60'000);
  owner_.Acquire(args, &call);
  const std::optional<AcquireCallAnswer> reply = call.reply();
  ASSERT_TRUE(reply.has_value() && reply->result.ok());
  ASSERT_EQ(Holders("L").size(), 1u);
  owner_.ReportAcquireCall(
      AcquireCallFinished{args, *reply, /*cancelled=*/true});
  EXPECT_TRUE(Holders("L").empty());
}

TEST_F(CoreOwnerTest, UndeliveredGrantFromTheQueuePassesToTheNextWaiter) {
  RecordingCall holder_call, first, second;
  owner_.Acquire(Args("holder", "L", 60'000), &holder_call);
  ASSERT_TRUE(holder_call.reply().has_value());
  const AcquireArgs first_args = Args("first", "L", 60'000, 10'000);
  const AcquireArgs second_args = Args("second", "L", 60'000, 10'000);
  owner_.Acquire(first_args, &first);
  owner_.Acquire(second_args, &second);
  EXPECT_FALSE(first.reply().has_value());
  EXPECT_FALSE(second.reply().has_value());

  clock_.Set(100);
  ASSERT_TRUE(ReleaseNow(owner_, ReleaseArgs{.client = "holder", .lock = "L"})
                  .ok());
  ASSERT_TRUE(first.reply().has_value());
  ASSERT_TRUE(first.reply()->result.ok());
  EXPECT_EQ(first.reply()->result->token, 2u);
  // The grant raced with the call's cancellation: nobody got the answer.
  owner_.ReportAcquireCall(
      AcquireCallFinished{first_args, *first.reply(), /*cancelled=*/true});
  ASSERT_TRUE(second.reply().has_value());
  EXPECT_EQ(second.reply()->result->token, 3u);
  std::vector<HolderInfo> holders = Holders("L");
  ASSERT_EQ(holders.size(), 1u);
  EXPECT_EQ(holders[0].view.client, "second");
}

TEST_F(CoreOwnerTest, GrantDeliveredByARetryIsKept) {
  RecordingCall first, retry;
  const AcquireArgs args = Args("job", "L", 60'000, 0, "req-1");
  owner_.Acquire(args, &first);
  owner_.Acquire(args, &retry);
  const std::optional<AcquireCallAnswer> first_reply = first.reply();
  const std::optional<AcquireCallAnswer> retry_reply = retry.reply();
  ASSERT_TRUE(first_reply.has_value() && retry_reply.has_value());
  EXPECT_TRUE(first_reply->tracked);
  EXPECT_TRUE(retry_reply->tracked);
  owner_.ReportAcquireCall(
      AcquireCallFinished{args, *first_reply, /*cancelled=*/true});
  owner_.ReportAcquireCall(
      AcquireCallFinished{args, *retry_reply, /*cancelled=*/false});
  EXPECT_EQ(Holders("L").size(), 1u);
}

TEST_F(CoreOwnerTest, GrantIsReleasedOnlyWhenNoCallDeliveredIt) {
  RecordingCall first, retry;
  const AcquireArgs args = Args("job", "L", 60'000, 0, "req-1");
  owner_.Acquire(args, &first);
  owner_.Acquire(args, &retry);
  const std::optional<AcquireCallAnswer> first_reply = first.reply();
  const std::optional<AcquireCallAnswer> retry_reply = retry.reply();
  ASSERT_TRUE(first_reply.has_value() && retry_reply.has_value());
  owner_.ReportAcquireCall(
      AcquireCallFinished{args, *first_reply, /*cancelled=*/true});
  EXPECT_EQ(Holders("L").size(), 1u);  // the retry may still deliver it
  owner_.ReportAcquireCall(
      AcquireCallFinished{args, *retry_reply, /*cancelled=*/true});
  EXPECT_TRUE(Holders("L").empty());
}

TEST_F(CoreOwnerTest, DeadlinesAreProcessedInTheOrderTheyHappened) {
  RecordingCall holder_call, waiter;
  owner_.Acquire(Args("holder", "L", 5'000), &holder_call);
  ASSERT_TRUE(holder_call.reply().has_value());
  owner_.Acquire(Args("waiter", "L", 1'000, 3'000), &waiter);
  EXPECT_FALSE(waiter.reply().has_value());
  clock_.Set(6'000);  // both the wait timeout (3000) and the lapse (5000) due
  // All that is left: forgetting the waiter, idle since its timeout, once
  // --forget-idle-clients-after has passed.
  EXPECT_EQ(owner_.RunDueTimers(),
            3'000 + ServerConfig().forget_idle_clients_after_ms);
  ASSERT_TRUE(waiter.reply().has_value());
  EXPECT_EQ(ErrorInfoOf(waiter.reply()->result.status()).reason,
            v1::WAIT_TIMEOUT);
  EXPECT_TRUE(Holders("L").empty());
}

TEST_F(CoreOwnerTest, NextDeadlineIsTheEarliestOfLapsesWaitsAndGraces) {
  RecordingCall a, b;
  owner_.Acquire(Args("holder", "L", 5'000), &a);
  ASSERT_TRUE(a.reply().has_value());
  EXPECT_EQ(owner_.RunDueTimers(), 5'000);
  owner_.Acquire(Args("waiter", "L", 1'000, 3'000), &b);
  EXPECT_FALSE(b.reply().has_value());
  EXPECT_EQ(owner_.RunDueTimers(), 3'000);
}

// Under --fsync never every record is durable once appended, so the
// effects of a call are performed by the thread that made the call: a
// hand-over is not delayed by a hand-off to the store's flusher thread.
TEST(CoreOwnerDurableTest, UnderFsyncNeverAWaitersGrantIsSentBeforeReleaseReturns) {
  testing::DataDir dir;
  ServerConfig config;
  config.durability.data_dir = dir.path();
  config.durability.fsync = storage::FsyncPolicy::kNever;
  FakeClock clock(0);
  CoreOwner owner(config, clock);
  ASSERT_TRUE(owner.OpenStorage().ok());
  RecordingCall holder, waiter;
  owner.Acquire(Args("holder", "L", 60'000), &holder);
  ASSERT_TRUE(holder.reply().has_value());
  owner.Acquire(Args("waiter", "L", 60'000, 10'000), &waiter);
  EXPECT_FALSE(waiter.reply().has_value());
  clock.Set(100);
  ASSERT_TRUE(
      ReleaseNow(owner, ReleaseArgs{.client = "holder", .lock = "L"}).ok());
  ASSERT_TRUE(waiter.reply().has_value());
  ASSERT_TRUE(waiter.reply()->result.ok());
  EXPECT_EQ(waiter.reply()->result->token, 2u);
  owner.durability().Close();
}

// Admission: the one retry protocol of Acquire, Renew and Release.
const Fingerprint kRenewL{
    .method = Fingerprint::Method::kRenew, .lock = "L", .ttl_ms = 5'000};

TEST(RetryAdmissionTest, AnUnknownIdIsNewAndAdmittingAddsNothing) {
  RetryCache cache(RetryCacheConfig{.ttl_ms = 1'000, .max_entries = 10});
  EXPECT_EQ(cache.Admit("c", "r", kRenewL, 0, false).kind,
            RetryAdmission::kNew);
  EXPECT_EQ(cache.size(), 0u);
}

TEST(RetryAdmissionTest, AnAnsweredIdIsReplayedWithItsFirstAnswer) {
  RetryCache cache(RetryCacheConfig{.ttl_ms = 1'000, .max_entries = 10});
  cache.Insert("c", "r", kRenewL);
  cache.Answer("c", "r",
               absl::StatusOr<RenewAnswer>(RenewAnswer{.token = 7, .ttl_ms = 1}),
               10);
  const Admitted admitted = cache.Admit("c", "r", kRenewL, 500, false);
  ASSERT_EQ(admitted.kind, RetryAdmission::kReplay);
  EXPECT_EQ(std::get<absl::StatusOr<RenewAnswer>>(*admitted.entry->answer)
                ->token,
            7u);
  // Once the answer outlived the ttl, the id is new again.
  EXPECT_EQ(cache.Admit("c", "r", kRenewL, 1'010, false).kind,
            RetryAdmission::kNew);
}

TEST(RetryAdmissionTest, TheSameIdWithOtherArgumentsIsReused) {
  RetryCache cache(RetryCacheConfig{.ttl_ms = 1'000, .max_entries = 10});
  cache.Insert("c", "r", kRenewL);
  Fingerprint other = kRenewL;
  other.ttl_ms = 6'000;
  EXPECT_EQ(cache.Admit("c", "r", other, 0, true).kind,
            RetryAdmission::kReused);
  other = kRenewL;
  other.method = Fingerprint::Method::kRelease;
  EXPECT_EQ(cache.Admit("c", "r", other, 0, true).kind,
            RetryAdmission::kReused);
  // Another client's id is its own.
  EXPECT_EQ(cache.Admit("d", "r", other, 0, false).kind, RetryAdmission::kNew);
}

TEST(RetryAdmissionTest, AnUnansweredIdIsInFlightWhileItsFirstCallWaits) {
  RetryCache cache(RetryCacheConfig{.ttl_ms = 1'000, .max_entries = 10});
  cache.Insert("c", "r", kRenewL);
  const Admitted admitted = cache.Admit("c", "r", kRenewL, 0, true);
  EXPECT_EQ(admitted.kind, RetryAdmission::kInFlight);
  EXPECT_NE(admitted.entry, nullptr);
  EXPECT_EQ(cache.size(), 1u);
}

TEST(RetryAdmissionTest, AnUnansweredIdWhoseCallIsGoneIsDroppedAndNew) {
  RetryCache cache(RetryCacheConfig{.ttl_ms = 1'000, .max_entries = 10});
  cache.Insert("c", "r", kRenewL);
  EXPECT_EQ(cache.Admit("c", "r", kRenewL, 0, false).kind,
            RetryAdmission::kNew);
  EXPECT_EQ(cache.size(), 0u);
}

TEST(RetryCacheTest, EvictsTheOldestEntryWhenFull) {
  RetryCache cache(RetryCacheConfig{.ttl_ms = 1'000'000, .max_entries = 2});
  for (const char* id : {"a", "b", "c"}) {
    cache.Insert("client", id, Fingerprint{});
    cache.Answer("client", id,
                 absl::StatusOr<ReleaseAnswer>(ReleaseAnswer::kReleased), 0);
  }
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.Find("client", "a", 0), nullptr);
  EXPECT_NE(cache.Find("client", "b", 0), nullptr);
  EXPECT_NE(cache.Find("client", "c", 0), nullptr);
}

TEST(RetryCacheTest, AnswersExpireAfterTheTtlButPendingEntriesDoNot) {
  RetryCache cache(RetryCacheConfig{.ttl_ms = 100, .max_entries = 10});
  cache.Insert("c", "answered", Fingerprint{});
  cache.Answer("c", "answered",
               absl::StatusOr<ReleaseAnswer>(ReleaseAnswer::kReleased), 10);
  cache.Insert("c", "pending", Fingerprint{});
  EXPECT_NE(cache.Find("c", "answered", 109), nullptr);
  EXPECT_EQ(cache.Find("c", "answered", 110), nullptr);
  EXPECT_NE(cache.Find("c", "pending", 1'000'000), nullptr);
}

TEST(RetryCacheTest, ExpiredAnswersLeaveWithoutALookup) {
  // One answer every 10 ms, a 100 ms ttl: the cache holds the last ttl's
  // answers, not max_entries of them.
  RetryCache cache(RetryCacheConfig{.ttl_ms = 100, .max_entries = 100'000});
  for (int i = 0; i < 1'000; ++i) {
    const std::string id = std::to_string(i);
    cache.Insert("c", id, Fingerprint{});
    cache.Answer("c", id,
                 absl::StatusOr<ReleaseAnswer>(ReleaseAnswer::kReleased),
                 i * 10);
  }
  // Left: 990 ... 999, answered at 9,900 ... 9,990 (the last answer).
  EXPECT_EQ(cache.size(), 10u);
  EXPECT_EQ(cache.Find("c", "989", 9'990), nullptr);
  EXPECT_NE(cache.Find("c", "990", 9'990), nullptr);
}

TEST(RetryCacheTest, APendingEntryHoldsBackTheExpiryOfNewerOnes) {
  RetryCache cache(RetryCacheConfig{.ttl_ms = 100, .max_entries = 100'000});
  cache.Insert("c", "waiting", Fingerprint{});
  for (int i = 0; i < 100; ++i) {
    const std::string id = std::to_string(i);
    cache.Insert("c", id, Fingerprint{});
    cache.Answer("c", id,
                 absl::StatusOr<ReleaseAnswer>(ReleaseAnswer::kReleased),
                 i * 10);
  }
  EXPECT_EQ(cache.size(), 101u);  // invariant 4: pending never expires
  // Answered at last; the next answer, a ttl later, finds every older one
  // expired.
  cache.Answer("c", "waiting",
               absl::StatusOr<ReleaseAnswer>(ReleaseAnswer::kReleased), 1'000);
  cache.Insert("c", "next", Fingerprint{});
  cache.Answer("c", "next",
               absl::StatusOr<ReleaseAnswer>(ReleaseAnswer::kReleased), 1'100);
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_NE(cache.Find("c", "next", 1'100), nullptr);
}

TEST(RetryCacheTest, StaysBoundedUnderChurn) {
  RetryCache cache(RetryCacheConfig{.ttl_ms = 10, .max_entries = 50});
  for (int i = 0; i < 10'000; ++i) {
    const std::string id = std::to_string(i);
    cache.Insert("c", id, Fingerprint{});
    if (i % 2 == 0) cache.Erase("c", id);
  }
  EXPECT_LE(cache.size(), 50u);
}

TEST(RetryCacheTest, LiveEntriesKeepTheirAnswersThroughCompaction) {
  // Erasing every other entry leaves dead records behind; enough of them
  // force compactions, which must keep every live entry findable with its
  // fingerprint and answer, and keep evicting oldest first.
  RetryCache cache(RetryCacheConfig{.ttl_ms = 1'000'000, .max_entries = 8});
  for (int i = 0; i <= 1'000; ++i) {
    const std::string id = std::to_string(i);
    cache.Insert("c", id,
                 Fingerprint{.method = Fingerprint::Method::kRenew,
                             .lock = "L" + id,
                             .ttl_ms = i});
    cache.Answer("c", id,
                 absl::StatusOr<RenewAnswer>(RenewAnswer{
                     .token = static_cast<FencingToken>(i), .ttl_ms = i}),
                 0);
    if (i % 2 == 1) cache.Erase("c", id);
  }
  EXPECT_EQ(cache.size(), 8u);
  for (int i = 0; i <= 1'000; ++i) {
    const std::string id = std::to_string(i);
    RetryEntry* entry = cache.Find("c", id, 0);
    // Each odd id, while briefly live, evicted the oldest even one: the
    // newest 8 even ids are left, 986 ... 1000.
    if (i % 2 == 1 || i < 986) {
      EXPECT_EQ(entry, nullptr) << id;
      continue;
    }
    ASSERT_NE(entry, nullptr) << id;
    EXPECT_EQ(entry->fingerprint.lock, "L" + id);
    EXPECT_EQ(entry->fingerprint.ttl_ms, i);
    ASSERT_TRUE(entry->answer.has_value());
    const auto* renewed =
        std::get_if<absl::StatusOr<RenewAnswer>>(&*entry->answer);
    ASSERT_NE(renewed, nullptr);
    ASSERT_TRUE(renewed->ok());
    EXPECT_EQ((*renewed)->token, static_cast<FencingToken>(i));
  }
}

TEST(RetryCacheTest, AnExpiredEntryMakesWayForANewOneWithTheSameId) {
  RetryCache cache(RetryCacheConfig{.ttl_ms = 100, .max_entries = 2});
  cache.Insert("c", "r", Fingerprint{.lock = "old"});
  cache.Answer("c", "r",
               absl::StatusOr<ReleaseAnswer>(ReleaseAnswer::kReleased), 0);
  // Not looked up since it expired: Insert replaces it.
  cache.Insert("c", "r", Fingerprint{.lock = "new"});
  EXPECT_EQ(cache.size(), 1u);
  RetryEntry* entry = cache.Find("c", "r", 1'000);
  ASSERT_NE(entry, nullptr);  // pending: does not expire
  EXPECT_EQ(entry->fingerprint.lock, "new");
  EXPECT_FALSE(entry->answer.has_value());
  // Same request_id, another client: another entry.
  cache.Insert("d", "r", Fingerprint{.lock = "d's"});
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.Find("c", "r", 1'000)->fingerprint.lock, "new");
  EXPECT_EQ(cache.Find("d", "r", 1'000)->fingerprint.lock, "d's");
}

TEST(GrpcStatusTest, MapsEveryErrorToItsCodeMessageAndReason) {
  struct Row {
    absl::Status status;
    grpc::StatusCode code;
    std::string message;
    std::string reason;
  };
  const std::vector<Row> rows = {
      {MakeError(ErrorCode::kInvalidArguments), grpc::INVALID_ARGUMENT,
       "invalid arguments", "INVALID_ARGUMENTS"},
      {InvalidField(ErrorCode::kInvalidTtl, "ttl_ms"), grpc::INVALID_ARGUMENT,
       "invalid ttl", "INVALID_TTL"},
      {MakeError(ErrorCode::kClientBusy), grpc::FAILED_PRECONDITION,
       "client busy", "CLIENT_BUSY"},
      {MakeError(ErrorCode::kNotHolder), grpc::FAILED_PRECONDITION,
       "not holder", "NOT_HOLDER"},
      {MakeError(ErrorCode::kStaleToken), grpc::FAILED_PRECONDITION,
       "stale token", "STALE_TOKEN"},
      {DeadlockVictim({"Y", "Z"}), grpc::ABORTED, "deadlock",
       "DEADLOCK_VICTIM"},
      {LimitExceeded("max-key-bytes", 256), grpc::RESOURCE_EXHAUSTED,
       "limit exceeded: max-key-bytes=256", "LIMIT_EXCEEDED"},
      {SessionEnded(), grpc::FAILED_PRECONDITION, "session ended",
       "SESSION_ENDED"},
      {WaitTimedOut(), grpc::DEADLINE_EXCEEDED, "wait timed out",
       "WAIT_TIMEOUT"},
      {ShuttingDown(), grpc::UNAVAILABLE, "server shutting down",
       "SHUTTING_DOWN"},
      {RequestIdReused("request_id"), grpc::INVALID_ARGUMENT,
       "request id reused", "REQUEST_ID_REUSED"},
      {SupersededByRetry(), grpc::CANCELLED, "superseded by retry",
       "SUPERSEDED_BY_RETRY"},
      {absl::InternalError("boom"), grpc::INTERNAL, "boom",
       "ERROR_REASON_UNSPECIFIED"},
  };
  for (const Row& row : rows) {
    GrpcError error = ToGrpcStatus(row.status);
    EXPECT_EQ(error.status.error_code(), row.code) << row.message;
    EXPECT_EQ(error.status.error_message(), row.message);
    ASSERT_EQ(error.trailing_metadata.size(), 2u);
    EXPECT_EQ(error.trailing_metadata[0].first, kReasonMetadataKey);
    EXPECT_EQ(error.trailing_metadata[0].second, row.reason);
  }
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).status.ok());
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).trailing_metadata.empty());
  // The core's own error stays recognizable after the field was attached.
  EXPECT_EQ(ErrorCodeOf(InvalidField(ErrorCode::kInvalidTtl, "ttl_ms")),
            ErrorCode::kInvalidTtl);
  EXPECT_EQ(ErrorInfoOf(DeadlockVictim({"Y", "Z"})).victims,
            (std::vector<std::string>{"Y", "Z"}));
}

absl::StatusOr<DaemonOptions> Parse(std::vector<const char*> args) {
  args.insert(args.begin(), "leasekeeperd");
  return ParseDaemonFlags(static_cast<int>(args.size()), args.data());
}

TEST(FlagsTest, DefaultsAreTheDocumentedOnes) {
  absl::StatusOr<DaemonOptions> options = Parse({});
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(options->config.listen, "127.0.0.1:7233");
  EXPECT_EQ(options->config.session_grace_ms, 2'000);
  EXPECT_EQ(options->log_level, "info");
  EXPECT_EQ(options->config.limits.max_waiters_per_lock, 10'000);
  EXPECT_EQ(options->config.retry_cache.ttl_ms, 600'000);
}

TEST(FlagsTest, AcceptsBothSpellingsAndDurations) {
  absl::StatusOr<DaemonOptions> options =
      Parse({"--listen=127.0.0.1:0", "--session-grace", "500ms",
             "--max_value_bytes=10", "--log-level=debug",
             "--retry-cache-ttl=1m30s", "--max-waiters-per-lock", "7"});
  ASSERT_TRUE(options.ok()) << options.status().message();
  EXPECT_EQ(options->config.listen, "127.0.0.1:0");
  EXPECT_EQ(options->config.session_grace_ms, 500);
  EXPECT_EQ(options->config.limits.max_value_bytes, 10u);
  EXPECT_EQ(options->log_level, "debug");
  EXPECT_EQ(options->config.retry_cache.ttl_ms, 90'000);
  EXPECT_EQ(options->config.limits.max_waiters_per_lock, 7);
}

TEST(FlagsTest, RejectsBadFlagsNamingThem) {
  for (const std::vector<const char*>& args :
       std::vector<std::vector<const char*>>{{"--bogus=1"},
                                             {"--session-grace=2"},
                                             {"--session-grace=-1s"},
                                             {"--max-key-bytes=0"},
                                             {"--max-key-bytes=ten"},
                                             {"--log-level=loud"},
                                             {"--listen=nohostport"},
                                             {"--shutdown-grace=10s"},
                                             {"--listen"},
                                             {"positional"}}) {
    absl::StatusOr<DaemonOptions> options = Parse(args);
    EXPECT_EQ(options.status().code(), absl::StatusCode::kInvalidArgument)
        << args[0];
  }
}

}  // namespace
}  // namespace leasekeeper::server
