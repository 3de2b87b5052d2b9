// The daemon's fenced store over gRPC (in-process, fake clock): tokens that
// were never issued are refused, holder-checked writes refuse a holder that
// stalled past its lease, fenced reads raise the high-water mark, and
// deletes are held writes that remove their key; ListKeys pages the keys.
#include <cstdint>
#include <string>
#include <vector>

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

TEST_F(FencedStoreTest, HolderDeletesAndTheKeyIsGone) {
  ASSERT_EQ(Grant("alice", "L", 60'000), 1u);
  ASSERT_TRUE(
      client_->Write(WriteRequest("L", "k", "v", 1, "alice", true)).ok());
  Result<pb::DeleteResponse> deleted =
      client_->Delete(DeleteRequest("L", "k", 1, "alice"));
  ASSERT_TRUE(deleted.ok()) << deleted.status.error_message();
  EXPECT_TRUE(deleted.response.existed());
  EXPECT_EQ(Value("L", "k"), "<none>");
  // Again: accepted, and it says there was nothing.
  Result<pb::DeleteResponse> again =
      client_->Delete(DeleteRequest("L", "k", 1, "alice"));
  ASSERT_TRUE(again.ok()) << again.status.error_message();
  EXPECT_FALSE(again.response.existed());
}

// Each refusal is Write's, with its status, reason and field, and the value
// stays.
TEST_F(FencedStoreTest, DeleteIsRefusedAsAHeldWriteIs) {
  ASSERT_EQ(Grant("alice", "L", 5'000), 1u);
  ASSERT_TRUE(
      client_->Write(WriteRequest("L", "k", "v", 1, "alice", true)).ok());
  const struct {
    const char* what;
    pb::DeleteRequest request;
    grpc::StatusCode code;
    const char* reason;
    const char* message;
  } kCases[] = {
      {"no client", DeleteRequest("L", "k", 1, ""),
       grpc::StatusCode::INVALID_ARGUMENT, "INVALID_ARGUMENTS",
       "invalid arguments"},
      {"no key", DeleteRequest("L", "", 1, "alice"),
       grpc::StatusCode::INVALID_ARGUMENT, "INVALID_ARGUMENTS",
       "invalid arguments"},
      {"token 0", DeleteRequest("L", "k", 0, "alice"),
       grpc::StatusCode::INVALID_ARGUMENT, "INVALID_ARGUMENTS",
       "invalid arguments"},
      {"made-up token", DeleteRequest("L", "k", kMaxToken, "alice"),
       grpc::StatusCode::FAILED_PRECONDITION, "TOKEN_NOT_ISSUED",
       "token not issued"},
      {"another client", DeleteRequest("L", "k", 1, "bob"),
       grpc::StatusCode::FAILED_PRECONDITION, "NOT_HOLDER", "not holder"},
  };
  for (const auto& c : kCases) {
    Result<pb::DeleteResponse> refused = client_->Delete(c.request);
    EXPECT_EQ(refused.code(), c.code) << c.what;
    EXPECT_EQ(refused.reason, c.reason) << c.what;
    EXPECT_EQ(refused.status.error_message(), c.message) << c.what;
    EXPECT_EQ(Value("L", "k"), "v") << c.what;
  }
  EXPECT_EQ(client_->Delete(DeleteRequest("L", "k", 1, "")).detail.field(),
            "client_id");
  // Lapsed at 5000 (rule 2): no longer the holder.
  At(5'000);
  EXPECT_EQ(client_->Delete(DeleteRequest("L", "k", 1, "alice")).reason,
            "NOT_HOLDER");
  EXPECT_EQ(Value("L", "k"), "v");
}

TEST_F(FencedStoreTest, StaleDeleteOfASharedHolderIsRefused) {
  ASSERT_TRUE(
      client_->Acquire("r1", "L", 60'000, pb::LOCK_MODE_SHARED).ok());
  ASSERT_TRUE(
      client_->Acquire("r2", "L", 60'000, pb::LOCK_MODE_SHARED).ok());
  ASSERT_TRUE(client_->Write(WriteRequest("L", "k", "two", 2, "r2", true)).ok());
  Result<pb::DeleteResponse> stale =
      client_->Delete(DeleteRequest("L", "k", 1, "r1"));
  EXPECT_EQ(stale.code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(stale.reason, "STALE_TOKEN");
  EXPECT_EQ(stale.status.error_message(), "stale token");
  EXPECT_EQ(Value("L", "k"), "two");
}

TEST_F(LostUpdateTest, SuccessorsDeleteIsNotUndoneByTheStalledHolder) {
  ASSERT_TRUE(client_->Delete(DeleteRequest("C", "counter", 22, "B")).ok());
  // A wakes and writes with its token 21, even without the holder check.
  EXPECT_EQ(client_->Write(WriteRequest("C", "counter", "21", 21)).reason,
            "STALE_TOKEN");
  EXPECT_EQ(Value("C", "counter"), "<none>");
}

TEST_F(FencedStoreTest, ListKeysPagesTheKeysInByteOrder) {
  ASSERT_EQ(Grant("alice", "L", 60'000), 1u);
  for (const char* key : {"part-3", "part-1", "part-2", "Z"}) {
    ASSERT_TRUE(
        client_->Write(WriteRequest("L", key, "v", 1, "alice", true)).ok());
  }
  std::vector<std::string> seen;
  std::string after;
  int pages = 0;
  do {
    Result<pb::ListKeysResponse> page =
        client_->ListKeys(ListKeysRequest("L", after, 3));
    ASSERT_TRUE(page.ok()) << page.status.error_message();
    seen.insert(seen.end(), page.response.keys().begin(),
                page.response.keys().end());
    after = page.response.next_after();
    ++pages;
  } while (!after.empty());
  EXPECT_EQ(seen,
            (std::vector<std::string>{"Z", "part-1", "part-2", "part-3"}));
  EXPECT_EQ(pages, 2);
  // No token is needed, and a lock without keys has an empty last page.
  Result<pb::ListKeysResponse> none = client_->ListKeys(ListKeysRequest("M"));
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none.response.keys_size(), 0);
  EXPECT_EQ(none.response.next_after(), "");
}

TEST_F(FencedStoreTest, ListKeysRefusesAnEmptyLockAndANegativeLimit) {
  Result<pb::ListKeysResponse> no_lock = client_->ListKeys(ListKeysRequest(""));
  EXPECT_EQ(no_lock.code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(no_lock.detail.field(), "lock");
  Result<pb::ListKeysResponse> negative =
      client_->ListKeys(ListKeysRequest("L", "", -1));
  EXPECT_EQ(negative.code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(negative.detail.field(), "limit");
}

}  // namespace
}  // namespace leasekeeper::testing
