// Sessions: one keepalive renews all of a client's leases; when the stream
// ends without close, the client's locks are released after the grace; and
// requests naming an ended session are refused, so a late or duplicated
// Acquire cannot leak a lock. In-process server, fake clock, grace 2 s.
#include <csignal>
#include <memory>
#include <optional>
#include <string>

#include "gtest/gtest.h"
#include "tests/server/test_support.h"

namespace leasekeeper::testing {
namespace {

using std::chrono::milliseconds;

class SessionStream {
 public:
  explicit SessionStream(pb::LockService::Stub& stub) {
    context_.set_deadline(std::chrono::system_clock::now() +
                          std::chrono::seconds(20));
    stream_ = stub.Session(&context_);
  }

  // Sends open and returns the first answer (nullopt if the stream ended).
  std::optional<pb::SessionResponse> Open(const std::string& client,
                                          const std::string& resume = "") {
    pb::SessionRequest request;
    request.mutable_open()->set_client_id(client);
    request.mutable_open()->set_resume_session_id(resume);
    if (!stream_->Write(request)) return std::nullopt;
    return Next();
  }

  // Sends a keepalive and returns its ack, skipping notices (kept).
  std::optional<pb::KeepaliveAck> Keepalive(uint64_t sequence) {
    pb::SessionRequest request;
    request.mutable_keepalive()->set_sequence(sequence);
    if (!stream_->Write(request)) return std::nullopt;
    while (std::optional<pb::SessionResponse> message = Next()) {
      if (message->has_keepalive_ack()) return message->keepalive_ack();
      notices_.push_back(message->notice());
    }
    return std::nullopt;
  }

  // Sends close and returns the stream's final status.
  grpc::Status Close() {
    pb::SessionRequest request;
    request.mutable_close();
    stream_->Write(request);
    stream_->WritesDone();
    return Finish();
  }

  std::optional<pb::SessionResponse> Next() {
    pb::SessionResponse message;
    if (!stream_->Read(&message)) return std::nullopt;
    return message;
  }

  grpc::Status Finish() {
    while (Next().has_value()) {
    }
    return stream_->Finish();
  }

  // Drops the stream as a crashed process would.
  void Abandon() { context_.TryCancel(); }

  std::vector<pb::LockNotice>& notices() { return notices_; }

 private:
  grpc::ClientContext context_;
  std::unique_ptr<
      grpc::ClientReaderWriter<pb::SessionRequest, pb::SessionResponse>>
      stream_;
  std::vector<pb::LockNotice> notices_;
};

class SessionTest : public ServerTest {
 protected:
  // Opens a session for `client` and returns its id.
  std::string OpenSession(SessionStream& stream, const std::string& client) {
    std::optional<pb::SessionResponse> opened = stream.Open(client);
    EXPECT_TRUE(opened.has_value() && opened->has_opened());
    if (!opened.has_value()) return "";
    EXPECT_EQ(opened->opened().grace_ms(), 2'000);
    return opened->opened().session_id();
  }

  Result<pb::AcquireResponse> AcquireIn(const std::string& session,
                                        const std::string& client,
                                        const std::string& lock,
                                        int64_t ttl_ms) {
    pb::AcquireRequest request = AcquireRequest(client, lock, ttl_ms);
    request.set_session_id(session);
    return client_->Acquire(request);
  }

  pb::SessionState SessionOf(const std::string& client) {
    return client_->Status(client).response.session();
  }
};

TEST_F(SessionTest, OneKeepaliveRenewsEveryLeaseOfTheClient) {
  SessionStream stream(client_->stub());
  const std::string session = OpenSession(stream, "job");
  ASSERT_TRUE(AcquireIn(session, "job", "L1", 10'000).response.has_granted());
  ASSERT_TRUE(AcquireIn(session, "job", "L2", 10'000).response.has_granted());
  At(8'000);
  std::optional<pb::KeepaliveAck> ack = stream.Keepalive(7);
  ASSERT_TRUE(ack.has_value());
  EXPECT_EQ(ack->sequence(), 7u);
  EXPECT_EQ(ack->renewed_leases(), 2);
  At(15'000);  // past the original expiry at 10000
  EXPECT_EQ(client_->Inspect("L1").response.holders(0).expires_in_ms(), 3'000);
  EXPECT_EQ(client_->Inspect("L2").response.holders(0).expires_in_ms(), 3'000);
  EXPECT_TRUE(stream.Close().ok());
}

TEST_F(SessionTest, CrashedHoldersLocksPassOnWhenTheGraceEnds) {
  ChildProcess crashy(TestClientPath(),
                      {"session-hold", address_, "crashy", "L", "600000"});
  std::optional<std::string> line = crashy.ReadLine(milliseconds(10'000));
  ASSERT_TRUE(line.has_value() && line->rfind("holding ", 0) == 0)
      << line.value_or("<nothing>");
  auto waiter =
      client_->StartAcquire(AcquireRequest("next", "L", 5'000, 600'000));
  ASSERT_TRUE(ParkedCallsAre(1));
  EXPECT_EQ(SessionOf("crashy"), pb::SESSION_STATE_OPEN);

  crashy.Signal(SIGKILL);
  ASSERT_TRUE(Eventually(
      [&] { return SessionOf("crashy") == pb::SESSION_STATE_GRACE; }));
  At(1'999);
  EXPECT_FALSE(waiter->Done(milliseconds(50)));
  At(2'000);  // the grace ends; the 10-minute lease does not matter
  ASSERT_TRUE(waiter->Done(milliseconds(5'000)));
  Result<pb::AcquireResponse> result = waiter->Get();
  ASSERT_TRUE(result.response.has_granted());
  EXPECT_EQ(result.response.granted().token(), 2u);
  EXPECT_EQ(result.response.granted().waited_ms(), 2'000);
  EXPECT_EQ(SessionOf("crashy"), pb::SESSION_STATE_NONE);
  EXPECT_EQ(client_->Status("crashy").response.holds_size(), 0);
}

TEST_F(SessionTest, RequestsNamingAClosedSessionAreRefused) {
  SessionStream stream(client_->stub());
  const std::string session = OpenSession(stream, "job");
  ASSERT_TRUE(AcquireIn(session, "job", "L", 60'000).response.has_granted());
  EXPECT_TRUE(stream.Close().ok());
  // close released the lock at once
  EXPECT_EQ(client_->Inspect("L").response.holders_size(), 0);

  Result<pb::AcquireResponse> late = AcquireIn(session, "job", "L", 60'000);
  EXPECT_EQ(late.code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(late.status.error_message(), "session ended");
  EXPECT_EQ(late.reason, "SESSION_ENDED");
  EXPECT_EQ(client_->Inspect("L").response.holders_size(), 0);

  pb::RenewRequest renew;
  renew.set_client_id("job");
  renew.set_lock("L");
  renew.set_ttl_ms(1'000);
  renew.set_session_id(session);
  EXPECT_EQ(client_->Renew(renew).reason, "SESSION_ENDED");
  pb::ReleaseRequest release;
  release.set_client_id("job");
  release.set_lock("L");
  release.set_session_id(session);
  EXPECT_EQ(client_->Release(release).reason, "SESSION_ENDED");
}

TEST_F(SessionTest, UnknownSessionIdIsRefusedAsEnded) {
  Result<pb::AcquireResponse> result =
      AcquireIn("s-from-before-a-restart", "job", "L", 60'000);
  EXPECT_EQ(result.code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(result.reason, "SESSION_ENDED");
  EXPECT_FALSE(client_->Status("job").response.registered());
}

TEST_F(SessionTest, AnotherClientsSessionIsAnInvalidArgument) {
  SessionStream stream(client_->stub());
  const std::string session = OpenSession(stream, "owner");
  Result<pb::AcquireResponse> result =
      AcquireIn(session, "intruder", "L", 1'000);
  EXPECT_EQ(result.code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(result.detail.field(), "session_id");
  EXPECT_TRUE(stream.Close().ok());
}

TEST_F(SessionTest, LateAcquireArrivingDuringTheGraceIsReleasedWhenItEnds) {
  SessionStream stream(client_->stub());
  const std::string session = OpenSession(stream, "job");
  stream.Abandon();
  ASSERT_TRUE(
      Eventually([&] { return SessionOf("job") == pb::SESSION_STATE_GRACE; }));
  At(500);
  // A duplicated request, delivered late.
  ASSERT_TRUE(AcquireIn(session, "job", "L", 600'000).response.has_granted());
  At(2'000);
  EXPECT_TRUE(Eventually(
      [&] { return client_->Inspect("L").response.holders_size() == 0; }));
  EXPECT_EQ(AcquireIn(session, "job", "L", 600'000).reason, "SESSION_ENDED");
  EXPECT_EQ(client_->Inspect("L").response.holders_size(), 0);
}

TEST_F(SessionTest, ResumeWithinTheGraceKeepsTheLeases) {
  std::string session;
  {
    SessionStream stream(client_->stub());
    session = OpenSession(stream, "job");
    ASSERT_TRUE(AcquireIn(session, "job", "L", 600'000).response.has_granted());
    stream.Abandon();
  }
  ASSERT_TRUE(
      Eventually([&] { return SessionOf("job") == pb::SESSION_STATE_GRACE; }));
  At(1'500);
  SessionStream resumed(client_->stub());
  std::optional<pb::SessionResponse> opened = resumed.Open("job", session);
  ASSERT_TRUE(opened.has_value() && opened->has_opened());
  EXPECT_TRUE(opened->opened().resumed());
  EXPECT_EQ(opened->opened().session_id(), session);
  At(10'000);
  EXPECT_EQ(client_->Inspect("L").response.holders_size(), 1);
  EXPECT_EQ(SessionOf("job"), pb::SESSION_STATE_OPEN);
  EXPECT_TRUE(resumed.Close().ok());
}

TEST_F(SessionTest, ResumingAnEndedSessionFails) {
  std::string session;
  {
    SessionStream stream(client_->stub());
    session = OpenSession(stream, "job");
    EXPECT_TRUE(stream.Close().ok());
  }
  SessionStream again(client_->stub());
  EXPECT_FALSE(again.Open("job", session).has_value());
  grpc::Status status = again.Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(status.error_message(), "session ended");
}

TEST_F(SessionTest, NewSessionOfTheClientEndsThePreviousOne) {
  SessionStream first(client_->stub());
  const std::string old_session = OpenSession(first, "job");
  ASSERT_TRUE(
      AcquireIn(old_session, "job", "L", 600'000).response.has_granted());

  SessionStream second(client_->stub());  // the restarted process
  const std::string new_session = OpenSession(second, "job");
  EXPECT_NE(new_session, old_session);
  EXPECT_EQ(client_->Inspect("L").response.holders_size(), 0);
  EXPECT_EQ(first.Finish().error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(AcquireIn(old_session, "job", "L", 1'000).reason, "SESSION_ENDED");
  EXPECT_TRUE(AcquireIn(new_session, "job", "L", 1'000).response.has_granted());
  EXPECT_TRUE(second.Close().ok());
}

TEST_F(SessionTest, GrantOfAQueuedRequestIsPushedToTheSession) {
  ASSERT_TRUE(client_->Acquire("a", "L", 60'000).ok());
  SessionStream stream(client_->stub());
  const std::string session = OpenSession(stream, "b");
  ASSERT_TRUE(AcquireIn(session, "b", "L", 9'000).response.has_queued());
  At(1'000);
  ASSERT_TRUE(client_->Release("a", "L").ok());
  std::optional<pb::SessionResponse> message = stream.Next();
  ASSERT_TRUE(message.has_value() && message->has_notice());
  EXPECT_EQ(message->notice().kind(), pb::NOTICE_KIND_GRANTED_FROM_QUEUE);
  EXPECT_EQ(message->notice().lock(), "L");
  EXPECT_EQ(message->notice().token(), 2u);
  EXPECT_EQ(message->notice().ttl_ms(), 9'000);
  At(10'000);
  message = stream.Next();
  ASSERT_TRUE(message.has_value() && message->has_notice());
  EXPECT_EQ(message->notice().kind(), pb::NOTICE_KIND_LEASE_LAPSED);
  EXPECT_TRUE(stream.Close().ok());
}

TEST_F(SessionTest, WaitingCallOfALostSessionIsWithdrawnWhenTheGraceEnds) {
  ASSERT_TRUE(client_->Acquire("holder", "L", 600'000).ok());
  SessionStream stream(client_->stub());
  const std::string session = OpenSession(stream, "job");
  pb::AcquireRequest request = AcquireRequest("job", "L", 1'000, 600'000);
  request.set_session_id(session);
  auto waiter = client_->StartAcquire(request);
  ASSERT_TRUE(ParkedCallsAre(1));
  stream.Abandon();
  ASSERT_TRUE(
      Eventually([&] { return SessionOf("job") == pb::SESSION_STATE_GRACE; }));
  At(2'000);
  ASSERT_TRUE(waiter->Done(milliseconds(5'000)));
  Result<pb::AcquireResponse> result = waiter->Get();
  ASSERT_TRUE(result.response.has_withdrawn());
  EXPECT_EQ(result.response.withdrawn().reason(),
            pb::WITHDRAW_REASON_SESSION_ENDED);
  EXPECT_EQ(client_->Inspect("L").response.queue_size(), 0);
}

TEST_F(SessionTest, FirstMessageMustOpenWithAClientId) {
  {
    SessionStream stream(client_->stub());
    EXPECT_FALSE(stream.Open("").has_value());
    EXPECT_EQ(stream.Finish().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  }
  {
    SessionStream stream(client_->stub());
    EXPECT_FALSE(stream.Keepalive(1).has_value());
    EXPECT_EQ(stream.Finish().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  }
}

}  // namespace
}  // namespace leasekeeper::testing
