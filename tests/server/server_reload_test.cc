// SIGHUP on the real leasekeeperd (127.0.0.1, mutual TLS, a policy, files
// made by openssl at test time): it re-reads the certificate, key, client
// CA and policy without dropping anything, logs what it did at info, and a
// broken new file keeps the old one, logged at error, the daemon serving on.
#include <signal.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "gtest/gtest.h"
#include "security/testing/test_pki.h"
#include "tests/server/session_stream.h"
#include "tests/server/test_support.h"

namespace leasekeeper::testing {
namespace {

using security::testing::KeyPair;
using security::testing::TestPki;

constexpr char kPolicy[] = R"({
  "identities": {"billing-worker": {"lock_prefixes": ["billing/"]}}
})";
constexpr char kWiderPolicy[] = R"({
  "identities": {"billing-worker": {"lock_prefixes": ["billing/", "etl/"]}}
})";

void Write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

class ReloadTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<TestPki> pki = TestPki::Create(::testing::TempDir());
    ASSERT_TRUE(pki.ok()) << pki.status();
    pki_ = new TestPki(*std::move(pki));
    absl::StatusOr<KeyPair> billing =
        pki_->IssueClient("billing", "billing-worker");
    ASSERT_TRUE(billing.ok()) << billing.status();
    billing_ = new KeyPair(*std::move(billing));
    absl::StatusOr<KeyPair> rotated =
        pki_->IssueServer("rotated", "leasekeeper-rotated");
    ASSERT_TRUE(rotated.ok()) << rotated.status();
    rotated_ = new KeyPair(*std::move(rotated));
  }
  static void TearDownTestSuite() {
    delete pki_;
    delete billing_;
    delete rotated_;
  }

  // Starts leasekeeperd on copies of the server's files, with its stderr
  // (logs at info) on the pipe the test reads.
  void SetUp() override {
    ASSERT_NE(rotated_, nullptr);
    const std::string stem =
        absl::StrCat(data_dir_.path(), "/",
                     ::testing::UnitTest::GetInstance()
                         ->current_test_info()
                         ->name());
    cert_ = stem + ".crt";
    key_ = stem + ".key";
    ca_ = stem + "-ca.crt";
    policy_ = stem + "-policy.json";
    Write(cert_, pki_->server().cert_pem);
    Write(key_, pki_->server().key_pem);
    Write(ca_, pki_->ca_cert_pem());
    Write(policy_, kPolicy);
    daemon_ = std::make_unique<ChildProcess>(
        "/bin/sh",
        std::vector<std::string>{
            "-c", absl::StrCat("exec ", LEASEKEEPERD_PATH,
                               " --listen=127.0.0.1:0 --log-level=info ",
                               data_dir_.flag(), " --tls-cert=", cert_,
                               " --tls-key=", key_, " --client-ca=", ca_,
                               " --policy=", policy_, " 2>&1")});
    std::optional<std::string> listening =
        LineContaining("leasekeeperd listening on ");
    ASSERT_TRUE(listening.has_value());
    address_ = listening->substr(listening->rfind(' ') + 1);
  }

  // The next line of the daemon's output that contains `text`, waiting at
  // most 10 s; nullopt (and a failure) if none.
  std::optional<std::string> LineContaining(const std::string& text) {
    while (std::optional<std::string> line =
               daemon_->ReadLine(std::chrono::seconds(10))) {
      if (absl::StrContains(*line, text)) return line;
    }
    ADD_FAILURE() << "leasekeeperd printed no line with: " << text;
    return std::nullopt;
  }

  // SIGHUP, then the log line of the TLS reload and of the policy reload.
  std::pair<std::string, std::string> Reload() {
    daemon_->Signal(SIGHUP);
    std::optional<std::string> tls = LineContaining("event=reload_tls ");
    std::optional<std::string> policy = LineContaining("event=reload_policy ");
    return {tls.value_or(""), policy.value_or("")};
  }

  // A channel of its own connection, as billing-worker.
  std::shared_ptr<grpc::Channel> Channel() {
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = pki_->ca_cert_pem();
    options.pem_private_key = billing_->key_pem;
    options.pem_cert_chain = billing_->cert_pem;
    grpc::ChannelArguments args;
    args.SetInt("grpc.use_local_subchannel_pool", 1);
    return grpc::CreateCustomChannel(address_, grpc::SslCredentials(options),
                                     args);
  }

  // The Common Name of the certificate the server presents to a new
  // connection ("" if the call fails).
  std::string ServerCertificateName() {
    auto health = grpc::health::v1::Health::NewStub(Channel());
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(10));
    grpc::health::v1::HealthCheckResponse response;
    if (!health->Check(&context, {}, &response).ok()) return "";
    for (const grpc::string_ref& name :
         context.auth_context()->FindPropertyValues("x509_common_name")) {
      return std::string(name.data(), name.size());
    }
    return "";
  }

  grpc::Status Acquire(const std::string& lock) {
    auto stub = pb::LockService::NewStub(Channel());
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(10));
    pb::AcquireResponse response;
    return stub->Acquire(&context,
                         AcquireRequest("billing-worker/reload", lock, 60'000),
                         &response);
  }

  static TestPki* pki_;
  static KeyPair* billing_;
  static KeyPair* rotated_;
  DataDir data_dir_;
  std::string cert_, key_, ca_, policy_;
  std::unique_ptr<ChildProcess> daemon_;
  std::string address_;
};
TestPki* ReloadTest::pki_ = nullptr;
KeyPair* ReloadTest::billing_ = nullptr;
KeyPair* ReloadTest::rotated_ = nullptr;

TEST_F(ReloadTest, SighupPresentsTheRotatedCertificateAndKeepsSessions) {
  ASSERT_EQ(ServerCertificateName(), "leasekeeper-test-server");
  auto stub = pb::LockService::NewStub(Channel());
  SessionStream session(*stub);
  std::optional<pb::SessionResponse> opened = session.Open("billing-worker/s");
  ASSERT_TRUE(opened.has_value() && opened->has_opened());
  std::optional<pb::SessionCallResult> granted =
      session.Call(1, AcquireCall("billing/held", 60'000));
  ASSERT_TRUE(granted.has_value() && granted->acquire().has_granted());

  Write(cert_, rotated_->cert_pem);
  Write(key_, rotated_->key_pem);
  const auto [tls, policy] = Reload();
  EXPECT_TRUE(absl::StrContains(tls, "level=info")) << tls;
  EXPECT_TRUE(absl::StrContains(tls, "outcome=reloaded")) << tls;
  EXPECT_TRUE(absl::StrContains(tls, "CN=leasekeeper-rotated")) << tls;
  EXPECT_TRUE(absl::StrContains(policy, "outcome=reloaded")) << policy;

  EXPECT_EQ(ServerCertificateName(), "leasekeeper-rotated");
  // The session stream opened before is still up, its lease held.
  std::optional<pb::KeepaliveAck> ack = session.Keepalive(7);
  ASSERT_TRUE(ack.has_value());
  EXPECT_EQ(ack->sequence(), 7u);
  std::optional<pb::SessionCallResult> renewed =
      session.Call(2, RenewCall("billing/held", 60'000));
  ASSERT_TRUE(renewed.has_value());
  EXPECT_FALSE(renewed->has_error()) << renewed->error().message();
  EXPECT_TRUE(session.Close().ok());
}

TEST_F(ReloadTest, SighupWithABrokenCertificateKeepsTheOldOneServing) {
  Write(cert_, "-----BEGIN CERTIFICATE-----\ntruncated");
  const auto [tls, policy] = Reload();
  EXPECT_TRUE(absl::StrContains(tls, "level=error")) << tls;
  EXPECT_TRUE(absl::StrContains(tls, "outcome=kept_previous")) << tls;
  EXPECT_TRUE(absl::StrContains(tls, "--tls-cert: " + cert_)) << tls;
  EXPECT_TRUE(daemon_->running());
  EXPECT_EQ(ServerCertificateName(), "leasekeeper-test-server");

  // A new certificate written before its key: refused as a pair.
  Write(cert_, rotated_->cert_pem);
  const auto [mismatch, ignored] = Reload();
  EXPECT_TRUE(absl::StrContains(mismatch, "does not match")) << mismatch;
  EXPECT_EQ(ServerCertificateName(), "leasekeeper-test-server");
  // Once the key follows, the next SIGHUP takes both.
  Write(key_, rotated_->key_pem);
  EXPECT_TRUE(absl::StrContains(Reload().first, "outcome=reloaded"));
  EXPECT_EQ(ServerCertificateName(), "leasekeeper-rotated");
}

TEST_F(ReloadTest, SighupAppliesAChangedPolicyAndKeepsItWhenBroken) {
  EXPECT_EQ(Acquire("etl/a").error_code(), grpc::StatusCode::PERMISSION_DENIED);
  Write(policy_, kWiderPolicy);
  const auto [tls, policy] = Reload();
  EXPECT_TRUE(absl::StrContains(policy, "level=info")) << policy;
  EXPECT_TRUE(absl::StrContains(policy, "outcome=reloaded")) << policy;
  EXPECT_TRUE(Acquire("etl/a").ok());

  Write(policy_, R"({"identities": {"billing-worker": {"lock_prefixes": 7}}})");
  const auto [tls_again, broken] = Reload();
  EXPECT_TRUE(absl::StrContains(broken, "level=error")) << broken;
  EXPECT_TRUE(absl::StrContains(broken, "outcome=kept_previous")) << broken;
  EXPECT_TRUE(absl::StrContains(broken, policy_)) << broken;
  EXPECT_TRUE(daemon_->running());
  // The wider policy stays in force.
  EXPECT_TRUE(Acquire("etl/b").ok());
}

}  // namespace
}  // namespace leasekeeper::testing
