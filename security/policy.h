// Policy: which certificate identities may use which lock names, and which
// are operators (admins). Loaded at startup from a JSON file given by
// leasekeeperd's --policy flag, and again on SIGHUP (a file that does not
// load leaves the previous policy in force); only meaningful with mutual
// TLS.
//
// Format (UTF-8 JSON; unknown keys are errors, so a typo never silently
// grants or drops access):
//
//   {
//     "version": 1,                           optional; must be 1
//     "description": "free text",             optional
//     "identities": {                         required; may be empty
//       "billing-worker": {                   an identity: a certificate's
//                                             CN or one of its SAN entries
//         "lock_prefixes": ["billing/", "shared/reports"],
//         "admin": false,                     optional; default false
//         "description": "free text"          optional
//       },
//       "spiffe://example.org/ops/oncall": { "admin": true }
//     }
//   }
//
// Meaning:
//  - An identity may use a lock (Acquire, Renew, Release, Write, Read,
//    Inspect) iff the lock's name starts with one of its lock_prefixes
//    (byte-wise, case-sensitive). The prefix "" grants every lock. Prefixes
//    are plain strings: "billing/" does not grant "billing" nor
//    "billingX"; "billing" grants all three.
//  - `admin: true` marks an operator: ListLocks of every prefix, Inspect and
//    Status of anything, and the forced release. It does not by itself grant
//    Acquire on any lock (list "" to do that).
//  - An identity absent from the file is granted nothing: deny by default.
//    An entry that grants nothing (no prefixes, not admin) is an error.
//
// Limits (named, checked at load): the file at most kMaxPolicyBytes, at
// most kMaxPolicyIdentities identities of 1..kMaxIdentityBytes bytes, each
// with at most kMaxPrefixesPerIdentity distinct prefixes of at most
// kMaxPrefixBytes bytes.
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

  // True iff `identity` is listed with a grant that `name` starts with.
  // `name` is a lock name, or a ListLocks prefix: every lock such a listing
  // can return starts with the prefix, hence with the grant.
  // Cost: O(prefixes of that identity).
  bool MayUseLock(absl::string_view identity, absl::string_view name) const;

  bool IsAdmin(absl::string_view identity) const;

  size_t identity_count() const { return grants_.size(); }

 private:
  std::map<std::string, IdentityGrant, std::less<>> grants_;
};

}  // namespace leasekeeper::security

#endif  // LEASEKEEPER_SECURITY_POLICY_H_
