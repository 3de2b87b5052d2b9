#include "security/policy.h"

#include <cstdio>
#include <fstream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace leasekeeper::security {
namespace {

constexpr char kPolicy[] = R"({
  "version": 1,
  "description": "test",
  "identities": {
    "billing-worker": {"lock_prefixes": ["billing/", "shared/reports"]},
    "ops": {"admin": true, "description": "on-call"},
    "root": {"admin": true, "lock_prefixes": [""]}
  }
})";

TEST(PolicyTest, ParsesGrantsAndAdmins) {
  absl::StatusOr<Policy> policy = Policy::Parse(kPolicy);
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_EQ(policy->identity_count(), 3u);
  ASSERT_NE(policy->Find("billing-worker"), nullptr);
  EXPECT_EQ(policy->Find("billing-worker")->lock_prefixes,
            (std::vector<std::string>{"billing/", "shared/reports"}));
  EXPECT_FALSE(policy->IsAdmin("billing-worker"));
  EXPECT_TRUE(policy->IsAdmin("ops"));
  EXPECT_EQ(policy->Find("stranger"), nullptr);
}

TEST(PolicyTest, PrefixGrantsAreBytewisePrefixes) {
  absl::StatusOr<Policy> policy = Policy::Parse(kPolicy);
  ASSERT_TRUE(policy.ok());
  struct Case {
    const char* identity;
    const char* lock;
    bool granted;
  };
  const Case cases[] = {
      {"billing-worker", "billing/invoices", true},
      {"billing-worker", "billing/", true},
      {"billing-worker", "billing", false},  // "billing/" does not grant it
      {"billing-worker", "billingX", false},
      {"billing-worker", "Billing/x", false},  // case-sensitive
      {"billing-worker", "shared/reports", true},
      {"billing-worker", "shared/reports-2024", true},  // plain prefix
      {"billing-worker", "shared/other", false},
      {"ops", "billing/x", false},  // admin alone grants no lock
      {"root", "anything/at/all", true},
      {"root", "", true},
      {"stranger", "billing/x", false},  // deny by default
  };
  for (const Case& c : cases) {
    EXPECT_EQ(policy->MayUseLock(c.identity, c.lock), c.granted)
        << c.identity << " " << c.lock;
  }
}

TEST(PolicyTest, MistakesAreRefusedWithTheirJsonPath) {
  struct Case {
    const char* text;
    const char* message;  // a substring of the error
  };
  const Case cases[] = {
      {"", "not valid JSON"},
      {"{\"identities\": {}", "not valid JSON"},
      {"[]", "must be a JSON object"},
      {"{}", "missing \"identities\""},
      {R"({"identities": []})", "identities: must be an object"},
      {R"({"identities": {}, "extra": 1})", "unknown key \"extra\""},
      {R"({"version": 2, "identities": {}})", "version: must be 1"},
      {R"({"version": "1", "identities": {}})", "version: must be 1"},
      {R"({"description": 5, "identities": {}})",
       "description: must be a string"},
      {R"({"identities": {"a": true}})", "identities.\"a\": must be an object"},
      {R"({"identities": {"a": {"lock_prefix": ["x"]}}})",
       "identities.\"a\": unknown key \"lock_prefix\""},
      {R"({"identities": {"a": {"lock_prefixes": "x"}}})",
       "identities.\"a\".lock_prefixes: must be an array of strings"},
      {R"({"identities": {"a": {"lock_prefixes": ["x", 3]}}})",
       "identities.\"a\".lock_prefixes[1]: must be a string"},
      {R"({"identities": {"a": {"lock_prefixes": ["x", "x"]}}})",
       "identities.\"a\".lock_prefixes[1]: duplicate prefix \"x\""},
      {R"({"identities": {"a": {"admin": "yes"}}})",
       "identities.\"a\".admin: must be true or false"},
      {R"({"identities": {"a": {}}})", "identities.\"a\": grants nothing"},
      {R"({"identities": {"a": {"admin": false, "lock_prefixes": []}}})",
       "grants nothing"},
      {R"({"identities": {"": {"admin": true}}})", "must not be empty"},
      {R"({"identities": {"a": {"admin": true}, "a": {"lock_prefixes": [""]}}})",
       "duplicate key \"a\""},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Policy> policy = Policy::Parse(c.text);
    ASSERT_FALSE(policy.ok()) << c.text;
    EXPECT_EQ(policy.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(policy.status().message().find(c.message), std::string::npos)
        << "text: " << c.text << "\nerror: " << policy.status();
  }
}

TEST(PolicyTest, SyntaxErrorsSayWhere) {
  absl::StatusOr<Policy> policy =
      Policy::Parse("{\n  \"identities\": {\n    \"a\": {admin: true}\n  }\n}");
  ASSERT_FALSE(policy.ok());
  EXPECT_NE(policy.status().message().find("line 3"), std::string::npos)
      << policy.status();
}

TEST(PolicyTest, LimitsAreNamedAndEnforced) {
  std::string prefixes;
  for (size_t i = 0; i <= kMaxPrefixesPerIdentity; ++i) {
    absl::StrAppend(&prefixes, i ? "," : "", "\"p", i, "\"");
  }
  absl::StatusOr<Policy> policy = Policy::Parse(absl::StrCat(
      R"({"identities": {"a": {"lock_prefixes": [)", prefixes, "]}}}"));
  ASSERT_FALSE(policy.ok());
  EXPECT_NE(policy.status().message().find("the limit is"), std::string::npos);

  const std::string long_identity(kMaxIdentityBytes + 1, 'x');
  EXPECT_FALSE(Policy::Parse(absl::StrCat(R"({"identities": {")", long_identity,
                                          R"(": {"admin": true}}})"))
                   .ok());
  EXPECT_FALSE(Policy::Parse(std::string(kMaxPolicyBytes + 1, ' ')).ok());
}

TEST(PolicyTest, NonAsciiIdentitiesAreKeptAsUtf8) {
  absl::StatusOr<Policy> policy =
      Policy::Parse(R"({"identities": {"équipe": {"lock_prefixes": ["é/"]}}})");
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_TRUE(policy->MayUseLock("équipe", "é/x"));
}

TEST(PolicyTest, LoadNamesTheFile) {
  EXPECT_EQ(Policy::Load("/nonexistent/policy.json").status().code(),
            absl::StatusCode::kNotFound);
  const std::string path = ::testing::TempDir() + "/bad-policy.json";
  {
    std::ofstream file(path);
    file << R"({"identities": {"a": {}}})";
  }
  absl::StatusOr<Policy> policy = Policy::Load(path);
  ASSERT_FALSE(policy.ok());
  EXPECT_EQ(policy.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(policy.status().message().find(path), std::string::npos);
  std::remove(path.c_str());
}

TEST(PolicyTest, TheShippedExamplePolicyParses) {
  absl::StatusOr<Policy> policy = Policy::Load(LEASEKEEPER_EXAMPLE_POLICY);
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_GT(policy->identity_count(), 0u);
}

}  // namespace
}  // namespace leasekeeper::security
