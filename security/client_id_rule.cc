#include "security/client_id_rule.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace leasekeeper::security {

bool ClientIdBelongsTo(absl::string_view client_id,
                       absl::string_view identity) {
  if (identity.empty()) return false;
  if (client_id == identity) return true;
  return client_id.size() > identity.size() + 1 &&
         absl::StartsWith(client_id, identity) &&
         client_id[identity.size()] == '/';
}

absl::Status CheckClientIdBelongsTo(absl::string_view client_id,
                                    const PeerIdentity& peer) {
  if (!peer.authenticated()) {
    return absl::UnauthenticatedError(
        "a client certificate is required to act as a client");
  }
  for (const std::string& name : peer.names) {
    if (ClientIdBelongsTo(client_id, name)) return absl::OkStatus();
  }
  return absl::PermissionDeniedError(absl::StrCat(
      "client id \"", client_id, "\" does not belong to certificate identity ",
      peer.ToString(), " (use the identity itself or identity/suffix)"));
}

}  // namespace leasekeeper::security
