// TLS files checked at startup, and identities read from real mutual-TLS
// handshakes on 127.0.0.1 with certificates made by openssl at test time.
#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "security/peer_identity.h"
#include "security/testing/test_pki.h"
#include "security/tls_config.h"

namespace leasekeeper::security {
namespace {

using grpc::health::v1::Health;
using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;
using testing::KeyPair;
using testing::TestPki;

class Pki : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<TestPki> pki = TestPki::Create(::testing::TempDir());
    ASSERT_TRUE(pki.ok()) << pki.status();
    pki_ = new TestPki(std::move(*pki));
  }
  static void TearDownTestSuite() {
    delete pki_;
    pki_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(pki_, nullptr); }

  static TlsFiles MutualFiles() {
    return {pki_->server().cert_file, pki_->server().key_file,
            pki_->ca_cert_file()};
  }
  static std::string WriteTemp(const std::string& name,
                               const std::string& text) {
    const std::string path = pki_->dir() + "/" + name;
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
    return path;
  }

  static TestPki* pki_;
};
TestPki* Pki::pki_ = nullptr;

TEST(TlsFlagsTest, FlagCombinationsChooseTheMode) {
  using Mode = TransportSecurity;
  EXPECT_EQ(*TransportSecurityOf({}), Mode::kPlaintext);
  EXPECT_EQ(*TransportSecurityOf({"c", "k", ""}), Mode::kTls);
  EXPECT_EQ(*TransportSecurityOf({"c", "k", "ca"}), Mode::kMutualTls);
  struct Bad {
    TlsFiles files;
    const char* message;
  };
  const Bad bad[] = {{{"c", "", ""}, "--tls-cert needs --tls-key"},
                     {{"", "k", ""}, "--tls-key needs --tls-cert"},
                     {{"", "", "ca"}, "--client-ca needs --tls-cert"},
                     {{"c", "", "ca"}, "--tls-cert needs --tls-key"}};
  for (const Bad& b : bad) {
    absl::StatusOr<Mode> mode = TransportSecurityOf(b.files);
    ASSERT_FALSE(mode.ok());
    EXPECT_EQ(mode.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(mode.status().message().find(b.message), std::string::npos)
        << mode.status();
  }
}

TEST(TlsFlagsTest, PlaintextReadsNoFile) {
  absl::StatusOr<ServerTls> tls = LoadServerTls({});
  ASSERT_TRUE(tls.ok());
  EXPECT_EQ(tls->mode, TransportSecurity::kPlaintext);
  EXPECT_NE(tls->credentials, nullptr);
}

TEST_F(Pki, GoodFilesGiveMutualTlsAndASummary) {
  absl::StatusOr<ServerTls> tls = LoadServerTls(MutualFiles());
  ASSERT_TRUE(tls.ok()) << tls.status();
  EXPECT_EQ(tls->mode, TransportSecurity::kMutualTls);
  EXPECT_NE(tls->summary.find("mutual-tls"), std::string::npos);
  EXPECT_NE(tls->summary.find("CN=leasekeeper-test-server"), std::string::npos);
  EXPECT_NE(tls->summary.find("1 client CA certificate"), std::string::npos);
}

TEST_F(Pki, UnreadableOrWrongFilesAreRefusedNamingTheFlag) {
  const std::string garbage = WriteTemp("garbage.pem", "not a certificate\n");
  absl::StatusOr<KeyPair> other = pki_->IssueClient("other-key", "other");
  ASSERT_TRUE(other.ok()) << other.status();
  struct Case {
    TlsFiles files;
    absl::StatusCode code;
    const char* message;
  };
  const TlsFiles good = MutualFiles();
  const Case cases[] = {
      {{"/nonexistent/cert.pem", good.key_file, ""},
       absl::StatusCode::kNotFound,
       "--tls-cert"},
      {{good.cert_file, "/nonexistent/key.pem", ""},
       absl::StatusCode::kNotFound,
       "--tls-key"},
      {{good.cert_file, good.key_file, "/nonexistent/ca.pem"},
       absl::StatusCode::kNotFound,
       "--client-ca"},
      {{garbage, good.key_file, ""},
       absl::StatusCode::kInvalidArgument,
       "--tls-cert"},
      {{good.cert_file, garbage, ""},
       absl::StatusCode::kInvalidArgument,
       "--tls-key"},
      {{good.cert_file, good.key_file, garbage},
       absl::StatusCode::kInvalidArgument,
       "--client-ca"},
      {{good.cert_file, other->key_file, ""},
       absl::StatusCode::kInvalidArgument,
       "does not match"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<ServerTls> tls = LoadServerTls(c.files);
    ASSERT_FALSE(tls.ok()) << c.message;
    EXPECT_EQ(tls.status().code(), c.code) << tls.status();
    EXPECT_NE(tls.status().message().find(c.message), std::string::npos)
        << tls.status();
  }
}

// A Health service that records the identity of each caller.
class RecordingHealth final : public Health::CallbackService {
 public:
  grpc::ServerUnaryReactor* Check(grpc::CallbackServerContext* context,
                                  const HealthCheckRequest* /*request*/,
                                  HealthCheckResponse* response) override {
    {
      absl::MutexLock lock(&mu_);
      last_ = PeerIdentityFromAuthContext(context->auth_context().get());
    }
    response->set_status(HealthCheckResponse::SERVING);
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
  PeerIdentity last() {
    absl::MutexLock lock(&mu_);
    return last_;
  }

 private:
  absl::Mutex mu_;
  PeerIdentity last_;
};

class HandshakeTest : public Pki {
 protected:
  void StartServer(const TlsFiles& files) {
    absl::StatusOr<ServerTls> tls = LoadServerTls(files);
    ASSERT_TRUE(tls.ok()) << tls.status();
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", tls->credentials, &port_);
    builder.RegisterService(&health_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port_, 0);
  }
  void TearDown() override {
    if (server_) server_->Shutdown(std::chrono::system_clock::now());
  }

  // Calls Check with the given client certificate (none if null).
  grpc::Status CallWith(const KeyPair* client) {
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = pki_->ca_cert_pem();
    if (client != nullptr) {
      options.pem_private_key = client->key_pem;
      options.pem_cert_chain = client->cert_pem;
    }
    auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(port_),
                                       grpc::SslCredentials(options));
    auto stub = Health::NewStub(channel);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(10));
    HealthCheckRequest request;
    HealthCheckResponse response;
    return stub->Check(&context, request, &response);
  }

  RecordingHealth health_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

TEST_F(HandshakeTest, CommonNameOnlyCertificateIsThatIdentity) {
  StartServer(MutualFiles());
  absl::StatusOr<KeyPair> client =
      pki_->IssueClient("cn-only", "billing-worker");
  ASSERT_TRUE(client.ok()) << client.status();
  grpc::Status status = CallWith(&*client);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(health_.last().names, std::vector<std::string>{"billing-worker"});
  EXPECT_TRUE(health_.last().over_tls);
}

TEST_F(HandshakeTest, CommonNameAndEverySanEntryAreIdentities) {
  StartServer(MutualFiles());
  absl::StatusOr<KeyPair> client = pki_->IssueClient(
      "with-sans", "reports-cn",
      {"DNS:reports.example", "URI:spiffe://example.org/reports"});
  ASSERT_TRUE(client.ok()) << client.status();
  grpc::Status status = CallWith(&*client);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(health_.last().names,
            (std::vector<std::string>{"reports-cn", "reports.example",
                                      "spiffe://example.org/reports"}));
}

TEST_F(HandshakeTest, SanOnlyCertificateHasItsSans) {
  StartServer(MutualFiles());
  absl::StatusOr<KeyPair> client =
      pki_->IssueClient("san-only", "", {"URI:spiffe://example.org/job"});
  ASSERT_TRUE(client.ok()) << client.status();
  grpc::Status status = CallWith(&*client);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(health_.last().names,
            std::vector<std::string>{"spiffe://example.org/job"});
}

TEST_F(HandshakeTest, ClientWithoutCertificateIsRefusedByTheHandshake) {
  StartServer(MutualFiles());
  grpc::Status status = CallWith(nullptr);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE)
      << status.error_message();
}

TEST_F(HandshakeTest, ClientCertificateFromAnotherCaIsRefused) {
  StartServer(MutualFiles());
  absl::StatusOr<TestPki> stranger_ca = TestPki::Create(::testing::TempDir());
  ASSERT_TRUE(stranger_ca.ok()) << stranger_ca.status();
  absl::StatusOr<KeyPair> client =
      stranger_ca->IssueClient("impostor", "billing-worker");
  ASSERT_TRUE(client.ok()) << client.status();
  grpc::Status status = CallWith(&*client);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE)
      << status.error_message();
}

TEST_F(HandshakeTest, ServerOnlyTlsAuthenticatesNobody) {
  TlsFiles files = MutualFiles();
  files.client_ca_file.clear();
  StartServer(files);
  absl::StatusOr<KeyPair> client = pki_->IssueClient("ignored", "someone");
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE(CallWith(&*client).ok());
  EXPECT_FALSE(health_.last().authenticated());
  ASSERT_TRUE(CallWith(nullptr).ok());
  EXPECT_FALSE(health_.last().authenticated());
  EXPECT_TRUE(health_.last().over_tls);
}

TEST_F(HandshakeTest, PlaintextCallsAreNotOverTls) {
  StartServer({});
  auto stub =
      Health::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(port_),
                                          grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  HealthCheckResponse response;
  ASSERT_TRUE(stub->Check(&context, HealthCheckRequest(), &response).ok());
  EXPECT_FALSE(health_.last().over_tls);
  EXPECT_FALSE(health_.last().authenticated());
}

}  // namespace
}  // namespace leasekeeper::security
