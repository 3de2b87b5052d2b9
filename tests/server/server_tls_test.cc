// Mutual TLS and the policy on a real in-process leasekeeperd (127.0.0.1,
// port 0), with a CA and certificates made by openssl at test time: the
// right identity passes; a wrong client id, a lock outside the grants, a
// client without a certificate, and a non-admin's forced release are
// refused, and nothing changes.
#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <tuple>

#include "grpc/health/v1/health.grpc.pb.h"
#include "gtest/gtest.h"
#include "security/testing/test_pki.h"
#include "server/flags.h"
#include "tests/server/test_support.h"

namespace leasekeeper::testing {
namespace {

using security::testing::KeyPair;
using security::testing::TestPki;

constexpr char kPolicy[] = R"({
  "identities": {
    "billing-worker": {"lock_prefixes": ["billing/"]},
    "ops-oncall": {"admin": true, "lock_prefixes": ["billing/"]}
  }
})";

// One PKI for the whole suite: openssl takes a moment per certificate.
struct Certificates {
  TestPki pki;
  KeyPair billing;   // CN=billing-worker
  KeyPair ops;       // CN=ops-oncall (admin)
  KeyPair stranger;  // CN=stranger (not in the policy)
  std::string policy_file;
};

class ServerTlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<TestPki> pki = TestPki::Create(::testing::TempDir());
    ASSERT_TRUE(pki.ok()) << pki.status();
    auto certs = std::make_unique<Certificates>(
        Certificates{std::move(*pki), {}, {}, {}, {}});
    for (auto [pair, name] : {std::pair{&certs->billing, "billing-worker"},
                              std::pair{&certs->ops, "ops-oncall"},
                              std::pair{&certs->stranger, "stranger"}}) {
      absl::StatusOr<KeyPair> issued = certs->pki.IssueClient(name, name);
      ASSERT_TRUE(issued.ok()) << issued.status();
      *pair = std::move(*issued);
    }
    certs->policy_file = certs->pki.dir() + "/policy.json";
    std::ofstream(certs->policy_file) << kPolicy;
    certs_ = certs.release();
  }
  static void TearDownTestSuite() {
    delete certs_;
    certs_ = nullptr;
  }

  void SetUp() override {
    ASSERT_NE(certs_, nullptr);
    server_ = std::make_unique<server::LeasekeeperServer>(Config(), clock_);
    absl::Status started = server_->Start();
    ASSERT_TRUE(started.ok()) << started;
  }
  void TearDown() override {
    if (server_ == nullptr) return;
    EXPECT_TRUE(server_->owner().CheckConsistency().ok());
    server_->Shutdown();
  }

  static server::ServerConfig Config() {
    server::ServerConfig config;
    config.listen = "127.0.0.1:0";
    config.health_listen = "127.0.0.1:0";
    config.security.tls_cert_file = certs_->pki.server().cert_file;
    config.security.tls_key_file = certs_->pki.server().key_file;
    config.security.client_ca_file = certs_->pki.ca_cert_file();
    config.security.policy_file = certs_->policy_file;
    return config;
  }

  // A stub over mutual TLS presenting `client` (none if null).
  std::unique_ptr<pb::LockService::Stub> Stub(const KeyPair* client) {
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = certs_->pki.ca_cert_pem();
    if (client != nullptr) {
      options.pem_private_key = client->key_pem;
      options.pem_cert_chain = client->cert_pem;
    }
    grpc::ChannelArguments args;
    args.SetInt("grpc.use_local_subchannel_pool", 1);  // own connection
    return pb::LockService::NewStub(grpc::CreateCustomChannel(
        server_->address(), grpc::SslCredentials(options), args));
  }

  template <typename Request, typename Response, typename Method>
  static grpc::Status Call(pb::LockService::Stub& stub, Method method,
                           const Request& request, Response* response) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(10));
    return (stub.*method)(&context, request, response);
  }

  static grpc::Status Acquire(pb::LockService::Stub& stub,
                              const std::string& client,
                              const std::string& lock,
                              pb::AcquireResponse* response = nullptr) {
    pb::AcquireResponse ignored;
    return Call(stub, &pb::LockService::Stub::Acquire,
                AcquireRequest(client, lock, 60'000),
                response != nullptr ? response : &ignored);
  }

  // Holders of `lock`, seen by the admin.
  int HoldersOf(const std::string& lock) {
    pb::InspectRequest request;
    request.set_lock(lock);
    pb::InspectResponse response;
    auto admin = Stub(&certs_->ops);
    grpc::Status status =
        Call(*admin, &pb::LockService::Stub::Inspect, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response.holders_size();
  }

  bool Registered(const std::string& client) {
    pb::StatusRequest request;
    request.set_client_id(client);
    pb::StatusResponse response;
    auto admin = Stub(&certs_->ops);
    EXPECT_TRUE(
        Call(*admin, &pb::LockService::Stub::Status, request, &response).ok());
    return response.registered();
  }

  static Certificates* certs_;
  server::FakeClock clock_{0};
  std::unique_ptr<server::LeasekeeperServer> server_;
};
Certificates* ServerTlsTest::certs_ = nullptr;

TEST_F(ServerTlsTest, TheRightIdentityPassesAsItselfOrWithASuffix) {
  auto billing = Stub(&certs_->billing);
  pb::AcquireResponse response;
  grpc::Status status =
      Acquire(*billing, "billing-worker", "billing/a", &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_TRUE(response.has_granted());
  status = Acquire(*billing, "billing-worker/job-7", "billing/b", &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_TRUE(response.has_granted());

  pb::StatusRequest own;
  own.set_client_id("billing-worker/job-7");
  pb::StatusResponse seen;
  ASSERT_TRUE(Call(*billing, &pb::LockService::Stub::Status, own, &seen).ok());
  EXPECT_EQ(seen.holds_size(), 1);
}

TEST_F(ServerTlsTest, AWrongClientIdIsPermissionDeniedAndChangesNothing) {
  auto billing = Stub(&certs_->billing);
  for (const char* client :
       {"ops-oncall", "billing-worker7", "billing-worker/", "billing"}) {
    grpc::Status status = Acquire(*billing, client, "billing/a");
    EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED)
        << client << ": " << status.error_message();
    EXPECT_NE(status.error_message().find("does not belong"),
              std::string::npos);
    EXPECT_FALSE(Registered(client)) << client;
  }
  EXPECT_EQ(HoldersOf("billing/a"), 0);
}

TEST_F(ServerTlsTest, ALockOutsideThePolicyGrantsIsPermissionDenied) {
  auto billing = Stub(&certs_->billing);
  grpc::Status status = Acquire(*billing, "billing-worker", "etl/a");
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(HoldersOf("etl/a"), 0);
  // An identity the policy does not list is granted nothing.
  auto stranger = Stub(&certs_->stranger);
  EXPECT_EQ(Acquire(*stranger, "stranger", "billing/a").error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(HoldersOf("billing/a"), 0);
}

TEST_F(ServerTlsTest, AWriteUnderAnotherIdentitysLeaseIsRefused) {
  // billing-worker holds billing/a with token 1; ops-oncall is granted the
  // same prefix and knows the token.
  auto billing = Stub(&certs_->billing);
  ASSERT_TRUE(Acquire(*billing, "billing-worker/job-7", "billing/a").ok());
  auto ops = Stub(&certs_->ops);
  auto write = [&](const std::string& client, bool require_held) {
    pb::WriteRequest request;
    request.set_lock("billing/a");
    request.set_key("k");
    request.set_value("v");
    request.set_token(1);
    request.set_client_id(client);
    request.set_require_held(require_held);
    pb::WriteResponse response;
    return Call(*ops, &pb::LockService::Stub::Write, request, &response);
  };
  // Naming the holder's client id: not ops-oncall's to name.
  grpc::Status as_holder = write("billing-worker/job-7", true);
  EXPECT_EQ(as_holder.error_code(), grpc::StatusCode::PERMISSION_DENIED)
      << as_holder.error_message();
  // As itself: it holds nothing.
  EXPECT_EQ(write("ops-oncall", true).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  // Without the holder check: refused under mutual TLS.
  EXPECT_EQ(write("", false).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(write("ops-oncall", false).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);

  pb::ReadRequest read;
  read.set_lock("billing/a");
  read.set_key("k");
  pb::ReadResponse value;
  ASSERT_TRUE(Call(*billing, &pb::LockService::Stub::Read, read, &value).ok());
  EXPECT_FALSE(value.found());
  // The holder itself writes.
  pb::WriteRequest own;
  own.set_lock("billing/a");
  own.set_key("k");
  own.set_value("mine");
  own.set_token(1);
  own.set_client_id("billing-worker/job-7");
  own.set_require_held(true);
  pb::WriteResponse written;
  grpc::Status status =
      Call(*billing, &pb::LockService::Stub::Write, own, &written);
  EXPECT_TRUE(status.ok()) << status.error_message();
}

TEST_F(ServerTlsTest, AClientWithoutACertificateIsRefused) {
  auto anonymous = Stub(nullptr);
  grpc::Status status = Acquire(*anonymous, "billing-worker", "billing/a");
  // The handshake itself fails: the call never reaches the service.
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE)
      << status.error_message();
  EXPECT_EQ(HoldersOf("billing/a"), 0);
}

TEST_F(ServerTlsTest, ANonAdminForcedReleaseIsRefusedAndTheLeaseStays) {
  auto billing = Stub(&certs_->billing);
  ASSERT_TRUE(Acquire(*billing, "billing-worker", "billing/a").ok());
  pb::ForceReleaseRequest request;
  request.set_lock("billing/a");
  pb::ForceReleaseResponse response;
  grpc::Status status =
      Call(*billing, &pb::LockService::Stub::ForceRelease, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(status.error_message().find("admin"), std::string::npos);
  EXPECT_EQ(HoldersOf("billing/a"), 1);

  // The admin may.
  auto ops = Stub(&certs_->ops);
  request.set_client_id("billing-worker");
  request.set_reason("stuck job");
  status = Call(*ops, &pb::LockService::Stub::ForceRelease, request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.released_size(), 1);
  EXPECT_EQ(response.released(0).client_id(), "billing-worker");
  EXPECT_EQ(response.released(0).token(), 1u);
  EXPECT_EQ(HoldersOf("billing/a"), 0);
  // The holder finds out on its next renew.
  pb::RenewRequest renew;
  renew.set_client_id("billing-worker");
  renew.set_lock("billing/a");
  renew.set_ttl_ms(1000);
  pb::RenewResponse renewed;
  EXPECT_EQ(Call(*billing, &pb::LockService::Stub::Renew, renew, &renewed)
                .error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
}

TEST_F(ServerTlsTest, ForcedReleaseOfNothingIsNotHolder) {
  auto ops = Stub(&certs_->ops);
  pb::ForceReleaseRequest request;
  request.set_lock("billing/free");
  pb::ForceReleaseResponse response;
  EXPECT_EQ(Call(*ops, &pb::LockService::Stub::ForceRelease, request, &response)
                .error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  request.clear_lock();
  EXPECT_EQ(Call(*ops, &pb::LockService::Stub::ForceRelease, request, &response)
                .error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(ServerTlsTest, ListLocksIsForAdminsOrWithinAGrant) {
  auto billing = Stub(&certs_->billing);
  ASSERT_TRUE(Acquire(*billing, "billing-worker", "billing/a").ok());
  pb::ListLocksRequest all;
  pb::ListLocksResponse listed;
  EXPECT_EQ(Call(*billing, &pb::LockService::Stub::ListLocks, all, &listed)
                .error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  pb::ListLocksRequest own = all;
  own.set_prefix("billing/");
  ASSERT_TRUE(
      Call(*billing, &pb::LockService::Stub::ListLocks, own, &listed).ok());
  EXPECT_EQ(listed.locks_size(), 1);
  auto ops = Stub(&certs_->ops);
  ASSERT_TRUE(Call(*ops, &pb::LockService::Stub::ListLocks, all, &listed).ok());
  EXPECT_EQ(listed.locks_size(), 1);
}

TEST_F(ServerTlsTest, ASessionForSomeoneElsesClientIdIsRefused) {
  auto billing = Stub(&certs_->billing);
  grpc::ClientContext context;
  auto stream = billing->Session(&context);
  pb::SessionRequest open;
  open.mutable_open()->set_client_id("ops-oncall");
  ASSERT_TRUE(stream->Write(open));
  pb::SessionResponse response;
  EXPECT_FALSE(stream->Read(&response));
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::PERMISSION_DENIED);
}

TEST_F(ServerTlsTest, TheHealthPortAnswersProbesButNoLockCalls) {
  const std::string health_address =
      "127.0.0.1:" + std::to_string(server_->health_port());
  auto channel = NewChannel(health_address);  // plaintext
  auto health = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext context;
  grpc::health::v1::HealthCheckResponse serving;
  ASSERT_TRUE(
      health->Check(&context, grpc::health::v1::HealthCheckRequest(), &serving)
          .ok());
  EXPECT_EQ(serving.status(), grpc::health::v1::HealthCheckResponse::SERVING);

  TestClient plaintext(health_address);
  EXPECT_EQ(plaintext.Acquire("billing-worker", "billing/a", 1000).code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(plaintext.Inspect("billing/a").code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(HoldersOf("billing/a"), 0);
}

TEST(ServerTlsConfigTest, BadSecurityConfigurationsStopStart) {
  server::FakeClock clock(0);
  server::ServerConfig config;
  config.listen = "127.0.0.1:0";
  config.security.tls_cert_file = "/nonexistent/server.crt";
  config.security.tls_key_file = "/nonexistent/server.key";
  server::LeasekeeperServer missing(config, clock);
  absl::Status started = missing.Start();
  EXPECT_EQ(started.code(), absl::StatusCode::kNotFound) << started;
  EXPECT_NE(started.message().find("--tls-cert"), std::string::npos);
}

TEST(ServerTlsFlagsTest, SecurityFlagsThatNeedEachOtherAreRefused) {
  struct Case {
    std::vector<const char*> argv;
    const char* message;
  };
  const Case cases[] = {
      {{"leasekeeperd", "--tls-cert=a.pem"}, "--tls-cert needs --tls-key"},
      {{"leasekeeperd", "--client-ca=ca.pem"}, "--client-ca needs"},
      {{"leasekeeperd", "--tls-cert=a", "--tls-key=b", "--policy=p.json"},
       "--policy needs --client-ca"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<server::DaemonOptions> options = server::ParseDaemonFlags(
        static_cast<int>(c.argv.size()), c.argv.data());
    ASSERT_FALSE(options.ok()) << c.message;
    EXPECT_NE(options.status().message().find(c.message), std::string::npos)
        << options.status();
  }
  const char* good[] = {"leasekeeperd",
                        "--tls-cert=a",
                        "--tls-key=b",
                        "--client-ca=c",
                        "--policy=p",
                        "--metrics-listen=127.0.0.1:9464",
                        "--health-listen=0.0.0.0:7234"};
  absl::StatusOr<server::DaemonOptions> options =
      server::ParseDaemonFlags(7, good);
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->config.security.policy_file, "p");
  EXPECT_EQ(options->config.metrics_listen, "127.0.0.1:9464");
  EXPECT_EQ(options->config.health_listen, "0.0.0.0:7234");
}

// A field over its size limit is refused by the limit before the policy is
// asked, so that no refusal echoes it: a PERMISSION_DENIED naming a
// 10,000-byte lock would not even reach the client (gRPC's metadata limit).
TEST_F(ServerTlsTest, AFieldOverItsLimitIsRefusedByTheLimitBeforeThePolicy) {
  const std::string huge(10'000, 'e');
  auto billing = Stub(&certs_->billing);
  auto expect_limit = [](const grpc::ClientContext& context,
                         const grpc::Status& status, const std::string& limit) {
    Result<pb::AcquireResponse> result;
    result.status = status;
    ReadErrorMetadata(context, result);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
        << limit << ": " << status.error_message();
    EXPECT_EQ(result.detail.limit(), limit) << status.error_message();
  };
  for (const auto& [client, lock, limit] :
       {std::tuple{std::string("billing-worker"), huge,
                   std::string("max-lock-name-bytes")},
        std::tuple{huge, std::string("billing/a"),
                   std::string("max-client-id-bytes")}}) {
    grpc::ClientContext context;
    pb::AcquireResponse response;
    expect_limit(context,
                 billing->Acquire(&context, AcquireRequest(client, lock, 60'000),
                                  &response),
                 limit);
  }
  {
    grpc::ClientContext context;
    pb::ForceReleaseRequest request;  // billing is no admin
    request.set_lock(huge);
    pb::ForceReleaseResponse response;
    expect_limit(context, billing->ForceRelease(&context, request, &response),
                 "max-lock-name-bytes");
  }
  {
    grpc::ClientContext context;
    pb::WatchRequest request;  // outside billing's grants
    request.set_prefix(huge);
    auto reader = billing->Watch(&context, request);
    pb::WatchResponse ignored;
    while (reader->Read(&ignored)) {
    }
    expect_limit(context, reader->Finish(), "max-lock-name-bytes");
  }
  {
    grpc::ClientContext context;
    auto stream = billing->Session(&context);
    pb::SessionRequest open;
    open.mutable_open()->set_client_id(huge);
    stream->Write(open);
    pb::SessionResponse ignored;
    while (stream->Read(&ignored)) {
    }
    expect_limit(context, stream->Finish(), "max-client-id-bytes");
  }
  EXPECT_EQ(HoldersOf("billing/a"), 0);
}

}  // namespace
}  // namespace leasekeeper::testing
