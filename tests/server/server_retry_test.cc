// Idempotent retries: a retry of Acquire, Renew or Release with the same
// request_id gets the first call's answer, so a lost response never turns
// into "client busy" or "not holder".
#include <string>

#include "gtest/gtest.h"
#include "tests/server/test_support.h"

namespace leasekeeper::testing {
namespace {

using std::chrono::milliseconds;

class RetryTest : public ServerTest {
 protected:
  Result<pb::AcquireResponse> AcquireWithId(const std::string& client,
                                            const std::string& lock,
                                            const std::string& id,
                                            int64_t ttl_ms = 60'000) {
    pb::AcquireRequest request = AcquireRequest(client, lock, ttl_ms);
    request.set_request_id(id);
    return client_->Acquire(request);
  }
  Result<pb::ReleaseResponse> ReleaseWithId(const std::string& client,
                                            const std::string& lock,
                                            const std::string& id) {
    pb::ReleaseRequest request;
    request.set_client_id(client);
    request.set_lock(lock);
    request.set_request_id(id);
    return client_->Release(request);
  }
};

TEST_F(RetryTest, AcquireRetryGetsTheFirstGrantNotClientBusy) {
  Result<pb::AcquireResponse> first = AcquireWithId("job", "L", "req-1");
  ASSERT_TRUE(first.response.has_granted());
  At(1'000);
  Result<pb::AcquireResponse> retry = AcquireWithId("job", "L", "req-1");
  ASSERT_TRUE(retry.ok()) << retry.status.error_message();
  ASSERT_TRUE(retry.response.has_granted());
  EXPECT_EQ(retry.response.granted().token(), first.response.granted().token());
  EXPECT_EQ(client_->Inspect("L").response.holders_size(), 1);
  // Without the id it is a new request, and the client is busy.
  EXPECT_EQ(client_->Acquire("job", "L", 60'000).reason, "CLIENT_BUSY");
}

TEST_F(RetryTest, QueuedAcquireRetryGetsItsPositionAgain) {
  ASSERT_TRUE(client_->Acquire("holder", "L", 60'000).ok());
  ASSERT_EQ(AcquireWithId("job", "L", "req-1").response.queued().position(), 1);
  Result<pb::AcquireResponse> retry = AcquireWithId("job", "L", "req-1");
  ASSERT_TRUE(retry.response.has_queued());
  EXPECT_EQ(retry.response.queued().position(), 1);
  EXPECT_EQ(client_->Inspect("L").response.queue_size(), 1);
}

TEST_F(RetryTest, ReleaseRetryGetsReleasedNotNotHolder) {
  ASSERT_TRUE(client_->Acquire("job", "L", 60'000).ok());
  Result<pb::ReleaseResponse> first = ReleaseWithId("job", "L", "rel-1");
  ASSERT_EQ(first.response.result(), pb::RELEASE_RESULT_RELEASED);
  Result<pb::ReleaseResponse> retry = ReleaseWithId("job", "L", "rel-1");
  ASSERT_TRUE(retry.ok()) << retry.status.error_message();
  EXPECT_EQ(retry.response.result(), pb::RELEASE_RESULT_RELEASED);
}

TEST_F(RetryTest, RenewRetryGetsTheFirstAnswer) {
  ASSERT_TRUE(client_->Acquire("job", "L", 10'000).ok());
  At(1'000);
  pb::RenewRequest renew;
  renew.set_client_id("job");
  renew.set_lock("L");
  renew.set_ttl_ms(10'000);
  renew.set_request_id("ren-1");
  Result<pb::RenewResponse> first = client_->Renew(renew);
  ASSERT_TRUE(first.ok());
  At(2'000);
  Result<pb::RenewResponse> retry = client_->Renew(renew);
  ASSERT_TRUE(retry.ok());
  EXPECT_EQ(retry.response.token(), first.response.token());
  EXPECT_EQ(retry.response.ttl_ms(), first.response.ttl_ms());
  // Not applied twice: the lease still ends at 11000.
  EXPECT_EQ(client_->Inspect("L").response.holders(0).expires_in_ms(), 9'000);
}

TEST_F(RetryTest, FirstErrorIsRepeatedToo) {
  Result<pb::ReleaseResponse> first = ReleaseWithId("job", "L", "rel-1");
  EXPECT_EQ(first.reason, "NOT_HOLDER");
  ASSERT_TRUE(client_->Acquire("job", "L", 60'000).ok());
  EXPECT_EQ(ReleaseWithId("job", "L", "rel-1").reason, "NOT_HOLDER");
  EXPECT_EQ(client_->Inspect("L").response.holders_size(), 1);
}

TEST_F(RetryTest, RequestIdReusedWithOtherArgumentsIsRefused) {
  ASSERT_TRUE(AcquireWithId("job", "L", "req-1").ok());
  Result<pb::AcquireResponse> reused = AcquireWithId("job", "M", "req-1");
  EXPECT_EQ(reused.code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(reused.reason, "REQUEST_ID_REUSED");
  EXPECT_EQ(ReleaseWithId("job", "L", "req-1").reason, "REQUEST_ID_REUSED");
  EXPECT_EQ(client_->Inspect("M").response.holders_size(), 0);
}

TEST_F(RetryTest, SameRequestIdOfDifferentClientsIsUnrelated) {
  ASSERT_TRUE(AcquireWithId("a", "L", "1").response.has_granted());
  Result<pb::AcquireResponse> other = AcquireWithId("b", "L", "1");
  ASSERT_TRUE(other.response.has_queued());
}

TEST_F(RetryTest, RetryOfAWaitingAcquireTakesItsPlace) {
  ASSERT_TRUE(client_->Acquire("holder", "L", 60'000).ok());
  pb::AcquireRequest request = AcquireRequest("job", "L", 5'000, 60'000);
  request.set_request_id("req-1");
  auto first = client_->StartAcquire(request);
  ASSERT_TRUE(ParkedCallsAre(1));
  auto retry = client_->StartAcquire(request);
  ASSERT_TRUE(first->Done(milliseconds(5'000)));
  Result<pb::AcquireResponse> superseded = first->Get();
  EXPECT_EQ(superseded.code(), grpc::StatusCode::CANCELLED);
  EXPECT_EQ(superseded.reason, "SUPERSEDED_BY_RETRY");
  EXPECT_EQ(client_->Inspect("L").response.queue_size(), 1);

  ASSERT_TRUE(client_->Release("holder", "L").ok());
  ASSERT_TRUE(retry->Done(milliseconds(5'000)));
  EXPECT_EQ(retry->Get().response.granted().token(), 2u);
  // And a third try still gets the grant.
  Result<pb::AcquireResponse> again = client_->Acquire(request);
  EXPECT_EQ(again.response.granted().token(), 2u);
}

TEST_F(RetryTest, AnswersAreForgottenAfterTheCacheTtl) {
  server::ServerConfig config = DefaultConfig();
  config.retry_cache.ttl_ms = 60'000;
  Restart(config);
  ASSERT_TRUE(AcquireWithId("job", "L", "req-1", 600'000).ok());
  At(59'999);
  EXPECT_TRUE(AcquireWithId("job", "L", "req-1", 600'000).ok());
  At(60'000);
  EXPECT_EQ(AcquireWithId("job", "L", "req-1", 600'000).reason, "CLIENT_BUSY");
}

}  // namespace
}  // namespace leasekeeper::testing
