// libFuzzer target over the policy parser (security/policy.h): arbitrary
// bytes go to Policy::Parse, as leasekeeperd reads the --policy file.
//
// It must never crash, hang, leak or trip ASan/UBSan (nlohmann's
// exceptions included: Parse returns statuses), every refusal is
// INVALID_ARGUMENT, and a parsed policy answers lookups, with the rules of
// the header: an identity is admin or may use a lock only if it is listed,
// and a listed identity may use a name iff one of its prefixes starts it.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "security/policy.h"

namespace {

using leasekeeper::security::IdentityGrant;
using leasekeeper::security::Policy;

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "policy_fuzzer: %s\n", what);
  std::abort();
}

// Checks MayUseLock and IsAdmin against the grant Find returns.
void CheckLookup(const Policy& policy, absl::string_view identity,
                 absl::string_view name) {
  const IdentityGrant* grant = policy.Find(identity);
  bool expected_use = false;
  if (grant != nullptr) {
    for (const std::string& prefix : grant->lock_prefixes) {
      expected_use = expected_use || absl::StartsWith(name, prefix);
    }
    if (grant->lock_prefixes.empty() && !grant->admin) {
      Fail("a listed identity with an empty grant");
    }
  }
  if (policy.MayUseLock(identity, name) != expected_use) {
    Fail("MayUseLock disagrees with the identity's prefixes");
  }
  if (policy.IsAdmin(identity) != (grant != nullptr && grant->admin)) {
    Fail("IsAdmin disagrees with the identity's grant");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<Policy> policy = Policy::Parse(input);
  if (!policy.ok()) {
    if (policy.status().code() != absl::StatusCode::kInvalidArgument) {
      Fail("a refusal that is not INVALID_ARGUMENT");
    }
    if (!absl::StartsWith(policy.status().message(), "policy: ")) {
      Fail("a refusal whose message does not start with \"policy: \"");
    }
    return 0;
  }
  // Lookups of names taken from the input itself, so that the fuzzer can
  // reach listed identities and their prefixes.
  for (size_t cut = 0; cut <= size; cut += 1 + size / 8) {
    const absl::string_view head = input.substr(0, cut);
    const absl::string_view tail = input.substr(cut);
    CheckLookup(*policy, head, tail);
    CheckLookup(*policy, tail, head);
  }
  CheckLookup(*policy, "", "");
  return 0;
}
