// Sessions: one keepalive renews all of a client's leases; when the stream
// ends without close, the client's locks are released after the grace; and
// requests naming an ended session are refused, so a late or duplicated
// Acquire cannot leak a lock. In-process server, fake clock, grace 2 s.
#include <csignal>
#include <memory>
#include <optional>
#include <string>

#include "gtest/gtest.h"
#include "tests/server/session_stream.h"
#include "tests/server/test_support.h"

namespace leasekeeper::testing {
namespace {

using std::chrono::milliseconds;

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

  // "holder" holds L; `stream`'s session for "job" sends call 1, an
  // Acquire of L that waits (up to 60 s), and the server has parked it.
  void WaitForLOnTheStream(SessionStream& stream) {
    ASSERT_TRUE(client_->Acquire("holder", "L", 600'000).ok());
    OpenSession(stream, "job");
    ASSERT_TRUE(stream.SendCall(1, AcquireCall("L", 5'000, 60'000)));
    ASSERT_TRUE(ParkedCallsAre(1));
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

TEST_F(SessionTest, CallsOnTheStreamActForTheSessionsClient) {
  SessionStream stream(client_->stub());
  const std::string session = OpenSession(stream, "job");
  std::optional<pb::SessionCallResult> acquired =
      stream.Call(1, AcquireCall("L", 10'000));
  ASSERT_TRUE(acquired.has_value() && acquired->has_acquire());
  ASSERT_TRUE(acquired->acquire().has_granted());
  EXPECT_EQ(acquired->acquire().granted().token(), 1u);
  pb::InspectResponse inspect = client_->Inspect("L").response;
  ASSERT_EQ(inspect.holders_size(), 1);
  EXPECT_EQ(inspect.holders(0).client_id(), "job");
  EXPECT_EQ(client_->Status("job").response.holds_size(), 1);

  At(4'000);
  std::optional<pb::SessionCallResult> renewed =
      stream.Call(2, RenewCall("L", 20'000));
  ASSERT_TRUE(renewed.has_value() && renewed->has_renew());
  EXPECT_EQ(renewed->renew().token(), 1u);
  EXPECT_EQ(renewed->renew().ttl_ms(), 20'000);
  EXPECT_EQ(client_->Inspect("L").response.holders(0).expires_in_ms(), 20'000);

  std::optional<pb::SessionCallResult> released =
      stream.Call(3, ReleaseCall("L"));
  ASSERT_TRUE(released.has_value() && released->has_release());
  EXPECT_EQ(released->release().result(), pb::RELEASE_RESULT_RELEASED);
  EXPECT_EQ(client_->Inspect("L").response.holders_size(), 0);
  EXPECT_TRUE(stream.Close().ok());
}

TEST_F(SessionTest, CallErrorsCarryTheContractTextAndReasonAndChangeNothing) {
  SessionStream stream(client_->stub());
  OpenSession(stream, "job");
  ASSERT_TRUE(stream.Call(1, AcquireCall("L", 10'000))->acquire().has_granted());

  std::optional<pb::SessionCallResult> busy =
      stream.Call(2, AcquireCall("L", 10'000));
  ASSERT_TRUE(busy.has_value() && busy->has_error());
  EXPECT_EQ(busy->error().code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(busy->error().message(), "client busy");
  EXPECT_EQ(busy->error().detail().reason(), pb::CLIENT_BUSY);

  std::optional<pb::SessionCallResult> not_holder =
      stream.Call(3, RenewCall("M", 10'000));
  ASSERT_TRUE(not_holder.has_value() && not_holder->has_error());
  EXPECT_EQ(not_holder->error().message(), "not holder");
  EXPECT_EQ(not_holder->error().detail().reason(), pb::NOT_HOLDER);

  std::optional<pb::SessionCallResult> bad_ttl =
      stream.Call(4, AcquireCall("M", 0));
  ASSERT_TRUE(bad_ttl.has_value() && bad_ttl->has_error());
  EXPECT_EQ(bad_ttl->error().code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(bad_ttl->error().message(), "invalid ttl");
  EXPECT_EQ(bad_ttl->error().detail().field(), "ttl_ms");

  std::optional<pb::SessionCallResult> empty =
      stream.Call(5, pb::SessionCall());
  ASSERT_TRUE(empty.has_value() && empty->has_error());
  EXPECT_EQ(empty->error().code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(empty->error().detail().field(), "request");

  pb::InspectResponse inspect = client_->Inspect("L").response;
  ASSERT_EQ(inspect.holders_size(), 1);
  EXPECT_EQ(inspect.holders(0).token(), 1u);
  EXPECT_EQ(client_->Inspect("M").response.holders_size(), 0);
  EXPECT_TRUE(stream.Close().ok());
}

TEST_F(SessionTest, StreamCannotActForAnotherClientOrSession) {
  SessionStream stream(client_->stub());
  OpenSession(stream, "job");
  pb::SessionCall other_client = AcquireCall("L", 10'000);
  other_client.mutable_acquire()->set_client_id("someone-else");
  std::optional<pb::SessionCallResult> refused =
      stream.Call(1, std::move(other_client));
  ASSERT_TRUE(refused.has_value() && refused->has_error());
  EXPECT_EQ(refused->error().code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(refused->error().detail().field(), "client_id");

  pb::SessionCall other_session = AcquireCall("L", 10'000);
  other_session.mutable_acquire()->set_session_id("not-this-one");
  refused = stream.Call(2, std::move(other_session));
  ASSERT_TRUE(refused.has_value() && refused->has_error());
  EXPECT_EQ(refused->error().detail().field(), "session_id");

  EXPECT_EQ(client_->Inspect("L").response.holders_size(), 0);
  EXPECT_EQ(client_->Status("someone-else").response.holds_size(), 0);
  EXPECT_TRUE(stream.Close().ok());
}

TEST_F(SessionTest, WaitingCallOnTheStreamDoesNotHoldUpLaterCalls) {
  SessionStream stream(client_->stub());
  ASSERT_NO_FATAL_FAILURE(WaitForLOnTheStream(stream));
  std::optional<pb::SessionCallResult> renew =
      stream.Call(2, RenewCall("M", 1'000));
  ASSERT_TRUE(renew.has_value() && renew->has_error());
  EXPECT_EQ(renew->error().message(), "not holder");

  At(1'000);
  ASSERT_TRUE(client_->Release("holder", "L").ok());
  std::optional<pb::SessionCallResult> granted = stream.NextResult();
  ASSERT_TRUE(granted.has_value());
  EXPECT_EQ(granted->call_id(), 1u);
  ASSERT_TRUE(granted->acquire().has_granted());
  EXPECT_EQ(granted->acquire().granted().token(), 2u);
  EXPECT_EQ(granted->acquire().granted().ttl_ms(), 5'000);
  EXPECT_EQ(client_->Inspect("L").response.holders(0).client_id(), "job");
  EXPECT_TRUE(stream.Close().ok());
}

TEST_F(SessionTest, WaitingCallOnAStreamThatEndsIsWithdrawnAtOnce) {
  SessionStream stream(client_->stub());
  ASSERT_NO_FATAL_FAILURE(WaitForLOnTheStream(stream));
  stream.Abandon();
  // Withdrawn when the stream ends, not when the grace does: the clock
  // stays where it is.
  EXPECT_TRUE(Eventually(
      [&] { return client_->Inspect("L").response.queue_size() == 0; }));
  EXPECT_TRUE(ParkedCallsAre(0));
  ASSERT_TRUE(client_->Release("holder", "L").ok());
  EXPECT_EQ(client_->Inspect("L").response.holders_size(), 0);
}

TEST_F(SessionTest, CallBeforeOpenEndsTheStream) {
  SessionStream stream(client_->stub());
  ASSERT_TRUE(stream.SendCall(1, AcquireCall("L", 10'000)));
  EXPECT_FALSE(stream.NextResult().has_value());
  EXPECT_EQ(stream.Finish().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(client_->Inspect("L").response.holders_size(), 0);
}

}  // namespace
}  // namespace leasekeeper::testing
