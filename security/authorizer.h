// Authorizer: decides whether a call's peer may do what the call asks, from
// the transport mode, the client-id rule (client_id_rule.h) and the optional
// policy (policy.h). It only decides; the server refuses a call whose check
// fails before touching any state, so a refused call changes nothing.
//
// Modes:
//  - Open (plaintext server): nobody is authenticated and every check
//    passes. Any caller can name any client id, so no check could protect
//    anything: keep such a server on loopback or a trusted network
//    (leasekeeperd's default listen address is 127.0.0.1).
//  - Server TLS (--tls-cert/--tls-key without --client-ca): as Open, but
//    only for calls that came over TLS; a call on a plaintext port (the
//    health-only port) is UNAUTHENTICATED.
//  - Mutual TLS: every check first needs a peer with certificate names
//    (UNAUTHENTICATED otherwise: a plaintext port, or, in defence in depth,
//    a TLS connection without a client certificate, which the handshake
//    already refuses). Then:
//      * acting as a client: the client id must belong to one of the peer's
//        names (the client-id rule);
//      * without a policy, every authenticated peer may use every lock and
//        list locks, and nobody is an admin;
//      * with a policy, a lock is usable iff one of the peer's names is
//        granted a prefix of it, and the peer is an admin iff one of its
//        names is marked admin.
//
// Which check each RPC makes (in this order; the first failure answers):
//   Acquire, Renew, Release   CheckActAs(client_id), CheckUseLock(lock)
//   Session (open)            CheckActAs(client_id)
//   Write                     CheckActAs(client_id) if it is set,
//                             CheckUseLock(lock)
//   Read                      CheckUseLock(lock)
//   Inspect                   CheckObserveLock(lock)     grant or admin
//   Status                    CheckObserveClient(id)     own client or admin
//   ListLocks                 CheckListLocks(prefix)     admin, or a granted
//                                                        prefix of `prefix`
//   ServerInfo                CheckTransportOnly()       anybody connected
//   ForceRelease              CheckAdmin("ForceRelease") admin only (Open
//                             mode: allowed, see above; it is logged with
//                             the caller's address)
//   grpc.health.v1.Health     none (probes carry no certificate)
//
// Every outcome of every Check*: OK; UNAUTHENTICATED (a plaintext call to a
// TLS server, or no certificate names under mutual TLS); PERMISSION_DENIED
// with a message naming the peer's identity and what it lacked.
//
// The policy can be replaced while the server runs (ReplacePolicy, on
// SIGHUP): each check reads one policy, the old or the new one, never a mix;
// a call already past its checks is not re-checked.
//
// Thread-safety: any number of threads may call the checks and
// ReplacePolicy concurrently (the policy is a shared immutable value behind
// a mutex held only to copy the pointer). Moving an Authorizer is for
// setting one up, before any check runs on it.
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

  // Makes `policy` the one every later check reads. Outcomes: OK;
  // FAILED_PRECONDITION if this Authorizer was made without a policy (a
  // policy cannot be switched on or off while serving: the flags decide).
  absl::Status ReplacePolicy(Policy policy);

  absl::Status CheckActAs(const PeerIdentity& peer,
                          absl::string_view client_id) const;
  // Cost: O(names * prefixes granted to them).
  absl::Status CheckUseLock(const PeerIdentity& peer,
                            absl::string_view lock) const;
  absl::Status CheckObserveLock(const PeerIdentity& peer,
                                absl::string_view lock) const;
  absl::Status CheckObserveClient(const PeerIdentity& peer,
                                  absl::string_view client_id) const;
  absl::Status CheckListLocks(const PeerIdentity& peer,
                              absl::string_view prefix) const;
  // Only the transport's rule of the mode (ServerInfo): OK, or
  // UNAUTHENTICATED as above.
  absl::Status CheckTransportOnly(const PeerIdentity& peer) const;
  // `operation` names the refused operation in the message.
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
