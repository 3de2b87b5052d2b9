// PeerIdentity: who is on the other end of a call, as the transport proved
// it: the names in the client certificate of a mutual-TLS connection (the
// subject's Common Name, then its Subject Alternative Names: DNS names,
// URIs such as SPIFFE ids, e-mail and IP addresses, in certificate order,
// without duplicates). Each is an identity of the peer (the CA vouched for
// all of them). Plaintext connections and TLS without client certificates
// authenticate nobody: the names are empty.
//
// Thread-safety: a plain value; PeerIdentityFromAuthContext is a pure
// function of its argument.
#ifndef LEASEKEEPER_SECURITY_PEER_IDENTITY_H_
#define LEASEKEEPER_SECURITY_PEER_IDENTITY_H_

#include <string>
#include <vector>

namespace grpc {
class AuthContext;
}  // namespace grpc

namespace leasekeeper::security {

struct PeerIdentity {
  // Empty when the transport authenticated nobody.
  std::vector<std::string> names;
  // True iff the call came over TLS (transport_security_type "ssl"); false
  // on a plaintext port, such as the health-only port.
  bool over_tls = false;

  bool authenticated() const { return !names.empty(); }
  // For logs and error messages: "a" or "a, b"; "(unauthenticated)" when
  // empty.
  std::string ToString() const;
};

// The identity of a call's peer (`context` from
// grpc::ServerContext::auth_context() or
// grpc::CallbackServerContext::auth_context()); empty if `context` is null
// or the peer is not authenticated.
PeerIdentity PeerIdentityFromAuthContext(const grpc::AuthContext* context);

}  // namespace leasekeeper::security

#endif  // LEASEKEEPER_SECURITY_PEER_IDENTITY_H_
