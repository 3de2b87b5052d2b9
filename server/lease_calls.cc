#include "server/lease_calls.h"

#include <utility>
#include <variant>

#include "core/errors.h"
#include "server/server_errors.h"

namespace leasekeeper::server {

template <typename Answer, typename Args, typename Apply>
absl::StatusOr<Answer> LeaseCalls::Retriable(const Args& args,
                                             const Fingerprint& fingerprint,
                                             Tick now, Apply apply) {
  if (absl::Status s = p_.sessions.Check(args.session_id, args.client);
      !s.ok()) {
    return s;
  }
  if (args.request_id.empty()) return apply();
  RetryGate::Admitted<absl::StatusOr<Answer>> admitted =
      p_.retries.Admit<absl::StatusOr<Answer>>(args.client, args.request_id,
                                               fingerprint, now,
                                               /*first_call_waits=*/false);
  if (admitted.kind != RetryAdmission::kNew) {
    return std::move(admitted.first).value_or(RequestIdReused("request_id"));
  }
  p_.retries.Begin(args.client, args.request_id, fingerprint);
  absl::StatusOr<Answer> result = apply();
  p_.retries.Answer(args.client, args.request_id, result, now);
  return result;
}

absl::StatusOr<RenewAnswer> LeaseCalls::Renew(const RenewArgs& args, Tick now,
                                              OwnerEffects& fx) {
  return Retriable<RenewAnswer>(
      args,
      Fingerprint{.method = Fingerprint::Method::kRenew,
                  .lock = args.lock,
                  .ttl_ms = args.ttl_ms},
      now, [&] { return ApplyRenew(args, now, fx); });
}

absl::StatusOr<ReleaseAnswer> LeaseCalls::Release(const ReleaseArgs& args,
                                                  Tick now, OwnerEffects& fx) {
  return Retriable<ReleaseAnswer>(
      args,
      Fingerprint{.method = Fingerprint::Method::kRelease, .lock = args.lock},
      now, [&] { return ApplyRelease(args, now, fx); });
}

absl::StatusOr<RenewAnswer> LeaseCalls::ApplyRenew(const RenewArgs& args,
                                                   Tick now, OwnerEffects& fx) {
  absl::StatusOr<Reply> applied = p_.applier.Apply(Operation{
      now, op::Renew{args.client, args.lock, p_.clock.CoreTtl(args.ttl_ms)}});
  p_.digest.DigestPending(now, fx);
  if (!applied.ok()) return applied.status();
  const RenewOutcome& renewed = std::get<RenewOutcome>(*applied);
  return RenewAnswer{.token = renewed.token,
                     .ttl_ms = p_.clock.SureLeft(renewed.expires_at, now)};
}

absl::StatusOr<ReleaseAnswer> LeaseCalls::ApplyRelease(const ReleaseArgs& args,
                                                       Tick now,
                                                       OwnerEffects& fx) {
  absl::StatusOr<Reply> applied =
      p_.applier.Apply(Operation{now, op::Release{args.client, args.lock}});
  if (!applied.ok()) {
    p_.digest.DigestPending(now, fx);
    return applied.status();
  }
  const ReleaseAnswer outcome = std::get<ReleaseOutcome>(*applied);
  const ParkedCalls::Key key(args.client, args.lock);
  p_.labels.erase(key);
  if (outcome == ReleaseAnswer::kWithdrawn && p_.parked.contains(key)) {
    AcquireAnswer answer;
    answer.kind = AcquireAnswer::Kind::kWithdrawn;
    answer.withdraw_cause = WithdrawCause::kReleasedByClient;
    p_.digest.FinishParked(key, std::move(answer), /*cache=*/true, now, fx);
  }
  p_.digest.DigestPending(now, fx);
  return outcome;
}

absl::StatusOr<std::vector<ForcedRelease>> LeaseCalls::ForceRelease(
    const std::string& lock, const std::string& client, Tick now,
    OwnerEffects& fx) {
  absl::StatusOr<LockView> view = p_.machine.Inspect(now, lock);
  p_.digest.DigestPending(now, fx);
  if (!view.ok()) return view.status();
  std::vector<ForcedRelease> released;
  p_.applier.set_forced_release(true);
  // The holders as they are now, lowest token first: a waiter granted by
  // one of these releases is not released in turn.
  for (const HolderView& holder : view->holders) {
    if (!client.empty() && holder.client != client) continue;
    absl::StatusOr<ReleaseAnswer> outcome = ApplyRelease(
        ReleaseArgs{.client = holder.client, .lock = lock}, now, fx);
    if (outcome.ok() && *outcome == ReleaseAnswer::kReleased) {
      released.push_back(ForcedRelease{
          .client = holder.client, .token = holder.token, .mode = holder.mode});
    }
  }
  p_.applier.set_forced_release(false);
  if (released.empty()) return NoHolder(lock, client);
  p_.counters.CountForcedReleases(released.size());
  return released;
}

}  // namespace leasekeeper::server
