#include "security/peer_identity.h"

#include <algorithm>

#include "absl/strings/str_join.h"
#include "grpc/grpc_security_constants.h"
#include "grpcpp/security/auth_context.h"

namespace leasekeeper::security {

std::string PeerIdentity::ToString() const {
  if (names.empty()) return "(unauthenticated)";
  return absl::StrJoin(names, ", ");
}

PeerIdentity PeerIdentityFromAuthContext(const grpc::AuthContext* context) {
  PeerIdentity identity;
  if (context == nullptr) return identity;
  for (const grpc::string_ref& type : context->FindPropertyValues(
           GRPC_TRANSPORT_SECURITY_TYPE_PROPERTY_NAME)) {
    if (type == GRPC_SSL_TRANSPORT_SECURITY_TYPE) identity.over_tls = true;
  }
  if (!context->IsPeerAuthenticated()) return identity;
  for (const char* property :
       {GRPC_X509_CN_PROPERTY_NAME, GRPC_X509_SAN_PROPERTY_NAME}) {
    for (const grpc::string_ref& value :
         context->FindPropertyValues(property)) {
      std::string name(value.data(), value.size());
      if (name.empty()) continue;
      if (std::find(identity.names.begin(), identity.names.end(), name) ==
          identity.names.end()) {
        identity.names.push_back(std::move(name));
      }
    }
  }
  return identity;
}

}  // namespace leasekeeper::security
