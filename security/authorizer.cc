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
    : mode_(mode),
      policy_(policy.has_value()
                  ? std::make_shared<const Policy>(*std::move(policy))
                  : nullptr) {}

Authorizer::Authorizer(Authorizer&& other)
    : mode_(other.mode_), policy_(other.CurrentPolicy()) {}

Authorizer& Authorizer::operator=(Authorizer&& other) {
  if (this == &other) return *this;
  std::shared_ptr<const Policy> policy = other.CurrentPolicy();
  absl::MutexLock lock(&mu_);
  mode_ = other.mode_;
  policy_ = std::move(policy);
  return *this;
}

bool Authorizer::has_policy() const { return CurrentPolicy() != nullptr; }

std::shared_ptr<const Policy> Authorizer::CurrentPolicy() const {
  absl::MutexLock lock(&mu_);
  return policy_;
}

absl::Status Authorizer::ReplacePolicy(Policy policy) {
  auto replacement = std::make_shared<const Policy>(std::move(policy));
  absl::MutexLock lock(&mu_);
  if (policy_ == nullptr) {
    return absl::FailedPreconditionError(
        "no policy to replace: the server was started without --policy");
  }
  // The old policy is freed by the last check still reading it.
  policy_ = std::move(replacement);
  return absl::OkStatus();
}

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

bool Authorizer::IsAdmin(const Policy* policy, const PeerIdentity& peer) {
  if (policy == nullptr) return false;
  for (const std::string& name : peer.names) {
    if (policy->IsAdmin(name)) return true;
  }
  return false;
}

bool Authorizer::Granted(const Policy* policy, const PeerIdentity& peer,
                         absl::string_view name) {
  if (policy == nullptr) return true;
  for (const std::string& identity : peer.names) {
    if (policy->MayUseLock(identity, name)) return true;
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
  if (Granted(CurrentPolicy().get(), peer, lock)) return absl::OkStatus();
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
  const std::shared_ptr<const Policy> policy = CurrentPolicy();
  if (Granted(policy.get(), peer, lock) || IsAdmin(policy.get(), peer)) {
    return absl::OkStatus();
  }
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
  if (IsAdmin(CurrentPolicy().get(), peer)) return absl::OkStatus();
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
  const std::shared_ptr<const Policy> policy = CurrentPolicy();
  if (IsAdmin(policy.get(), peer) || Granted(policy.get(), peer, prefix)) {
    return absl::OkStatus();
  }
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
  const std::shared_ptr<const Policy> policy = CurrentPolicy();
  if (IsAdmin(policy.get(), peer)) return absl::OkStatus();
  if (policy == nullptr) {
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
