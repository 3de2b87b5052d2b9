// SessionTable alone, with ticks for time: attached or in grace, what is
// due when, resumption, shutdown.
#include "server/session_table.h"

#include <memory>
#include <string>

#include "gtest/gtest.h"

namespace leasekeeper::server {
namespace {

class NullSink final : public SessionSink {
 public:
  void Notify(const SessionNotice&) override {}
  void End(const absl::Status&) override {}
};

class SessionTableTest : public ::testing::Test {
 protected:
  void TearDown() override {
    EXPECT_TRUE(table_.CheckInvariants(detached_all_).ok())
        << table_.CheckInvariants(detached_all_);
  }

  SessionTable table_;
  bool detached_all_ = false;
  std::shared_ptr<SessionSink> stream_ = std::make_shared<NullSink>();
  std::shared_ptr<SessionSink> other_stream_ = std::make_shared<NullSink>();
};

TEST_F(SessionTableTest, AnAttachedSessionIsNeverDue) {
  table_.Open("s-1", "job", stream_);
  EXPECT_EQ(table_.StateOf("job"), SessionState::kOpen);
  EXPECT_EQ(table_.NextDeadline(), kMaxTick);
  EXPECT_FALSE(table_.NextDue(kMaxTick - 1).has_value());
  EXPECT_EQ(table_.SinkOf("job"), stream_);
}

TEST_F(SessionTableTest, AStreamLossMakesTheSessionDueAtItsGraceDeadline) {
  table_.Open("s-1", "job", stream_);
  table_.StartGrace("s-1", 2'000);
  EXPECT_EQ(table_.StateOf("job"), SessionState::kGrace);
  EXPECT_EQ(table_.SinkOf("job"), nullptr);  // notices have nowhere to go
  EXPECT_EQ(table_.NextDeadline(), 2'000);
  EXPECT_FALSE(table_.NextDue(1'999).has_value());
  ASSERT_TRUE(table_.NextDue(2'000).has_value());
  EXPECT_EQ(table_.NextDue(2'000)->second, "s-1");
  // Due is a question, not a removal: the owner ends it.
  EXPECT_TRUE(table_.contains("s-1"));
  ASSERT_TRUE(table_.End("s-1").has_value());
  EXPECT_EQ(table_.StateOf("job"), SessionState::kNone);
  EXPECT_FALSE(table_.NextDue(kMaxTick - 1).has_value());
}

TEST_F(SessionTableTest, ResumingInGraceCancelsTheGrace) {
  table_.Open("s-1", "job", stream_);
  table_.StartGrace("s-1", 2'000);
  EXPECT_EQ(table_.Attach("s-1", other_stream_), nullptr);
  EXPECT_TRUE(table_.IsCarriedBy("s-1", other_stream_.get()));
  EXPECT_FALSE(table_.IsCarriedBy("s-1", stream_.get()));
  EXPECT_FALSE(table_.NextDue(5'000).has_value());
}

TEST_F(SessionTableTest, ResumingOverALiveStreamHandsBackTheOldStream) {
  table_.Open("s-1", "job", stream_);
  EXPECT_EQ(table_.Attach("s-1", other_stream_), stream_);
  EXPECT_TRUE(table_.IsCarriedBy("s-1", other_stream_.get()));
}

TEST_F(SessionTableTest, GracesComeDueInDeadlineOrderThenById) {
  table_.Open("s-b", "job-b", stream_);
  table_.Open("s-a", "job-a", other_stream_);
  table_.Restore("s-c", "job-c", 900);
  table_.StartGrace("s-b", 1'000);
  table_.StartGrace("s-a", 1'000);
  std::vector<std::string> order;
  while (auto due = table_.NextDue(1'000)) {
    order.push_back(due->second);
    table_.End(due->second);
  }
  EXPECT_EQ(order, (std::vector<std::string>{"s-c", "s-a", "s-b"}));
}

TEST_F(SessionTableTest, ARestoredSessionIsInGraceWithoutAStream) {
  table_.Restore("s-1", "job", 10'000);
  EXPECT_EQ(table_.StateOf("job"), SessionState::kGrace);
  EXPECT_EQ(*table_.SessionOf("job"), "s-1");
  EXPECT_FALSE(table_.IsCarriedBy("s-1", stream_.get()));
  EXPECT_EQ(table_.NextDeadline(), 10'000);
}

TEST_F(SessionTableTest, EndingAnUnknownSessionChangesNothing) {
  table_.Open("s-1", "job", stream_);
  EXPECT_FALSE(table_.End("s-2").has_value());
  EXPECT_EQ(table_.size(), 1u);
}

TEST_F(SessionTableTest, ShutdownDetachesEveryStreamAndEndsNoSession) {
  table_.Open("s-1", "job-1", stream_);
  table_.Open("s-2", "job-2", other_stream_);
  table_.StartGrace("s-2", 500);
  std::vector<std::shared_ptr<SessionSink>> ended = table_.DetachAll();
  detached_all_ = true;
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0], stream_);
  EXPECT_EQ(table_.size(), 2u);
  EXPECT_FALSE(table_.NextDue(kMaxTick - 1).has_value());
}

}  // namespace
}  // namespace leasekeeper::server
