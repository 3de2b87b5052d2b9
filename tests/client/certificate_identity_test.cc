// The client's reading of a certificate's identity matches the server's
// first name for it: the subject CN, else the first SAN; and the default
// client id built on it.
#include "client/ctl/certificate_identity.h"

#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "security/testing/test_pki.h"

namespace leasekeeper::ctl {
namespace {

using security::testing::KeyPair;
using security::testing::TestPki;

class CertificateIdentityTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<TestPki> pki = TestPki::Create(::testing::TempDir());
    ASSERT_TRUE(pki.ok()) << pki.status();
    pki_ = new TestPki(*std::move(pki));
  }
  static void TearDownTestSuite() { delete pki_; }

  static std::string IdentityOf(const std::string& cn,
                                const std::vector<std::string>& sans) {
    absl::StatusOr<KeyPair> pair =
        pki_->IssueClient(absl::StrCat("c", ++issued_), cn, sans);
    EXPECT_TRUE(pair.ok()) << pair.status();
    if (!pair.ok()) return "";
    absl::StatusOr<std::string> identity = CertificateIdentity(pair->cert_pem);
    EXPECT_TRUE(identity.ok()) << identity.status();
    return identity.ok() ? *identity : "";
  }

  static inline TestPki* pki_ = nullptr;
  static inline int issued_ = 0;
};

TEST_F(CertificateIdentityTest, TheCommonNameComesFirst) {
  EXPECT_EQ(IdentityOf("billing-worker", {"DNS:worker.example"}),
            "billing-worker");
}

TEST_F(CertificateIdentityTest, WithoutACommonNameTheFirstSanIsTheIdentity) {
  EXPECT_EQ(IdentityOf("", {"URI:spiffe://example.org/job", "DNS:b.example"}),
            "spiffe://example.org/job");
  EXPECT_EQ(IdentityOf("", {"DNS:worker.example"}), "worker.example");
  EXPECT_EQ(IdentityOf("", {"IP:10.1.2.3"}), "10.1.2.3");
}

TEST_F(CertificateIdentityTest, NoCertificateIsInvalid) {
  EXPECT_EQ(CertificateIdentity("not a pem").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ClientIdForTest, IsIdentityHostAndPid) {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  EXPECT_EQ(ClientIdFor("billing-worker"),
            absl::StrCat("billing-worker/", host, "/", getpid()));
}

}  // namespace
}  // namespace leasekeeper::ctl
