#include "security/authorizer.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "security/client_id_rule.h"

namespace leasekeeper::security {

Authorizer Authorizer::Open() { return Authorizer(Mode::kOpen, std::nullopt); }

Authorizer Authorizer::ServerTls() {
  return Authorizer(Mode::kServerTls, std::nullopt);
}

Authorizer Authorizer::MutualTls(std::optional<Policy> policy) {
  return Authorizer(Mode::kMutualTls, std::move(policy));
}

Authorizer::Authorizer(Mode mode, std::optional<Policy> policy)
    : mode_(mode), policy_(std::move(policy)) {}

absl::Status Authorizer::CheckTransport(const PeerIdentity& peer,
                                        bool* done) const {
  *done = mode_ == Mode::kOpen;
  if (mode_ == Mode::kOpen) return absl::OkStatus();
  if (!peer.over_tls) {
    return absl::UnauthenticatedError(
        "this port is plaintext and serves health checks only: call the TLS "
        "port");
  }
  *done = mode_ == Mode::kServerTls;
  if (mode_ == Mode::kServerTls || peer.authenticated()) {
    return absl::OkStatus();
  }
  return absl::UnauthenticatedError(
      "mutual TLS is required: connect with a client certificate");
}

absl::Status Authorizer::CheckTransportOnly(const PeerIdentity& peer) const {
  bool done = false;
  return CheckTransport(peer, &done);
}

bool Authorizer::IsAdmin(const PeerIdentity& peer) const {
  if (!policy_.has_value()) return false;
  for (const std::string& name : peer.names) {
    if (policy_->IsAdmin(name)) return true;
  }
  return false;
}

bool Authorizer::Granted(const PeerIdentity& peer,
                         absl::string_view name) const {
  if (!policy_.has_value()) return true;
  for (const std::string& identity : peer.names) {
    if (policy_->MayUseLock(identity, name)) return true;
  }
  return false;
}

absl::Status Authorizer::CheckActAs(const PeerIdentity& peer,
                                    absl::string_view client_id) const {
  bool done = false;
  if (absl::Status status = CheckTransport(peer, &done); !status.ok() || done) {
    return status;
  }
  return CheckClientIdBelongsTo(client_id, peer);
}

absl::Status Authorizer::CheckUseLock(const PeerIdentity& peer,
                                      absl::string_view lock) const {
  bool done = false;
  if (absl::Status status = CheckTransport(peer, &done); !status.ok() || done) {
    return status;
  }
  if (Granted(peer, lock)) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat("identity ", peer.ToString(),
                                                  " is not granted lock \"",
                                                  lock, "\" by the policy"));
}

absl::Status Authorizer::CheckObserveLock(const PeerIdentity& peer,
                                          absl::string_view lock) const {
  bool done = false;
  if (absl::Status status = CheckTransport(peer, &done); !status.ok() || done) {
    return status;
  }
  if (Granted(peer, lock) || IsAdmin(peer)) return absl::OkStatus();
  return absl::PermissionDeniedError(
      absl::StrCat("identity ", peer.ToString(), " may not inspect lock \"",
                   lock, "\": neither granted by the policy nor an admin"));
}

absl::Status Authorizer::CheckObserveClient(const PeerIdentity& peer,
                                            absl::string_view client_id) const {
  bool done = false;
  if (absl::Status status = CheckTransport(peer, &done); !status.ok() || done) {
    return status;
  }
  if (CheckClientIdBelongsTo(client_id, peer).ok()) return absl::OkStatus();
  if (IsAdmin(peer)) return absl::OkStatus();
  return absl::PermissionDeniedError(
      absl::StrCat("identity ", peer.ToString(), " may not see client \"",
                   client_id, "\": not its own client id and not an admin"));
}

absl::Status Authorizer::CheckListLocks(const PeerIdentity& peer,
                                        absl::string_view prefix) const {
  bool done = false;
  if (absl::Status status = CheckTransport(peer, &done); !status.ok() || done) {
    return status;
  }
  if (IsAdmin(peer) || Granted(peer, prefix)) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat(
      "identity ", peer.ToString(), " may not list locks with prefix \"",
      prefix, "\": only admins, or identities granted a prefix of it"));
}

absl::Status Authorizer::CheckAdmin(const PeerIdentity& peer,
                                    absl::string_view operation) const {
  bool done = false;
  if (absl::Status status = CheckTransport(peer, &done); !status.ok() || done) {
    return status;
  }
  if (IsAdmin(peer)) return absl::OkStatus();
  if (!policy_.has_value()) {
    return absl::PermissionDeniedError(
        absl::StrCat(operation,
                     " needs an admin identity, and there is none: start "
                     "leasekeeperd with --policy marking one"));
  }
  return absl::PermissionDeniedError(
      absl::StrCat(operation, " needs an admin identity; ", peer.ToString(),
                   " is not marked admin in the policy"));
}

}  // namespace leasekeeper::security
