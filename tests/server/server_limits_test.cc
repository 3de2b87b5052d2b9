// Every limit of leasekeeperd (server/server_config.h): a request over it is
// refused with RESOURCE_EXHAUSTED naming the limit (ErrorDetail.limit, the
// flag's name) and changes nothing.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/flags.h"
#include "tests/server/test_support.h"

namespace leasekeeper::testing {
namespace {

class ServerLimitsTest : public ServerTest {
 protected:
  static server::ServerConfig SmallLimits() {
    server::ServerConfig config = DefaultConfig();
    config.limits.max_client_id_bytes = 16;
    config.limits.max_lock_name_bytes = 16;
    config.limits.max_key_bytes = 8;
    config.limits.max_value_bytes = 1024;
    config.limits.max_waiters_per_lock = 2;
    config.limits.max_locks_per_client = 2;
    config.limits.max_sessions = 1;
    config.limits.max_request_bytes = 1024 + (64 << 10);
    config.limits.max_store_bytes = 4096;
    config.limits.max_keys_per_lock = 2;
    return config;
  }
  void SetUp() override {
    ServerTest::SetUp();
    Restart(SmallLimits());
  }

  template <typename Response>
  static void ExpectLimit(const Result<Response>& result,
                          const std::string& limit, int64_t value) {
    EXPECT_EQ(result.code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
        << limit << ": " << result.status.error_message();
    EXPECT_EQ(result.reason, "LIMIT_EXCEEDED") << limit;
    EXPECT_EQ(result.detail.limit(), limit);
    EXPECT_EQ(result.detail.limit_value(), value) << limit;
    EXPECT_NE(result.status.error_message().find(limit), std::string::npos)
        << result.status.error_message();
  }

  // Nothing is held, queued, registered or stored anywhere the refused
  // requests could have touched.
  void ExpectUntouched(const std::string& client, const std::string& lock) {
    Result<pb::StatusResponse> status = client_->Status(client);
    ASSERT_TRUE(status.ok());
    EXPECT_FALSE(status.response.registered()) << client;
    Result<pb::InspectResponse> inspect = client_->Inspect(lock.substr(0, 16));
    ASSERT_TRUE(inspect.ok());
    EXPECT_EQ(inspect.response.holders_size(), 0) << lock;
    EXPECT_EQ(inspect.response.queue_size(), 0) << lock;
  }
};

TEST_F(ServerLimitsTest, NameKeyAndValueSizes) {
  const std::string long_client(17, 'c');
  const std::string long_lock(17, 'l');
  ExpectLimit(client_->Acquire(long_client, "L", 1000), "max-client-id-bytes",
              16);
  ExpectUntouched("nobody", "L");
  ExpectLimit(client_->Acquire("a", long_lock, 1000), "max-lock-name-bytes",
              16);
  ExpectUntouched("a", long_lock);

  ASSERT_TRUE(client_->Acquire("writer", "L", 60'000).response.has_granted());
  ExpectLimit(client_->Write("L", std::string(9, 'k'), "v", 1), "max-key-bytes",
              8);
  ExpectLimit(client_->Write("L", "k", std::string(1025, 'v'), 1),
              "max-value-bytes", 1024);
  Result<pb::ReadResponse> read = client_->Read("L", "k");
  ASSERT_TRUE(read.ok());
  EXPECT_FALSE(read.response.found());
  // At the limit is fine.
  EXPECT_TRUE(client_->Write("L", "k", std::string(1024, 'v'), 1).ok());
}

TEST_F(ServerLimitsTest, KeysPerLock) {
  ASSERT_TRUE(client_->Acquire("a", "S", 60'000).response.has_granted());
  ASSERT_TRUE(client_->Write("S", "k1", "v", 1).ok());
  ASSERT_TRUE(client_->Write("S", "k2", "v", 1).ok());
  ExpectLimit(client_->Write("S", "k3", "v", 1), "max-keys-per-lock", 2);
  EXPECT_FALSE(client_->Read("S", "k3").response.found());
  // Replacing a value adds no key.
  EXPECT_TRUE(client_->Write("S", "k1", "v2", 1).ok());
}

TEST_F(ServerLimitsTest, StoreBytes) {
  // Each lock Tn with one 1024-byte value costs 2 + 1 + 1024 bytes: three
  // fit in 4096, a fourth does not.
  const std::string big(1024, 'v');
  for (const char* lock : {"T1", "T2", "T3", "T4"}) {  // one client each
    ASSERT_TRUE(client_->Acquire(lock, lock, 60'000).response.has_granted());
  }
  for (const char* lock : {"T1", "T2", "T3"}) {
    ASSERT_TRUE(client_->Write(lock, "k", big, 1).ok()) << lock;
  }
  ExpectLimit(client_->Write("T4", "k", big, 1), "max-store-bytes", 4096);
  EXPECT_FALSE(client_->Read("T4", "k").response.found());
  // A write that does not grow the store passes; a smaller one frees room.
  EXPECT_TRUE(client_->Write("T1", "k", std::string(1024, 'w'), 1).ok());
  EXPECT_TRUE(client_->Write("T1", "k", "small", 1).ok());
  EXPECT_TRUE(client_->Write("T4", "k", big, 1).ok());
}

// A delete frees the key's place and bytes: the write the limit refused is
// accepted after it. Deletes themselves are never refused by a store limit.
TEST_F(ServerLimitsTest, DeleteFreesAPlaceUnderKeysPerLock) {
  ASSERT_TRUE(client_->Acquire("a", "S", 60'000).response.has_granted());
  ASSERT_TRUE(client_->Write(WriteRequest("S", "k1", "v", 1, "a", true)).ok());
  ASSERT_TRUE(client_->Write(WriteRequest("S", "k2", "v", 1, "a", true)).ok());
  ExpectLimit(client_->Write(WriteRequest("S", "k3", "v", 1, "a", true)),
              "max-keys-per-lock", 2);
  Result<pb::DeleteResponse> deleted =
      client_->Delete(DeleteRequest("S", "k1", 1, "a"));
  ASSERT_TRUE(deleted.ok()) << deleted.status.error_message();
  EXPECT_TRUE(deleted.response.existed());
  EXPECT_TRUE(client_->Write(WriteRequest("S", "k3", "v", 1, "a", true)).ok());
  EXPECT_FALSE(client_->Read("S", "k1").response.found());
}

TEST_F(ServerLimitsTest, DeleteFreesBytesUnderStoreBytes) {
  const std::string big(1024, 'v');
  for (const char* lock : {"T1", "T2", "T3", "T4"}) {
    ASSERT_TRUE(client_->Acquire(lock, lock, 60'000).response.has_granted());
  }
  for (const char* lock : {"T1", "T2", "T3"}) {
    ASSERT_TRUE(client_->Write(WriteRequest(lock, "k", big, 1, lock, true)).ok())
        << lock;
  }
  ExpectLimit(client_->Write(WriteRequest("T4", "k", big, 1, "T4", true)),
              "max-store-bytes", 4096);
  ASSERT_TRUE(client_->Delete(DeleteRequest("T2", "k", 1, "T2")).ok());
  EXPECT_TRUE(client_->Write(WriteRequest("T4", "k", big, 1, "T4", true)).ok());
}

TEST_F(ServerLimitsTest, DeleteKeyAndListKeysAfterAreSizeChecked) {
  ASSERT_TRUE(client_->Acquire("a", "S", 60'000).response.has_granted());
  ExpectLimit(client_->Delete(DeleteRequest("S", std::string(9, 'k'), 1, "a")),
              "max-key-bytes", 8);
  ExpectLimit(client_->Delete(DeleteRequest("S", "k", 1, std::string(17, 'c'))),
              "max-client-id-bytes", 16);
  ExpectLimit(client_->ListKeys(ListKeysRequest(std::string(17, 'l'))),
              "max-lock-name-bytes", 16);
  ExpectLimit(client_->ListKeys(ListKeysRequest("S", std::string(9, 'k'))),
              "max-key-bytes", 8);
}

TEST_F(ServerLimitsTest, WaitersPerLock) {
  ASSERT_TRUE(client_->Acquire("holder", "L", 60'000).response.has_granted());
  ASSERT_TRUE(client_->Acquire("w1", "L", 60'000).response.has_queued());
  ASSERT_TRUE(client_->Acquire("w2", "L", 60'000).response.has_queued());
  ExpectLimit(client_->Acquire("w3", "L", 60'000), "max-waiters-per-lock", 2);
  Result<pb::InspectResponse> inspect = client_->Inspect("L");
  ASSERT_TRUE(inspect.ok());
  EXPECT_EQ(inspect.response.queue_size(), 2);
  EXPECT_FALSE(client_->Status("w3").response.registered());
}

TEST_F(ServerLimitsTest, LocksPerClient) {
  ASSERT_TRUE(client_->Acquire("a", "L1", 60'000).response.has_granted());
  ASSERT_TRUE(client_->Acquire("a", "L2", 60'000).response.has_granted());
  ExpectLimit(client_->Acquire("a", "L3", 60'000), "max-locks-per-client", 2);
  EXPECT_EQ(client_->Status("a").response.holds_size(), 2);
  ExpectUntouched("nobody", "L3");
  // Another client is not affected, and releasing makes room again.
  EXPECT_TRUE(client_->Acquire("b", "L3", 60'000).response.has_granted());
  ASSERT_TRUE(client_->Release("a", "L1").ok());
  EXPECT_TRUE(client_->Acquire("a", "L4", 60'000).response.has_granted());
}

TEST_F(ServerLimitsTest, Sessions) {
  grpc::ClientContext first_context;
  auto first = client_->stub().Session(&first_context);
  pb::SessionRequest open;
  open.mutable_open()->set_client_id("s1");
  ASSERT_TRUE(first->Write(open));
  pb::SessionResponse opened;
  ASSERT_TRUE(first->Read(&opened));
  ASSERT_TRUE(opened.has_opened());

  grpc::ClientContext second_context;
  auto second = client_->stub().Session(&second_context);
  open.mutable_open()->set_client_id("s2");
  // The stream counts against --max-sessions from its start, so the server
  // may refuse it before this write goes out: only its status is checked.
  second->Write(open);
  pb::SessionResponse refused;
  EXPECT_FALSE(second->Read(&refused));
  grpc::Status status = second->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(status.error_message().find("max-sessions"), std::string::npos)
      << status.error_message();
  EXPECT_EQ(client_->Status("s2").response.session(), pb::SESSION_STATE_NONE);
  EXPECT_EQ(client_->Status("s1").response.session(), pb::SESSION_STATE_OPEN);

  pb::SessionRequest close;
  close.mutable_close();
  ASSERT_TRUE(first->Write(close));
  first->WritesDone();
  pb::SessionResponse ignored;
  while (first->Read(&ignored)) {
  }
  EXPECT_TRUE(first->Finish().ok());
}

TEST_F(ServerLimitsTest, RequestSizeIsRefusedByGrpcBeforeAnyHandler) {
  // Over --max-request-bytes (1024 + 64 KiB here): gRPC refuses the message
  // itself, with its own text, and no handler sees it.
  Result<pb::WriteResponse> huge =
      client_->Write("L", "k", std::string(100'000, 'v'), 1);
  EXPECT_EQ(huge.code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(huge.status.error_message().find("larger than max"),
            std::string::npos)
      << huge.status.error_message();
  Result<pb::ReadResponse> read = client_->Read("L", "k");
  ASSERT_TRUE(read.ok());
  EXPECT_FALSE(read.response.found());
}

TEST(ServerLimitFlagsTest, LimitFlagsParseAndAreChecked) {
  const char* argv[] = {"leasekeeperd", "--max-locks-per-client=5",
                        "--max-request-bytes=2000000",
                        "--max-value-bytes=1000", "--max-store-bytes=65536",
                        "--max-keys-per-lock=7"};
  absl::StatusOr<server::DaemonOptions> options =
      server::ParseDaemonFlags(6, argv);
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->config.limits.max_locks_per_client, 5u);
  EXPECT_EQ(options->config.limits.max_request_bytes, 2'000'000u);
  EXPECT_EQ(options->config.limits.max_store_bytes, 65'536u);
  EXPECT_EQ(options->config.limits.max_keys_per_lock, 7u);

  const char* too_small[] = {"leasekeeperd", "--max-request-bytes=1000"};
  absl::StatusOr<server::DaemonOptions> refused =
      server::ParseDaemonFlags(2, too_small);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("--max-value-bytes"),
            std::string::npos)
      << refused.status();
  const char* zero[] = {"leasekeeperd", "--max-locks-per-client=0"};
  EXPECT_FALSE(server::ParseDaemonFlags(2, zero).ok());
}

}  // namespace
}  // namespace leasekeeper::testing
