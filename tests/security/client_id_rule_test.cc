#include "security/client_id_rule.h"

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace leasekeeper::security {
namespace {

// The header's examples, verbatim.
TEST(ClientIdRuleTest, ClientIdIsTheIdentityOrIdentitySlashSuffix) {
  struct Case {
    const char* client_id;
    bool belongs;
  };
  const Case cases[] = {
      {"billing-worker", true},
      {"billing-worker/7", true},
      {"billing-worker/", false},
      {"billing-worker7", false},
      {"billing", false},
      {"other/billing-worker", false},
      {"billing-worker/a/b", true},
      {"Billing-Worker", false},
      {"", false},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ClientIdBelongsTo(c.client_id, "billing-worker"), c.belongs)
        << c.client_id;
  }
}

TEST(ClientIdRuleTest, EmptyIdentityOwnsNothing) {
  EXPECT_FALSE(ClientIdBelongsTo("", ""));
  EXPECT_FALSE(ClientIdBelongsTo("/x", ""));
}

TEST(ClientIdRuleTest, AnyOfThePeersNamesMayOwnTheClientId) {
  const PeerIdentity peer{{"worker-cn", "spiffe://example.org/job"}, true};
  EXPECT_TRUE(CheckClientIdBelongsTo("worker-cn/1", peer).ok());
  EXPECT_TRUE(CheckClientIdBelongsTo("spiffe://example.org/job/3", peer).ok());
  absl::Status refused = CheckClientIdBelongsTo("someone-else", peer);
  EXPECT_EQ(refused.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(refused.message().find("\"someone-else\""), std::string::npos);
  EXPECT_NE(refused.message().find("worker-cn"), std::string::npos);
}

TEST(ClientIdRuleTest, UnauthenticatedPeerOwnsNoClientId) {
  EXPECT_EQ(CheckClientIdBelongsTo("anything", PeerIdentity{}).code(),
            absl::StatusCode::kUnauthenticated);
}

}  // namespace
}  // namespace leasekeeper::security
