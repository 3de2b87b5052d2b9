// --forget-idle-clients-after (in-process server, fake clock): a client that
// holds nothing, waits for nothing and has no session is forgotten once it
// has been idle that long; a session keeps it until the session ends.
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "tests/server/test_support.h"

namespace leasekeeper::testing {
namespace {

constexpr int64_t kForgetAfterMs = 10'000;

class IdleClientsTest : public ServerTest {
 protected:
  void SetUp() override {
    ServerTest::SetUp();
    server::ServerConfig config = DefaultConfig();
    config.forget_idle_clients_after_ms = kForgetAfterMs;
    Restart(config);
  }
  bool Registered(const std::string& client) {
    Result<pb::StatusResponse> status = client_->Status(client);
    EXPECT_TRUE(status.ok()) << status.status.error_message();
    return status.response.registered();
  }
  uint64_t AgeOf(const std::string& client) {
    return client_->Status(client).response.age();
  }
};

TEST_F(IdleClientsTest, ClientIdleForThePeriodIsForgottenAndRegistersAfresh) {
  ASSERT_TRUE(client_->Acquire("a", "L", 60'000).response.has_granted());
  ASSERT_TRUE(client_->Acquire("b", "M", 60'000).response.has_granted());
  At(1'000);
  ASSERT_TRUE(client_->Release("a", "L").ok());
  EXPECT_EQ(owner().GetStats().registered_clients, 2u);
  At(1'000 + kForgetAfterMs - 1);
  EXPECT_TRUE(Registered("a"));
  At(1'000 + kForgetAfterMs);
  EXPECT_FALSE(Registered("a"));
  EXPECT_TRUE(Registered("b")) << "b holds M";
  EXPECT_EQ(owner().GetStats().registered_clients, 1u);
  // Back with a new, larger age; the lock's counter went on.
  Result<pb::AcquireResponse> again = client_->Acquire("a", "L", 60'000);
  ASSERT_TRUE(again.response.has_granted());
  EXPECT_EQ(again.response.granted().token(), 2u);
  EXPECT_EQ(AgeOf("a"), 3u);
}

TEST_F(IdleClientsTest, LapsedLeaseCountsFromItsExpiry) {
  ASSERT_TRUE(client_->Acquire("a", "L", 2'000).response.has_granted());
  At(2'000 + kForgetAfterMs - 1);
  EXPECT_TRUE(Registered("a"));
  At(2'000 + kForgetAfterMs);
  EXPECT_FALSE(Registered("a"));
}

TEST_F(IdleClientsTest, SessionKeepsAnIdleClientUntilTheSessionEnds) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(20));
  auto stream = client_->stub().Session(&context);
  pb::SessionRequest open;
  open.mutable_open()->set_client_id("s");
  ASSERT_TRUE(stream->Write(open));
  pb::SessionResponse opened;
  ASSERT_TRUE(stream->Read(&opened) && opened.has_opened());
  ASSERT_TRUE(client_->Acquire("s", "L", 60'000).response.has_granted());
  ASSERT_TRUE(client_->Release("s", "L").ok());  // idle since 0

  At(3 * kForgetAfterMs);
  EXPECT_TRUE(Registered("s")) << "its session is open";
  pb::SessionRequest close;
  close.mutable_close();
  ASSERT_TRUE(stream->Write(close));
  stream->WritesDone();
  while (stream->Read(&opened)) {
  }
  ASSERT_TRUE(stream->Finish().ok());
  EXPECT_TRUE(Eventually([&] {
    return client_->Status("s").response.session() == pb::SESSION_STATE_NONE;
  }));
  // Idle from the session's end on.
  At(4 * kForgetAfterMs - 1);
  EXPECT_TRUE(Registered("s"));
  At(4 * kForgetAfterMs);
  EXPECT_FALSE(Registered("s"));
}

TEST_F(IdleClientsTest, ZeroNeverForgets) {
  server::ServerConfig config = DefaultConfig();
  config.forget_idle_clients_after_ms = 0;
  Restart(config);
  ASSERT_TRUE(client_->Acquire("a", "L", 1'000).response.has_granted());
  At(1'000'000'000);
  EXPECT_TRUE(Registered("a"));
}

}  // namespace
}  // namespace leasekeeper::testing
