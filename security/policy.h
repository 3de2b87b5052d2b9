// Policy: which certificate identities may use which lock names, and which
// are operators (admins). Loaded from the JSON file of leasekeeperd's
// --policy flag at startup and again on SIGHUP (a file that does not load
// leaves the previous policy in force); only meaningful with mutual TLS.
// Deny by default: an identity the file does not list is granted nothing.
// The file's format and meaning: docs/design/security.md.
//
// Thread-safety: immutable after Parse/Load; any number of threads may read.
#ifndef LEASEKEEPER_SECURITY_POLICY_H_
#define LEASEKEEPER_SECURITY_POLICY_H_

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace leasekeeper::security {

inline constexpr size_t kMaxPolicyBytes = 1 << 20;
inline constexpr size_t kMaxPolicyIdentities = 10'000;
inline constexpr size_t kMaxIdentityBytes = 1024;
inline constexpr size_t kMaxPrefixesPerIdentity = 1'000;
inline constexpr size_t kMaxPrefixBytes = 1024;

struct IdentityGrant {
  std::vector<std::string> lock_prefixes;  // in file order, distinct
  bool admin = false;
};

class Policy {
 public:
  // Parses the policy file's text (UTF-8 JSON: "version" 1, optional
  // "description", required "identities" mapping each identity to its
  // "lock_prefixes", "admin" and "description"). Unknown keys are errors,
  // so a typo never silently grants or drops access; so is an entry that
  // grants nothing (no prefixes, not admin).
  // Outcomes: the policy; INVALID_ARGUMENT with a message that names the
  // JSON path of the first problem (e.g. `identities."billing".admin: must
  // be true or false`), for text that is not JSON (with the byte offset), a
  // duplicate key, a missing or mistyped field, an unknown key, or a limit
  // exceeded.
  static absl::StatusOr<Policy> Parse(absl::string_view json_text);

  // Reads and parses `path`. Outcomes: as Parse, each message prefixed with
  // the path; NOT_FOUND, PERMISSION_DENIED or another errno-derived code if
  // the file cannot be read; INVALID_ARGUMENT if it exceeds kMaxPolicyBytes.
  static absl::StatusOr<Policy> Load(const std::string& path);

  // The grant of `identity`, or nullptr when the file does not list it.
  const IdentityGrant* Find(absl::string_view identity) const;

  // True iff `identity` is listed with a grant that `name` starts with
  // (byte-wise, case-sensitive; "billing/" does not grant "billing", the
  // prefix "" grants every lock).
  // `name` is a lock name, or a ListLocks prefix: every lock such a listing
  // can return starts with the prefix, hence with the grant.
  // Cost: O(prefixes of that identity).
  bool MayUseLock(absl::string_view identity, absl::string_view name) const;

  // True iff `identity` is listed with admin: true (ListLocks of every
  // prefix, Inspect and Status of anything, ForceRelease; no lock by itself).
  bool IsAdmin(absl::string_view identity) const;

  size_t identity_count() const { return grants_.size(); }

 private:
  std::map<std::string, IdentityGrant, std::less<>> grants_;
};

}  // namespace leasekeeper::security

#endif  // LEASEKEEPER_SECURITY_POLICY_H_
