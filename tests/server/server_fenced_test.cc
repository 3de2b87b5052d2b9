// The daemon's fenced store over gRPC (in-process, fake clock): tokens that
// were never issued are refused, holder-checked writes refuse a holder that
// stalled past its lease, and fenced reads raise the high-water mark.
#include <cstdint>
#include <string>

#include "gtest/gtest.h"
#include "tests/server/test_support.h"

namespace leasekeeper::testing {
namespace {

constexpr uint64_t kMaxToken = ~uint64_t{0};

class FencedStoreTest : public ServerTest {
 protected:
  uint64_t Grant(const std::string& client, const std::string& lock,
                 int64_t ttl_ms) {
    Result<pb::AcquireResponse> acquired =
        client_->Acquire(client, lock, ttl_ms);
    EXPECT_TRUE(acquired.ok()) << acquired.status.error_message();
    EXPECT_TRUE(acquired.response.has_granted());
    return acquired.response.granted().token();
  }
  std::string Value(const std::string& lock, const std::string& key) {
    Result<pb::ReadResponse> read = client_->Read(lock, key);
    EXPECT_TRUE(read.ok()) << read.status.error_message();
    return read.response.found() ? read.response.value() : "<none>";
  }
};

TEST_F(FencedStoreTest, TokenNeverIssuedIsRefusedAndCannotPoisonTheLock) {
  ASSERT_EQ(Grant("alice", "L", 60'000), 1u);
  Result<pb::WriteResponse> poison =
      client_->Write(WriteRequest("L", "k", "evil", kMaxToken));
  EXPECT_EQ(poison.code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(poison.status.error_message(), "token not issued");
  EXPECT_EQ(poison.reason, "TOKEN_NOT_ISSUED");
  EXPECT_EQ(poison.detail.reason(), pb::TOKEN_NOT_ISSUED);
  EXPECT_EQ(Value("L", "k"), "<none>");
  // The real holder's writes are still accepted.
  EXPECT_TRUE(
      client_->Write(WriteRequest("L", "k", "real", 1, "alice", true)).ok());
  EXPECT_EQ(Value("L", "k"), "real");
  // A lock never granted has issued nothing.
  EXPECT_EQ(client_->Write(WriteRequest("M", "k", "v", 1)).reason,
            "TOKEN_NOT_ISSUED");
}

TEST_F(FencedStoreTest, HeldWriteNeedsAClientId) {
  ASSERT_EQ(Grant("alice", "L", 60'000), 1u);
  Result<pb::WriteResponse> anonymous =
      client_->Write(WriteRequest("L", "k", "v", 1, "", true));
  EXPECT_EQ(anonymous.code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(anonymous.detail.field(), "client_id");
  EXPECT_EQ(Value("L", "k"), "<none>");
}

TEST_F(FencedStoreTest, HeldWriteOfAnotherClientIsNotHolder) {
  ASSERT_EQ(Grant("alice", "L", 60'000), 1u);
  Result<pb::WriteResponse> bob =
      client_->Write(WriteRequest("L", "k", "bob's", 1, "bob", true));
  EXPECT_EQ(bob.code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(bob.reason, "NOT_HOLDER");
  EXPECT_EQ(Value("L", "k"), "<none>");
}

// Holder A (token 21) reads counter = 20 and stalls past its lease; B is
// granted token 22 and reads 20; then A and B each write 21.
class LostUpdateTest : public FencedStoreTest {
 protected:
  void SetUp() override {
    FencedStoreTest::SetUp();
    for (uint64_t token = 1; token <= 20; ++token) {
      ASSERT_EQ(Grant("earlier", "C", 60'000), token);
      ASSERT_TRUE(client_->Release("earlier", "C").ok());
    }
    ASSERT_TRUE(
        client_->Write(WriteRequest("C", "counter", "20", 20, "earlier"))
            .ok());
    At(1'000);
    ASSERT_EQ(Grant("A", "C", 5'000), 21u);  // lease [1000, 6000)
    ASSERT_EQ(Value("C", "counter"), "20");
    At(6'000);  // A stalls: its lease has lapsed
    ASSERT_EQ(Grant("B", "C", 5'000), 22u);
    ASSERT_EQ(Value("C", "counter"), "20");
    At(6'001);
  }
};

TEST_F(LostUpdateTest, WithoutHeldWritesTheStalledHolderLosesAnIncrement) {
  EXPECT_TRUE(
      client_->Write(WriteRequest("C", "counter", "21", 21, "A", false)).ok())
      << "the token rule alone accepts 21: the highest accepted is 20";
  EXPECT_TRUE(
      client_->Write(WriteRequest("C", "counter", "21", 22, "B", false)).ok());
  EXPECT_EQ(Value("C", "counter"), "21") << "two increments, one visible";
}

TEST_F(LostUpdateTest, HeldWriteRefusesTheStalledHolder) {
  Result<pb::WriteResponse> late =
      client_->Write(WriteRequest("C", "counter", "21", 21, "A", true));
  EXPECT_EQ(late.code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(late.reason, "NOT_HOLDER");
  EXPECT_EQ(Value("C", "counter"), "20");
  EXPECT_TRUE(
      client_->Write(WriteRequest("C", "counter", "21", 22, "B", true)).ok());
  EXPECT_EQ(Value("C", "counter"), "21");
}

TEST_F(LostUpdateTest, FencedReadOfTheSuccessorRefusesTheStalledWrite) {
  // B reads with its token: the mark rises to 22 before A writes.
  Result<pb::ReadResponse> read =
      client_->Read(ReadRequest("C", "counter", 22));
  ASSERT_TRUE(read.ok()) << read.status.error_message();
  EXPECT_EQ(read.response.value(), "20");
  Result<pb::WriteResponse> late =
      client_->Write(WriteRequest("C", "counter", "21", 21));
  EXPECT_EQ(late.reason, "STALE_TOKEN");
  EXPECT_TRUE(client_->Write(WriteRequest("C", "counter", "21", 22)).ok());
  EXPECT_EQ(Value("C", "counter"), "21");
}

TEST_F(FencedStoreTest, FencedReadWithAStaleOrMadeUpTokenIsRefused) {
  ASSERT_EQ(Grant("a", "L", 60'000), 1u);
  ASSERT_TRUE(client_->Release("a", "L").ok());
  ASSERT_EQ(Grant("b", "L", 60'000), 2u);
  ASSERT_TRUE(client_->Read(ReadRequest("L", "k", 2)).ok());
  EXPECT_EQ(client_->Read(ReadRequest("L", "k", 1)).reason,
            "STALE_TOKEN");
  EXPECT_EQ(client_->Read(ReadRequest("L", "k", 3)).reason,
            "TOKEN_NOT_ISSUED");
  // The mark is 2: token 1 cannot write, token 2 can.
  EXPECT_EQ(client_->Write(WriteRequest("L", "k", "v", 1)).reason,
            "STALE_TOKEN");
  EXPECT_TRUE(client_->Write(WriteRequest("L", "k", "v", 2)).ok());
}

}  // namespace
}  // namespace leasekeeper::testing
