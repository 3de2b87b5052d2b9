// TLS files checked at startup, identities read from real mutual-TLS
// handshakes on 127.0.0.1 with certificates made by openssl at test time,
// and the reload of the files while serving.
#include <chrono>
#include <cstdio>
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
#include "security/reloadable_server_tls.h"
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
  absl::StatusOr<TlsMaterial> material = LoadTlsMaterial({});
  ASSERT_TRUE(material.ok());
  EXPECT_EQ(material->mode, TransportSecurity::kPlaintext);
  EXPECT_EQ(material->summary, "plaintext");
  absl::StatusOr<std::unique_ptr<ReloadableServerTls>> tls =
      ReloadableServerTls::Create({});
  ASSERT_TRUE(tls.ok());
  EXPECT_NE((*tls)->credentials(), nullptr);
  EXPECT_TRUE((*tls)->Reload().ok());
}

TEST_F(Pki, GoodFilesGiveMutualTlsAndASummary) {
  absl::StatusOr<TlsMaterial> tls = LoadTlsMaterial(MutualFiles());
  ASSERT_TRUE(tls.ok()) << tls.status();
  EXPECT_EQ(tls->mode, TransportSecurity::kMutualTls);
  EXPECT_EQ(tls->cert_pem, pki_->server().cert_pem);
  EXPECT_EQ(tls->key_pem, pki_->server().key_pem);
  EXPECT_EQ(tls->client_ca_pem, pki_->ca_cert_pem());
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
    absl::StatusOr<TlsMaterial> tls = LoadTlsMaterial(c.files);
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
    absl::StatusOr<std::unique_ptr<ReloadableServerTls>> tls =
        ReloadableServerTls::Create(files);
    ASSERT_TRUE(tls.ok()) << tls.status();
    tls_ = *std::move(tls);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", tls_->credentials(), &port_);
    builder.RegisterService(&health_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port_, 0);
  }
  void TearDown() override {
    if (server_) server_->Shutdown(std::chrono::system_clock::now());
  }

  // A channel with its own connection, trusting `ca_pem` (the test CA if
  // empty) and presenting `client` (nothing if null).
  std::shared_ptr<grpc::Channel> Channel(const KeyPair* client,
                                         const std::string& ca_pem = "") {
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = ca_pem.empty() ? pki_->ca_cert_pem() : ca_pem;
    if (client != nullptr) {
      options.pem_private_key = client->key_pem;
      options.pem_cert_chain = client->cert_pem;
    }
    grpc::ChannelArguments args;
    args.SetInt("grpc.use_local_subchannel_pool", 1);
    return grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port_),
                                     grpc::SslCredentials(options), args);
  }

  // Calls Check on `channel`; *server_name (if set) gets the Common Name
  // of the certificate the server presented on that connection.
  static grpc::Status CallOn(const std::shared_ptr<grpc::Channel>& channel,
                             std::string* server_name = nullptr) {
    auto stub = Health::NewStub(channel);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(10));
    HealthCheckRequest request;
    HealthCheckResponse response;
    grpc::Status status = stub->Check(&context, request, &response);
    if (server_name != nullptr) {
      server_name->clear();
      std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
      if (auth != nullptr) {
        for (const grpc::string_ref& name :
             auth->FindPropertyValues("x509_common_name")) {
          server_name->assign(name.data(), name.size());
        }
      }
    }
    return status;
  }

  // Calls Check with the given client certificate (none if null).
  grpc::Status CallWith(const KeyPair* client) {
    return CallOn(Channel(client));
  }

  RecordingHealth health_;
  // Before server_: gRPC calls back into it on every handshake.
  std::unique_ptr<ReloadableServerTls> tls_;
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

// The server's files, copied where a test may replace them.
class ReloadTest : public HandshakeTest {
 protected:
  void SetUp() override {
    HandshakeTest::SetUp();
    const std::string dir = ::testing::TempDir();
    const std::string stem = dir + "/" +
                             ::testing::UnitTest::GetInstance()
                                 ->current_test_info()
                                 ->name();
    files_ = {stem + ".crt", stem + ".key", stem + "-ca.crt"};
    Write(files_.cert_file, pki_->server().cert_pem);
    Write(files_.key_file, pki_->server().key_pem);
    Write(files_.client_ca_file, pki_->ca_cert_pem());
    absl::StatusOr<KeyPair> client = pki_->IssueClient("reload-client", "job");
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
  }
  static void Write(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  }

  TlsFiles files_;
  KeyPair client_;
};

TEST_F(ReloadTest, RotatedCertificateIsPresentedToNewConnectionsOnly) {
  StartServer(files_);
  std::shared_ptr<grpc::Channel> before = Channel(&client_);
  std::string name;
  ASSERT_TRUE(CallOn(before, &name).ok());
  EXPECT_EQ(name, "leasekeeper-test-server");

  absl::StatusOr<KeyPair> rotated =
      pki_->IssueServer("rotated-server", "leasekeeper-rotated");
  ASSERT_TRUE(rotated.ok()) << rotated.status();
  Write(files_.cert_file, rotated->cert_pem);
  Write(files_.key_file, rotated->key_pem);
  // Nothing changes until asked.
  ASSERT_TRUE(CallOn(Channel(&client_), &name).ok());
  EXPECT_EQ(name, "leasekeeper-test-server");

  ASSERT_TRUE(tls_->Reload().ok());
  EXPECT_NE(tls_->summary().find("CN=leasekeeper-rotated"), std::string::npos)
      << tls_->summary();
  ASSERT_TRUE(CallOn(Channel(&client_), &name).ok());
  EXPECT_EQ(name, "leasekeeper-rotated");
  // The connection made before the reload goes on, as it was.
  ASSERT_TRUE(CallOn(before, &name).ok());
  EXPECT_EQ(name, "leasekeeper-test-server");
}

TEST_F(ReloadTest, BrokenNewFilesKeepThePreviousCertificate) {
  StartServer(files_);
  absl::StatusOr<KeyPair> rotated =
      pki_->IssueServer("half-rotated", "leasekeeper-half-rotated");
  ASSERT_TRUE(rotated.ok()) << rotated.status();
  struct Case {
    std::string cert;
    std::string key;
    std::string ca;
    absl::StatusCode code;
    const char* message;
  };
  const Case cases[] = {
      // A new certificate whose key has not been written yet.
      {rotated->cert_pem, pki_->server().key_pem, pki_->ca_cert_pem(),
       absl::StatusCode::kInvalidArgument, "does not match"},
      {"half a cert", pki_->server().key_pem, pki_->ca_cert_pem(),
       absl::StatusCode::kInvalidArgument, "--tls-cert"},
      {pki_->server().cert_pem, pki_->server().key_pem, "",
       absl::StatusCode::kInvalidArgument, "--client-ca"},
  };
  for (const Case& c : cases) {
    Write(files_.cert_file, c.cert);
    Write(files_.key_file, c.key);
    Write(files_.client_ca_file, c.ca);
    absl::Status reloaded = tls_->Reload();
    EXPECT_EQ(reloaded.code(), c.code) << reloaded;
    EXPECT_NE(reloaded.message().find(c.message), std::string::npos)
        << reloaded;
    std::string name;
    ASSERT_TRUE(CallOn(Channel(&client_), &name).ok()) << c.message;
    EXPECT_EQ(name, "leasekeeper-test-server") << c.message;
  }
  std::remove(files_.key_file.c_str());
  EXPECT_EQ(tls_->Reload().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(CallWith(&client_).ok());
  EXPECT_NE(tls_->summary().find("CN=leasekeeper-test-server"),
            std::string::npos);
}

TEST_F(ReloadTest, ReloadedClientCaDecidesWhichClientsMayConnect) {
  StartServer(files_);
  absl::StatusOr<TestPki> next_ca = TestPki::Create(::testing::TempDir());
  ASSERT_TRUE(next_ca.ok()) << next_ca.status();
  absl::StatusOr<KeyPair> next_client =
      next_ca->IssueClient("next-client", "next-job");
  ASSERT_TRUE(next_client.ok()) << next_client.status();
  EXPECT_EQ(CallWith(&*next_client).error_code(),
            grpc::StatusCode::UNAVAILABLE);

  Write(files_.client_ca_file, next_ca->ca_cert_pem());
  ASSERT_TRUE(tls_->Reload().ok());
  ASSERT_TRUE(CallWith(&*next_client).ok());
  EXPECT_EQ(health_.last().names, std::vector<std::string>{"next-job"});
  EXPECT_EQ(CallWith(&client_).error_code(), grpc::StatusCode::UNAVAILABLE);
}

}  // namespace
}  // namespace leasekeeper::security
