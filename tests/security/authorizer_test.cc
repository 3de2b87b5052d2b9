#include "security/authorizer.h"

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace leasekeeper::security {
namespace {

using Code = absl::StatusCode;

Policy TestPolicy() {
  absl::StatusOr<Policy> policy = Policy::Parse(R"({
    "identities": {
      "billing": {"lock_prefixes": ["billing/"]},
      "ops": {"admin": true},
      "spiffe://example.org/reports": {"lock_prefixes": ["reports/"]}
    }
  })");
  EXPECT_TRUE(policy.ok()) << policy.status();
  return *policy;
}

// Peers over TLS with client certificates.
const PeerIdentity kBilling{{"billing"}, /*over_tls=*/true};
const PeerIdentity kOps{{"ops"}, true};
const PeerIdentity kStranger{{"stranger"}, true};
// A certificate with a CN and a SPIFFE URI SAN: both are its names.
const PeerIdentity kReports{{"reports-cn", "spiffe://example.org/reports"},
                            true};
// Over TLS without a client certificate, and over a plaintext port.
const PeerIdentity kNobody{{}, true};
const PeerIdentity kPlaintext{{}, false};

TEST(AuthorizerTest, OpenModeAllowsEverythingBecauseNobodyIsAuthenticated) {
  const Authorizer open = Authorizer::Open();
  EXPECT_FALSE(open.requires_identity());
  EXPECT_TRUE(open.CheckActAs(kNobody, "anyone").ok());
  EXPECT_TRUE(open.CheckUseLock(kNobody, "any").ok());
  EXPECT_TRUE(open.CheckObserveLock(kNobody, "any").ok());
  EXPECT_TRUE(open.CheckObserveClient(kNobody, "anyone").ok());
  EXPECT_TRUE(open.CheckListLocks(kNobody, "").ok());
  EXPECT_TRUE(open.CheckAdmin(kNobody, "ForceRelease").ok());
}

TEST(AuthorizerTest, ServerTlsAllowsEverythingOverTlsButNothingInPlaintext) {
  const Authorizer tls = Authorizer::ServerTls();
  EXPECT_FALSE(tls.requires_identity());
  EXPECT_TRUE(tls.CheckActAs(kNobody, "anyone").ok());
  EXPECT_TRUE(tls.CheckAdmin(kNobody, "ForceRelease").ok());
  EXPECT_EQ(tls.CheckActAs(kPlaintext, "anyone").code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(tls.CheckListLocks(kPlaintext, "").code(),
            absl::StatusCode::kUnauthenticated);
}

TEST(AuthorizerTest, PlaintextPortOfATlsServerIsUnauthenticatedEvenWithNames) {
  // Names cannot arrive without TLS; the transport check comes first anyway.
  const PeerIdentity odd{{"ops"}, false};
  const Authorizer authorizer = Authorizer::MutualTls(TestPolicy());
  absl::Status status = authorizer.CheckAdmin(odd, "ForceRelease");
  EXPECT_EQ(status.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_NE(status.message().find("health checks only"), std::string::npos);
}

TEST(AuthorizerTest, MutualTlsRefusesUnauthenticatedPeersEverywhere) {
  for (const Authorizer& authorizer : {Authorizer::MutualTls(std::nullopt),
                                       Authorizer::MutualTls(TestPolicy())}) {
    EXPECT_EQ(authorizer.CheckUseLock(kPlaintext, "x").code(),
              Code::kUnauthenticated);
    EXPECT_EQ(authorizer.CheckActAs(kNobody, "x").code(),
              Code::kUnauthenticated);
    EXPECT_EQ(authorizer.CheckUseLock(kNobody, "x").code(),
              Code::kUnauthenticated);
    EXPECT_EQ(authorizer.CheckObserveLock(kNobody, "x").code(),
              Code::kUnauthenticated);
    EXPECT_EQ(authorizer.CheckObserveClient(kNobody, "x").code(),
              Code::kUnauthenticated);
    EXPECT_EQ(authorizer.CheckListLocks(kNobody, "").code(),
              Code::kUnauthenticated);
    EXPECT_EQ(authorizer.CheckAdmin(kNobody, "ForceRelease").code(),
              Code::kUnauthenticated);
  }
}

TEST(AuthorizerTest, WithoutPolicyAnyPeerUsesAnyLockButNobodyIsAdmin) {
  const Authorizer authorizer = Authorizer::MutualTls(std::nullopt);
  EXPECT_TRUE(authorizer.CheckUseLock(kStranger, "billing/x").ok());
  EXPECT_TRUE(authorizer.CheckListLocks(kStranger, "").ok());
  EXPECT_TRUE(authorizer.CheckActAs(kStranger, "stranger/1").ok());
  EXPECT_EQ(authorizer.CheckActAs(kStranger, "billing").code(),
            Code::kPermissionDenied);
  absl::Status admin = authorizer.CheckAdmin(kOps, "ForceRelease");
  EXPECT_EQ(admin.code(), Code::kPermissionDenied);
  EXPECT_NE(admin.message().find("--policy"), std::string::npos);
}

TEST(AuthorizerTest, PolicyDecisionsPerCheck) {
  const Authorizer authorizer = Authorizer::MutualTls(TestPolicy());
  struct Case {
    const char* what;
    absl::Status status;
    Code expected;
  };
  const Case cases[] = {
      // Acting as a client: the client-id rule.
      {"billing acts as billing/7",
       authorizer.CheckActAs(kBilling, "billing/7"), Code::kOk},
      {"billing acts as ops", authorizer.CheckActAs(kBilling, "ops"),
       Code::kPermissionDenied},
      {"ops acts as billing (admin is no impersonation)",
       authorizer.CheckActAs(kOps, "billing"), Code::kPermissionDenied},
      // Locks: prefix grants.
      {"billing uses billing/a", authorizer.CheckUseLock(kBilling, "billing/a"),
       Code::kOk},
      {"billing uses reports/a", authorizer.CheckUseLock(kBilling, "reports/a"),
       Code::kPermissionDenied},
      {"ops uses billing/a", authorizer.CheckUseLock(kOps, "billing/a"),
       Code::kPermissionDenied},
      {"stranger uses billing/a",
       authorizer.CheckUseLock(kStranger, "billing/a"),
       Code::kPermissionDenied},
      {"SAN-granted reports uses reports/a",
       authorizer.CheckUseLock(kReports, "reports/a"), Code::kOk},
      // Observing locks: grant or admin.
      {"billing inspects billing/a",
       authorizer.CheckObserveLock(kBilling, "billing/a"), Code::kOk},
      {"billing inspects reports/a",
       authorizer.CheckObserveLock(kBilling, "reports/a"),
       Code::kPermissionDenied},
      {"ops inspects reports/a", authorizer.CheckObserveLock(kOps, "reports/a"),
       Code::kOk},
      // Observing clients: own or admin.
      {"billing status of billing/3",
       authorizer.CheckObserveClient(kBilling, "billing/3"), Code::kOk},
      {"billing status of reports",
       authorizer.CheckObserveClient(kBilling, "reports"),
       Code::kPermissionDenied},
      {"ops status of billing/3",
       authorizer.CheckObserveClient(kOps, "billing/3"), Code::kOk},
      // Listing: admin, or within a grant.
      {"ops lists all", authorizer.CheckListLocks(kOps, ""), Code::kOk},
      {"billing lists all", authorizer.CheckListLocks(kBilling, ""),
       Code::kPermissionDenied},
      {"billing lists billing/",
       authorizer.CheckListLocks(kBilling, "billing/"), Code::kOk},
      {"billing lists billing/eu-",
       authorizer.CheckListLocks(kBilling, "billing/eu-"), Code::kOk},
      {"billing lists bill", authorizer.CheckListLocks(kBilling, "bill"),
       Code::kPermissionDenied},
      // Admin operations.
      {"ops force-releases", authorizer.CheckAdmin(kOps, "ForceRelease"),
       Code::kOk},
      {"billing force-releases",
       authorizer.CheckAdmin(kBilling, "ForceRelease"),
       Code::kPermissionDenied},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(c.status.code(), c.expected) << c.what << ": " << c.status;
  }
}

TEST(AuthorizerTest, RefusalsNameTheIdentityAndWhatItLacked) {
  const Authorizer authorizer = Authorizer::MutualTls(TestPolicy());
  absl::Status lock = authorizer.CheckUseLock(kBilling, "reports/a");
  EXPECT_NE(lock.message().find("billing"), std::string::npos);
  EXPECT_NE(lock.message().find("\"reports/a\""), std::string::npos);
  absl::Status admin = authorizer.CheckAdmin(kBilling, "ForceRelease");
  EXPECT_NE(admin.message().find("ForceRelease"), std::string::npos);
  EXPECT_NE(admin.message().find("not marked admin"), std::string::npos);
}

TEST(AuthorizerTest, TransportOnlyCheckLetsInEveryoneTheTransportAccepts) {
  EXPECT_TRUE(Authorizer::Open().CheckTransportOnly(kPlaintext).ok());
  EXPECT_TRUE(Authorizer::ServerTls().CheckTransportOnly(kNobody).ok());
  EXPECT_EQ(Authorizer::ServerTls().CheckTransportOnly(kPlaintext).code(),
            Code::kUnauthenticated);
  const Authorizer mutual = Authorizer::MutualTls(TestPolicy());
  // Any certificate, even one the policy grants nothing.
  EXPECT_TRUE(mutual.CheckTransportOnly(kStranger).ok());
  EXPECT_EQ(mutual.CheckTransportOnly(kNobody).code(), Code::kUnauthenticated);
  EXPECT_EQ(mutual.CheckTransportOnly(kPlaintext).code(),
            Code::kUnauthenticated);
}

TEST(AuthorizerTest, AReplacedPolicyDecidesEveryLaterCheck) {
  Authorizer authorizer = Authorizer::MutualTls(TestPolicy());
  ASSERT_TRUE(authorizer.CheckUseLock(kBilling, "billing/a").ok());
  ASSERT_EQ(authorizer.CheckUseLock(kStranger, "etl/a").code(),
            Code::kPermissionDenied);
  absl::StatusOr<Policy> next = Policy::Parse(R"({
    "identities": {
      "stranger": {"lock_prefixes": ["etl/"], "admin": true}
    }
  })");
  ASSERT_TRUE(next.ok()) << next.status();
  ASSERT_TRUE(authorizer.ReplacePolicy(*std::move(next)).ok());
  EXPECT_TRUE(authorizer.CheckUseLock(kStranger, "etl/a").ok());
  EXPECT_TRUE(authorizer.CheckAdmin(kStranger, "ForceRelease").ok());
  // Grants of the old policy are gone with it.
  EXPECT_EQ(authorizer.CheckUseLock(kBilling, "billing/a").code(),
            Code::kPermissionDenied);
  EXPECT_EQ(authorizer.CheckAdmin(kOps, "ForceRelease").code(),
            Code::kPermissionDenied);
}

TEST(AuthorizerTest, APolicyCannotBeSwitchedOnWhileServing) {
  Authorizer modes[] = {Authorizer::Open(), Authorizer::ServerTls(),
                        Authorizer::MutualTls(std::nullopt)};
  for (Authorizer& authorizer : modes) {
    EXPECT_EQ(authorizer.ReplacePolicy(TestPolicy()).code(),
              Code::kFailedPrecondition);
    EXPECT_FALSE(authorizer.has_policy());
    EXPECT_EQ(authorizer.CheckAdmin(kOps, "ForceRelease").ok(),
              !authorizer.requires_identity());
  }
}

}  // namespace
}  // namespace leasekeeper::security
