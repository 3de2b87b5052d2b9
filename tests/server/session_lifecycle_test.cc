// SessionLifecycle alone, on a FakeOperationLog, with ticks for time:
// opening and its limit, resuming, a lost stream's grace, ending, and the
// grace of a session recovered after a restart.
#include "server/session_lifecycle.h"

#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "gtest/gtest.h"
#include "server/server_errors.h"
#include "tests/server/fake_operation_log.h"

namespace leasekeeper::server {
namespace {

using testing::FakeOperationLog;

class NullSink final : public SessionSink {
 public:
  void Notify(const SessionNotice&) override {}
  void End(const absl::Status&) override {}
};

class SessionLifecycleTest : public ::testing::Test {
 protected:
  explicit SessionLifecycleTest(int64_t grace_ms = 2'000)
      : machine_(CoreConfig{}, [] { return storage::ServerState{}; }),
        sessions_(SessionLifecycle::Options{.grace_ms = grace_ms,
                                            .restart_grace_ms = 5'000},
                  limits_, machine_) {
    auto log = std::make_unique<FakeOperationLog>();
    log_ = log.get();
    EXPECT_TRUE(machine_.UseLog(std::move(log)).ok());
  }
  void TearDown() override {
    EXPECT_TRUE(sessions_.table().CheckInvariants(false).ok());
  }

  std::vector<storage::ServerRecord> Records() const {
    return log_->server_records();
  }

  std::string OpenFor(const std::string& client, Tick now = 10) {
    absl::StatusOr<SessionOpenedAnswer> opened =
        sessions_.Open(client, stream_, now);
    EXPECT_TRUE(opened.ok()) << opened.status();
    return opened.ok() ? opened->session_id : "";
  }

  const Limits limits_{.max_sessions = 2};
  DurableStateMachine machine_;
  SessionLifecycle sessions_;
  FakeOperationLog* log_ = nullptr;
  std::shared_ptr<SessionSink> stream_ = std::make_shared<NullSink>();
};

TEST_F(SessionLifecycleTest, AnOpenedSessionIsLoggedAtItsInstant) {
  const std::string id = OpenFor("job", 10);
  EXPECT_EQ(sessions_.table().StateOf("job"), SessionState::kOpen);
  const std::vector<storage::ServerRecord> records = Records();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].at, 10);
  const auto* opened =
      std::get_if<storage::srec::SessionOpened>(&records[0].body);
  ASSERT_NE(opened, nullptr);
  EXPECT_EQ(opened->session_id, id);
  EXPECT_EQ(opened->client, "job");
}

TEST_F(SessionLifecycleTest, OpeningPastMaxSessionsIsRefused) {
  OpenFor("a");
  OpenFor("b");
  absl::StatusOr<SessionOpenedAnswer> third = sessions_.Open("c", stream_, 10);
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(ErrorInfoOf(third.status()).limit, "max-sessions");
  EXPECT_EQ(Records().size(), 2u);
}

TEST_F(SessionLifecycleTest, ARequestNamesOnlyALiveSessionOfItsOwnClient) {
  const std::string id = OpenFor("job");
  EXPECT_TRUE(sessions_.Check("", "anyone").ok());
  EXPECT_TRUE(sessions_.Check(id, "job").ok());
  EXPECT_EQ(sessions_.Check(id, "other").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(sessions_.Check("s-never-issued", "job"), SessionEnded());
}

TEST_F(SessionLifecycleTest, ResumingReplacesAStreamStillAttached) {
  const std::string id = OpenFor("job");
  auto other = std::make_shared<NullSink>();
  absl::StatusOr<SessionLifecycle::Resumed> resumed =
      sessions_.Resume("job", id, other);
  ASSERT_TRUE(resumed.ok());
  EXPECT_TRUE(resumed->answer.resumed);
  EXPECT_EQ(resumed->answer.grace_ms, 2'000);
  EXPECT_EQ(resumed->replaced, stream_);
  EXPECT_TRUE(sessions_.table().IsCarriedBy(id, other.get()));
}

TEST_F(SessionLifecycleTest, ResumingAnEndedOrAnotherClientsSessionIsRefused) {
  const std::string id = OpenFor("job");
  EXPECT_FALSE(sessions_.Resume("other", id, stream_).ok());
  ASSERT_TRUE(sessions_.End(id, 20).has_value());
  EXPECT_EQ(sessions_.Resume("job", id, stream_).status(), SessionEnded());
}

TEST_F(SessionLifecycleTest, ALostStreamStartsTheGrace) {
  const std::string id = OpenFor("job");
  EXPECT_TRUE(sessions_.StreamLost(id, 100));
  EXPECT_EQ(sessions_.table().StateOf("job"), SessionState::kGrace);
  EXPECT_EQ(sessions_.table().NextDeadline(), 2'100);
}

class NoGraceTest : public SessionLifecycleTest {
 protected:
  NoGraceTest() : SessionLifecycleTest(/*grace_ms=*/0) {}
  void TearDown() override {}
};

TEST_F(NoGraceTest, ALostStreamWithoutGraceEndsAtOnce) {
  const std::string id = OpenFor("job");
  EXPECT_FALSE(sessions_.StreamLost(id, 100));
  ASSERT_TRUE(sessions_.End(id, 100).has_value());
  EXPECT_TRUE(sessions_.table().CheckInvariants(false).ok());
}

TEST_F(SessionLifecycleTest, EndingLogsTheEndOnceAtItsInstant) {
  const std::string id = OpenFor("job");
  ASSERT_TRUE(sessions_.End(id, 40).has_value());
  EXPECT_FALSE(sessions_.End(id, 50).has_value());
  const std::vector<storage::ServerRecord> records = Records();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[1].at, 40);
  EXPECT_TRUE(
      std::holds_alternative<storage::srec::SessionEnded>(records[1].body));
}

TEST_F(SessionLifecycleTest, ARecoveredSessionIsInGraceForTheLongerGrace) {
  sessions_.Restore({{.session_id = "s-1", .client = "job"}}, 1'000);
  EXPECT_EQ(sessions_.table().StateOf("job"), SessionState::kGrace);
  EXPECT_EQ(sessions_.table().NextDeadline(), 6'000);
  storage::ServerState saved;
  sessions_.SaveTo(saved);
  ASSERT_EQ(saved.sessions.size(), 1u);
  EXPECT_EQ(saved.sessions[0].session_id, "s-1");
}

}  // namespace
}  // namespace leasekeeper::server
