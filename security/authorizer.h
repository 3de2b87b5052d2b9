// Authorizer: decides whether a call's peer may do what the call asks, from
// the transport mode (Open, ServerTls, MutualTls), the client-id rule
// (client_id_rule.h) and the optional policy (policy.h). The server's
// handlers call the checks before touching any state, so a refused call
// changes nothing. What each mode allows and which check each RPC makes:
// docs/design/security.md.
//
// Every Check* answers OK; UNAUTHENTICATED (a plaintext call to a TLS
// server, or a peer without certificate names under mutual TLS); or
// PERMISSION_DENIED with a message naming the peer's identity and what it
// lacked. Open mode passes every check; ServerTls every check of a call
// over TLS.
//
// Thread-safety: the checks and ReplacePolicy may run concurrently; each
// check reads one policy, the old or the new one, never a mix. Move an
// Authorizer only while setting it up, before any check runs on it.
#ifndef LEASEKEEPER_SECURITY_AUTHORIZER_H_
#define LEASEKEEPER_SECURITY_AUTHORIZER_H_

#include <memory>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "security/peer_identity.h"
#include "security/policy.h"

namespace leasekeeper::security {

class Authorizer {
 public:
  // Open mode: every check passes.
  static Authorizer Open();
  // Server-TLS mode: every check passes for calls over TLS.
  static Authorizer ServerTls();
  // Mutual-TLS mode, with or without a policy.
  static Authorizer MutualTls(std::optional<Policy> policy);

  Authorizer(Authorizer&& other);
  Authorizer& operator=(Authorizer&& other);
  Authorizer(const Authorizer&) = delete;
  Authorizer& operator=(const Authorizer&) = delete;

  bool requires_identity() const { return mode_ == Mode::kMutualTls; }
  bool has_policy() const;

  // Makes `policy` the one every later check reads (leasekeeperd calls it on
  // SIGHUP); a call already past its checks is not re-checked. Outcomes: OK;
  // FAILED_PRECONDITION if this Authorizer was made without a policy (a
  // policy cannot be switched on or off while serving: the flags decide).
  absl::Status ReplacePolicy(Policy policy);

  // Mutual TLS: `client_id` belongs to one of the peer's names
  // (ClientIdBelongsTo).
  absl::Status CheckActAs(const PeerIdentity& peer,
                          absl::string_view client_id) const;
  // Mutual TLS: without a policy, any authenticated peer; with one, a peer
  // with a name granted a prefix of `lock`.
  // Cost: O(names * prefixes granted to them).
  absl::Status CheckUseLock(const PeerIdentity& peer,
                            absl::string_view lock) const;
  // Mutual TLS: as CheckUseLock, or an admin.
  absl::Status CheckObserveLock(const PeerIdentity& peer,
                                absl::string_view lock) const;
  // Mutual TLS: `client_id` belongs to the peer, or the peer is an admin.
  absl::Status CheckObserveClient(const PeerIdentity& peer,
                                  absl::string_view client_id) const;
  // Mutual TLS: without a policy, any authenticated peer; with one, an
  // admin or a peer granted a prefix of `prefix`.
  absl::Status CheckListLocks(const PeerIdentity& peer,
                              absl::string_view prefix) const;
  // Only the transport's rule of the mode (ServerInfo): OK, or
  // UNAUTHENTICATED as above.
  absl::Status CheckTransportOnly(const PeerIdentity& peer) const;
  // Mutual TLS: an admin only (nobody without a policy). `operation` names
  // the refused operation in the message.
  absl::Status CheckAdmin(const PeerIdentity& peer,
                          absl::string_view operation) const;

 private:
  enum class Mode { kOpen, kServerTls, kMutualTls };
  Authorizer(Mode mode, std::optional<Policy> policy);

  // OK to go on with the mode's rules; UNAUTHENTICATED if the transport
  // does not meet the mode. Sets *done when nothing else is to be checked.
  absl::Status CheckTransport(const PeerIdentity& peer, bool* done) const;
  std::shared_ptr<const Policy> CurrentPolicy() const;
  // `policy` null: no policy configured.
  static bool IsAdmin(const Policy* policy, const PeerIdentity& peer);
  static bool Granted(const Policy* policy, const PeerIdentity& peer,
                      absl::string_view name);

  Mode mode_;
  mutable absl::Mutex mu_;
  std::shared_ptr<const Policy> policy_ ABSL_GUARDED_BY(mu_);
};

}  // namespace leasekeeper::security

#endif  // LEASEKEEPER_SECURITY_AUTHORIZER_H_
