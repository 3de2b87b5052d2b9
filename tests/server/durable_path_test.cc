// CoreOwner on a FakeOperationLog that holds durability back: every call
// answers through its one completion, exactly once, only once every record
// its answer reflects is durable (for reads: a read barrier on the position
// of the last record at query time, not an fsync per read), and sessions
// and retry-cache answers go into the log as server records. Fake clock,
// no gRPC.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/clock.h"
#include "server/core_owner.h"
#include "tests/server/completion_recorder.h"
#include "tests/server/fake_operation_log.h"

namespace leasekeeper::server {
namespace {

using storage::LogPosition;
using testing::CompletionRecorder;
using testing::FakeOperationLog;
using testing::RecordingCall;

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
    EXPECT_TRUE(owner_.OpenStorage(std::move(log)).ok());
  }

  // Acquires `lock` for `client` (its record not durable yet) and returns
  // the token once the test made it durable.
  FencingToken Grant(const std::string& client, const std::string& lock) {
    RecordingCall call;
    owner_.Acquire(AcquireArgs{.client = client, .lock = lock, .ttl_ms = 60'000},
                   &call);
    EXPECT_FALSE(call.reply().has_value());
    log_->MakeDurable(log_->last_position());
    EXPECT_EQ(call.completions(), 1);
    return call.reply().has_value() && call.reply()->result.ok()
               ? call.reply()->result->token
               : 0;
  }

  void Write(const std::string& value, FencingToken token,
             CompletionRecorder<absl::StatusOr<StoreAnswer>>& answer) {
    owner_.Write(
        WriteArgs{.lock = "L", .key = "k", .value = value, .token = token},
        answer.Callback());
  }

  FakeClock clock_{100};
  CoreOwner owner_;
  FakeOperationLog* log_ = nullptr;
};

// Every query, each recording whether it answered and checking what.
struct Queries {
  CompletionRecorder<absl::StatusOr<std::optional<std::string>>> read;
  CompletionRecorder<absl::StatusOr<InspectAnswer>> inspect;
  CompletionRecorder<absl::StatusOr<StatusAnswer>> status;
  CompletionRecorder<absl::StatusOr<ListLocksAnswer>> list;
  CompletionRecorder<absl::StatusOr<KeysAnswer>> keys;

  void Run(CoreOwner& owner) {
    owner.Query(Ask(ReadArgs{.lock = "L", .key = "k"}, read.Callback()));
    owner.Query(
        Ask(InspectQuery{.lock = "L", .limit = 1000}, inspect.Callback()));
    owner.Query(
        Ask(StatusQuery{.client = "a", .limit = 1000}, status.Callback()));
    owner.Query(Ask(ListLocksQuery{.limit = 10}, list.Callback()));
    owner.Query(
        Ask(KeysQuery{.lock = "L", .limit = 10}, keys.Callback()));
  }
  int answered() const {
    return read.calls() + inspect.calls() + status.calls() + list.calls() +
           keys.calls();
  }
  void ExpectTheWrite() const {
    ASSERT_EQ(answered(), 5);
    ASSERT_TRUE(read.answer().ok());
    EXPECT_EQ(read.answer()->value_or(""), "v");
    ASSERT_TRUE(inspect.answer().ok());
    EXPECT_EQ(inspect.answer()->holders.size(), 1u);
    ASSERT_TRUE(status.answer().ok());
    EXPECT_EQ(status.answer()->holds.size(), 1u);
    ASSERT_TRUE(list.answer().ok());
    EXPECT_EQ(list.answer()->locks.size(), 1u);
    ASSERT_TRUE(keys.answer().ok());
    EXPECT_EQ(keys.answer()->keys, std::vector<std::string>{"k"});
  }
};

TEST_F(DurablePathTest, AReadAnswersOnlyOnceWhatItReflectsIsDurable) {
  const FencingToken token = Grant("a", "L");
  CompletionRecorder<absl::StatusOr<StoreAnswer>> written;
  Write("v", token, written);
  const LogPosition write = log_->last_position();
  Queries queries;
  queries.Run(owner_);
  log_->MakeDurable(write - 1);
  EXPECT_EQ(queries.answered(), 0);
  EXPECT_FALSE(written.answered());
  // Only once the write's record is durable do the answers go out.
  log_->MakeDurable(write);
  ASSERT_EQ(written.calls(), 1);
  EXPECT_TRUE(written.answer().ok());
  queries.ExpectTheWrite();
}

// The barrier is the last record at query time: a later write, not yet
// durable, does not hold the read back.
TEST_F(DurablePathTest, AReadDoesNotWaitForRecordsAppendedAfterIt) {
  const FencingToken token = Grant("a", "L");
  CompletionRecorder<absl::StatusOr<StoreAnswer>> first, second;
  Write("v", token, first);
  const LogPosition barrier = log_->last_position();
  CompletionRecorder<absl::StatusOr<std::optional<std::string>>> read;
  owner_.Query(Ask(ReadArgs{.lock = "L", .key = "k"}, read.Callback()));
  Write("w", token, second);
  ASSERT_GT(log_->last_position(), barrier);
  log_->MakeDurable(barrier);
  ASSERT_EQ(read.calls(), 1);
  ASSERT_TRUE(read.answer().ok());
  EXPECT_EQ(read.answer()->value_or(""), "v");
  EXPECT_FALSE(second.answered());
}

TEST_F(DurablePathTest, AReadOfDurableStateAnswersAtOnce) {
  Grant("a", "L");
  CompletionRecorder<absl::StatusOr<InspectAnswer>> inspect;
  owner_.Query(
      Ask(InspectQuery{.lock = "L", .limit = 1000}, inspect.Callback()));
  ASSERT_EQ(inspect.calls(), 1);
  EXPECT_TRUE(inspect.answer().ok());
}

TEST_F(DurablePathTest, AReadWhoseRecordsCanNeverBeDurableFails) {
  RecordingCall call;
  owner_.Acquire(AcquireArgs{.client = "a", .lock = "L", .ttl_ms = 60'000},
                 &call);
  CompletionRecorder<absl::StatusOr<InspectAnswer>> inspect;
  owner_.Query(
      Ask(InspectQuery{.lock = "L", .limit = 1000}, inspect.Callback()));
  EXPECT_FALSE(inspect.answered());
  log_->Fail(absl::UnavailableError("disk gone"));
  ASSERT_EQ(inspect.calls(), 1);
  EXPECT_EQ(inspect.answer().status().code(), absl::StatusCode::kUnavailable);
  ASSERT_EQ(call.completions(), 1);
  EXPECT_EQ(call.reply()->result.status().code(),
            absl::StatusCode::kUnavailable);
}

// One completion per mutation, run exactly once and only after the records
// the mutation appended are durable: never "now" for some outcomes and
// "later, from another thread" for others.
TEST_F(DurablePathTest, EveryMutationAnswersOnceAfterItsRecordsAreDurable) {
  auto sink = std::make_shared<NullSink>();
  CompletionRecorder<absl::StatusOr<SessionOpenedAnswer>> opened;
  owner_.Session(
      Ask(OpenSessionArgs{.client = "a", .sink = sink}, opened.Callback()));
  EXPECT_FALSE(opened.answered());
  log_->MakeDurable(log_->last_position());
  ASSERT_EQ(opened.calls(), 1);
  ASSERT_TRUE(opened.answer().ok());
  const std::string session = opened.answer()->session_id;

  RecordingCall acquired;
  owner_.Acquire(AcquireArgs{.client = "a",
                             .lock = "L",
                             .ttl_ms = 60'000,
                             .session_id = session},
                 &acquired);
  CompletionRecorder<absl::StatusOr<RenewAnswer>> renewed;
  owner_.Lease(Ask(RenewArgs{.client = "a", .lock = "L", .ttl_ms = 60'000},
                   renewed.Callback()));
  CompletionRecorder<absl::StatusOr<StoreAnswer>> written;
  Write("v", 1, written);
  CompletionRecorder<absl::StatusOr<int>> kept;
  owner_.Session(Ask(KeepaliveArgs{session, sink.get()}, kept.Callback()));
  CompletionRecorder<absl::StatusOr<ReleaseAnswer>> released;
  owner_.Lease(
      Ask(ReleaseArgs{.client = "a", .lock = "L"}, released.Callback()));
  RecordingCall again;
  owner_.Acquire(AcquireArgs{.client = "b", .lock = "L", .ttl_ms = 60'000},
                 &again);
  CompletionRecorder<absl::StatusOr<std::vector<CoreOwner::ForcedRelease>>>
      forced;
  owner_.Lease(Ask(ForceReleaseArgs{.lock = "L"}, forced.Callback()));
  CompletionRecorder<absl::Status> closed;
  owner_.Session(Ask(CloseSessionArgs{session, sink.get()}, closed.Callback()));
  const int pending = acquired.completions() + renewed.calls() +
                      written.calls() + kept.calls() + released.calls() +
                      again.completions() + forced.calls() + closed.calls();
  EXPECT_EQ(pending, 0);

  log_->MakeDurable(log_->last_position());
  EXPECT_EQ(acquired.completions(), 1);
  EXPECT_EQ(renewed.calls(), 1);
  EXPECT_EQ(written.calls(), 1);
  EXPECT_EQ(kept.calls(), 1);
  EXPECT_EQ(released.calls(), 1);
  EXPECT_EQ(again.completions(), 1);
  EXPECT_EQ(forced.calls(), 1);
  EXPECT_EQ(closed.calls(), 1);
  EXPECT_TRUE(acquired.reply()->result.ok());
  EXPECT_TRUE(renewed.answer().ok());
  EXPECT_TRUE(written.answer().ok());
  EXPECT_TRUE(kept.answer().ok());
  ASSERT_TRUE(released.answer().ok());
  EXPECT_EQ(*released.answer(), ReleaseAnswer::kReleased);
  ASSERT_TRUE(forced.answer().ok());
  ASSERT_EQ(forced.answer()->size(), 1u);
  EXPECT_EQ((*forced.answer())[0].client, "b");
  EXPECT_TRUE(closed.answer().ok());
}

// A refusal changed nothing, but it still answers in the stream's order:
// after the records appended before it are durable.
TEST_F(DurablePathTest, ARefusalWaitsForTheRecordsBeforeIt) {
  RecordingCall holder;
  owner_.Acquire(AcquireArgs{.client = "a", .lock = "L", .ttl_ms = 60'000},
                 &holder);
  CompletionRecorder<absl::StatusOr<ReleaseAnswer>> refused;
  owner_.Lease(
      Ask(ReleaseArgs{.client = "b", .lock = "L"}, refused.Callback()));
  EXPECT_FALSE(refused.answered());
  log_->MakeDurable(log_->last_position());
  ASSERT_EQ(refused.calls(), 1);
  EXPECT_FALSE(refused.answer().ok());
  EXPECT_EQ(holder.completions(), 1);
}

// A waiter's grant is answered through the waiter's call, once the
// Release that handed the lock on is durable; the Release's own answer
// comes after it.
TEST_F(DurablePathTest, AGrantFromTheQueueAnswersOnceTheHandOverIsDurable) {
  Grant("a", "L");
  RecordingCall waiter;
  owner_.Acquire(AcquireArgs{.client = "b",
                             .lock = "L",
                             .ttl_ms = 60'000,
                             .wait_timeout_ms = 10'000},
                 &waiter);
  log_->MakeDurable(log_->last_position());
  EXPECT_FALSE(waiter.reply().has_value());  // parked
  CompletionRecorder<absl::StatusOr<ReleaseAnswer>> released;
  owner_.Lease(
      Ask(ReleaseArgs{.client = "a", .lock = "L"}, released.Callback()));
  EXPECT_FALSE(waiter.reply().has_value());
  EXPECT_FALSE(released.answered());
  log_->MakeDurable(log_->last_position());
  ASSERT_EQ(waiter.completions(), 1);
  ASSERT_TRUE(waiter.reply()->result.ok());
  EXPECT_EQ(waiter.reply()->result->token, 2u);
  EXPECT_EQ(released.calls(), 1);
}

// Sessions and retry answers are server records of the same log, appended
// where they happen (before the answer that depends on them).
TEST_F(DurablePathTest, SessionsAndRetryAnswersAreLoggedAsServerRecords) {
  log_->AutoDurable(true);
  auto sink = std::make_shared<NullSink>();
  const absl::StatusOr<SessionOpenedAnswer> opened =
      testing::AnswerNow<absl::StatusOr<SessionOpenedAnswer>>([&](auto done) {
        owner_.Session(
            Ask(OpenSessionArgs{.client = "a", .sink = sink}, std::move(done)));
      });
  ASSERT_TRUE(opened.ok());
  AcquireArgs args{.client = "a",
                   .lock = "L",
                   .ttl_ms = 60'000,
                   .request_id = "r-1",
                   .session_id = opened->session_id};
  RecordingCall call;
  owner_.Acquire(args, &call);
  ASSERT_EQ(call.completions(), 1);
  ASSERT_TRUE(testing::AnswerNow<absl::Status>([&](auto done) {
                owner_.Session(
                    Ask(CloseSessionArgs{opened->session_id, sink.get()},
                        std::move(done)));
              }).ok());

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
