// The client-id rule of mutual TLS: a request's client id must belong to the
// certificate that sent it (one of its names, or a name, '/', and a suffix).
//
// Thread-safety: pure functions.
#ifndef LEASEKEEPER_SECURITY_CLIENT_ID_RULE_H_
#define LEASEKEEPER_SECURITY_CLIENT_ID_RULE_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "security/peer_identity.h"

namespace leasekeeper::security {

// True iff `client_id` belongs to `identity`: C == I, or C starts with I
// followed by '/' and at least one more byte (so one certificate can run
// several clients), byte-wise and case-sensitive. With I "billing-worker":
// "billing-worker" and "billing-worker/7" belong; "billing-worker/" (empty
// suffix), "billing-worker7", "billing" and "other/billing-worker" do not.
bool ClientIdBelongsTo(absl::string_view client_id, absl::string_view identity);

// Outcomes: OK if `client_id` belongs to one of the peer's names;
// UNAUTHENTICATED if the peer has no names; PERMISSION_DENIED otherwise,
// with a message naming the client id and the peer's names.
// Cost: O(names * identity length).
absl::Status CheckClientIdBelongsTo(absl::string_view client_id,
                                    const PeerIdentity& peer);

}  // namespace leasekeeper::security

#endif  // LEASEKEEPER_SECURITY_CLIENT_ID_RULE_H_
