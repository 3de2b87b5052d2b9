// CoreOwner on a FakeOperationLog that holds durability back: reads answer
// only once every record they reflect is durable (a read barrier on the
// position of the last record at query time, not an fsync per read), and
// sessions and retry-cache answers go into the log as server records. Fake
// clock, no gRPC.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/clock.h"
#include "server/core_owner.h"
#include "tests/server/fake_operation_log.h"

namespace leasekeeper::server {
namespace {

using storage::LogPosition;
using testing::FakeOperationLog;

// A callback's outcome, once it ran.
struct Answered {
  std::optional<absl::Status> status;
  absl::AnyInvocable<void(absl::Status) &&> Callback() {
    return [this](absl::Status s) { status = std::move(s); };
  }
};

class NullSink final : public SessionSink {
 public:
  void Notify(const SessionNotice&) override {}
  void End(const absl::Status&) override {}
};

class DurablePathTest : public ::testing::Test {
 protected:
  DurablePathTest() : owner_(ServerConfig{}, clock_) {
    auto log = std::make_unique<FakeOperationLog>();
    log_ = log.get();
    EXPECT_TRUE(owner_.UseLog(std::move(log)).ok());
  }

  // Acquires `lock` for `client` and returns its token (its record is not
  // durable yet).
  FencingToken Grant(const std::string& client, const std::string& lock) {
    AcquireArgs args{.client = client, .lock = lock, .ttl_ms = 60'000};
    std::optional<AcquireReply> reply = owner_.Acquire(args, nullptr);
    EXPECT_TRUE(reply.has_value() && reply->result.ok());
    return reply.has_value() && reply->result.ok() ? reply->result->token : 0;
  }

  FakeClock clock_{100};
  CoreOwner owner_;
  FakeOperationLog* log_ = nullptr;
};

// Each query, run after a write whose record is not durable, with the
// barrier it reports.
struct Query {
  const char* name;
  std::function<LogPosition(CoreOwner&)> run;
};

std::vector<Query> Queries() {
  return {
      {"Read",
       [](CoreOwner& owner) {
         LogPosition barrier = 0;
         absl::StatusOr<std::optional<std::string>> value =
             owner.Read(ReadArgs{.lock = "L", .key = "k"}, &barrier);
         EXPECT_TRUE(value.ok() && value->has_value() && **value == "v");
         return barrier;
       }},
      {"Inspect",
       [](CoreOwner& owner) {
         LogPosition barrier = 0;
         absl::StatusOr<InspectAnswer> answer = owner.Inspect("L", InspectCursor{}, 1000, &barrier);
         EXPECT_TRUE(answer.ok() && answer->holders.size() == 1);
         return barrier;
       }},
      {"Status",
       [](CoreOwner& owner) {
         LogPosition barrier = 0;
         absl::StatusOr<StatusAnswer> answer = owner.Status("a", "", 1000, &barrier);
         EXPECT_TRUE(answer.ok() && answer->holds.size() == 1);
         return barrier;
       }},
      {"ListLocks",
       [](CoreOwner& owner) {
         LogPosition barrier = 0;
         ListLocksAnswer answer = owner.ListLocks("", "", 10, &barrier);
         EXPECT_EQ(answer.locks.size(), 1u);
         return barrier;
       }},
  };
}

TEST_F(DurablePathTest, AReadAnswersOnlyOnceWhatItReflectsIsDurable) {
  const FencingToken token = Grant("a", "L");
  ASSERT_TRUE(
      owner_.Write(WriteArgs{.lock = "L", .key = "k", .value = "v", .token = token})
          .ok());
  const LogPosition written = log_->last_position();
  ASSERT_EQ(written, 2u);  // the Acquire and the Write
  for (const Query& query : Queries()) {
    SCOPED_TRACE(query.name);
    const LogPosition barrier = query.run(owner_);
    EXPECT_EQ(barrier, written);
    Answered answered;
    owner_.AfterDurable(barrier, answered.Callback());
    EXPECT_FALSE(answered.status.has_value());
  }
  // Only once the write's record is durable do the answers go out.
  std::vector<std::unique_ptr<Answered>> pending;
  for (const Query& query : Queries()) {
    pending.push_back(std::make_unique<Answered>());
    owner_.AfterDurable(query.run(owner_), pending.back()->Callback());
  }
  log_->MakeDurable(written - 1);
  for (const auto& answered : pending) {
    EXPECT_FALSE(answered->status.has_value());
  }
  log_->MakeDurable(written);
  for (const auto& answered : pending) {
    ASSERT_TRUE(answered->status.has_value());
    EXPECT_TRUE(answered->status->ok());
  }
}

// The barrier is the last record at query time: a later write, not yet
// durable, does not hold the read back.
TEST_F(DurablePathTest, AReadDoesNotWaitForRecordsAppendedAfterIt) {
  const FencingToken token = Grant("a", "L");
  ASSERT_TRUE(
      owner_.Write(WriteArgs{.lock = "L", .key = "k", .value = "v", .token = token})
          .ok());
  LogPosition barrier = 0;
  ASSERT_TRUE(owner_.Read(ReadArgs{.lock = "L", .key = "k"}, &barrier).ok());
  EXPECT_EQ(barrier, 2u);  // the Acquire and the first Write
  ASSERT_TRUE(
      owner_.Write(WriteArgs{.lock = "L", .key = "k", .value = "w", .token = token})
          .ok());
  ASSERT_GT(log_->last_position(), barrier);
  Answered answered;
  owner_.AfterDurable(barrier, answered.Callback());
  log_->MakeDurable(barrier);
  ASSERT_TRUE(answered.status.has_value());
  EXPECT_TRUE(answered.status->ok());
}

TEST_F(DurablePathTest, AReadOfDurableStateAnswersAtOnce) {
  Grant("a", "L");
  log_->MakeDurable(log_->last_position());
  LogPosition barrier = 0;
  ASSERT_TRUE(owner_.Inspect("L", InspectCursor{}, 1000, &barrier).ok());
  Answered answered;
  owner_.AfterDurable(barrier, answered.Callback());
  ASSERT_TRUE(answered.status.has_value());
  EXPECT_TRUE(answered.status->ok());
}

TEST_F(DurablePathTest, AReadWhoseRecordsCanNeverBeDurableFails) {
  Grant("a", "L");
  LogPosition barrier = 0;
  ASSERT_TRUE(owner_.Inspect("L", InspectCursor{}, 1000, &barrier).ok());
  Answered answered;
  owner_.AfterDurable(barrier, answered.Callback());
  log_->Fail(absl::UnavailableError("disk gone"));
  ASSERT_TRUE(answered.status.has_value());
  EXPECT_EQ(answered.status->code(), absl::StatusCode::kUnavailable);
}

// Sessions and retry answers are server records of the same log, appended
// where they happen (before the answer that depends on them).
TEST_F(DurablePathTest, SessionsAndRetryAnswersAreLoggedAsServerRecords) {
  auto sink = std::make_shared<NullSink>();
  absl::StatusOr<SessionOpenedAnswer> opened =
      owner_.OpenSession("a", "", sink);
  ASSERT_TRUE(opened.ok());
  AcquireArgs args{.client = "a",
                   .lock = "L",
                   .ttl_ms = 60'000,
                   .request_id = "r-1",
                   .session_id = opened->session_id};
  ASSERT_TRUE(owner_.Acquire(args, nullptr).has_value());
  owner_.CloseSession(opened->session_id, sink.get());

  std::vector<std::string> kinds;
  for (const storage::LogEntry& entry : log_->entries()) {
    if (const auto* op = std::get_if<Operation>(&entry)) {
      kinds.push_back(std::holds_alternative<op::Acquire>(op->body)
                          ? "Acquire"
                      : std::holds_alternative<op::ReleaseAll>(op->body)
                          ? "ReleaseAll"
                          : "other op");
    } else if (const auto* record = std::get_if<storage::ServerRecord>(&entry)) {
      const auto& body = record->body;
      if (const auto* s = std::get_if<storage::srec::SessionOpened>(&body)) {
        EXPECT_EQ(s->session_id, opened->session_id);
        EXPECT_EQ(s->client, "a");
        kinds.push_back("SessionOpened");
      } else if (std::holds_alternative<storage::srec::RetryAnswered>(body)) {
        kinds.push_back("RetryAnswered");
      } else if (std::holds_alternative<storage::srec::SessionEnded>(body)) {
        kinds.push_back("SessionEnded");
      } else {
        kinds.push_back("other record");
      }
    }
  }
  EXPECT_EQ(kinds, (std::vector<std::string>{"SessionOpened", "Acquire",
                                             "RetryAnswered", "SessionEnded",
                                             "ReleaseAll"}));
}

}  // namespace
}  // namespace leasekeeper::server
