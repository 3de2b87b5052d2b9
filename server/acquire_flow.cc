#include "server/acquire_flow.h"

#include <utility>
#include <variant>

#include "server/limit_checks.h"
#include "server/server_errors.h"

namespace leasekeeper::server {
namespace {

Fingerprint AcquireFingerprint(const AcquireArgs& args) {
  return Fingerprint{.method = Fingerprint::Method::kAcquire,
                     .lock = args.lock,
                     .ttl_ms = args.ttl_ms,
                     .mode = args.mode,
                     .capacity = args.capacity};
}

}  // namespace

std::optional<AcquireCallAnswer> AcquireFlow::Acquire(const AcquireArgs& args,
                                                      PendingAcquire* call,
                                                      bool shutting_down,
                                                      Tick now,
                                                      OwnerEffects& fx) {
  if (shutting_down && args.wait_timeout_ms > 0) {
    return AcquireCallAnswer{ShuttingDown()};
  }
  if (absl::Status s = p_.sessions.Check(args.session_id, args.client);
      !s.ok()) {
    return AcquireCallAnswer{std::move(s)};
  }
  const bool retriable = !args.request_id.empty();
  if (retriable) {
    const ParkedCalls::Call* parked =
        p_.parked.Find(ParkedCalls::Key(args.client, args.lock));
    RetryGate::Admitted<absl::StatusOr<AcquireAnswer>> admitted =
        p_.retries.Admit<absl::StatusOr<AcquireAnswer>>(
            args.client, args.request_id, AcquireFingerprint(args), now,
            /*first_call_waits=*/parked != nullptr &&
                parked->request_id == args.request_id);
    switch (admitted.kind) {
      case RetryAdmission::kReused:
        return AcquireCallAnswer{RequestIdReused("request_id")};
      case RetryAdmission::kReplay:
        return AcquireCallAnswer{*std::move(admitted.first), /*tracked=*/true};
      case RetryAdmission::kInFlight:
        return TakeOverWait(args, call, now, fx);
      case RetryAdmission::kNew:
        break;
    }
  }

  // The limits, checked before anything changes. The ttl is checked
  // first (as the core would) so that its error keeps precedence.
  if (args.ttl_ms >= 1 && args.ttl_ms <= kMaxTtlMs) {
    if (absl::Status s = CheckLimits(args, now); !s.ok()) {
      return AcquireCallAnswer{std::move(s)};
    }
  }

  if (retriable) {
    p_.retries.Begin(args.client, args.request_id, AcquireFingerprint(args));
  }
  std::optional<absl::StatusOr<AcquireAnswer>> result =
      Apply(args, call, now, fx);
  // Parked: the retry-cache entry stays pending until the call completes.
  if (!result.has_value()) return std::nullopt;
  const bool tracked =
      retriable &&
      p_.retries.Answer(args.client, args.request_id, *result, now);
  return AcquireCallAnswer{*std::move(result), tracked};
}

absl::Status AcquireFlow::CheckLimits(const AcquireArgs& args, Tick now) const {
  const LimitChecks checks(p_.limits);
  // The core's queue is the count: a second count here would cost a map
  // entry per waiter.
  if (absl::Status s =
          checks.Waiters(p_.machine.table().QueueLength(args.lock));
      !s.ok()) {
    return s;
  }
  // The caller advanced to `now` already: nothing lapses here. (An empty
  // client, refused by validation, holds nothing.)
  const absl::StatusOr<ClientView> view = p_.machine.Status(now, args.client);
  return view.ok() ? checks.LocksHeld(view->holds.size()) : absl::OkStatus();
}

std::optional<AcquireCallAnswer> AcquireFlow::TakeOverWait(
    const AcquireArgs& args, PendingAcquire* call, Tick now, OwnerEffects& fx) {
  const ParkedCalls::Key key(args.client, args.lock);
  // The first call still waits (its client probably lost the connection).
  if (args.wait_timeout_ms > 0) {
    fx.completions.emplace_back(
        p_.parked.Supersede(key, call, now + args.wait_timeout_ms),
        AcquireCallAnswer{SupersededByRetry()});
    return std::nullopt;
  }
  // A retry that no longer waits: the request stays queued and the retry
  // learns its position.
  fx.completions.emplace_back(p_.parked.Finish(key)->call,
                              AcquireCallAnswer{SupersededByRetry()});
  AcquireAnswer answer;
  answer.kind = AcquireAnswer::Kind::kQueued;
  absl::StatusOr<LockView> view = p_.machine.Inspect(now, args.lock);
  if (view.ok()) {
    for (size_t i = 0; i < view->queue.size(); ++i) {
      if (view->queue[i].client == args.client) {
        answer.position = static_cast<int64_t>(i) + 1;
      }
    }
  }
  const bool tracked =
      p_.retries.Answer(args.client, args.request_id, answer, now);
  return AcquireCallAnswer{std::move(answer), tracked};
}

std::optional<absl::StatusOr<AcquireAnswer>> AcquireFlow::Apply(
    const AcquireArgs& args, PendingAcquire* call, Tick now, OwnerEffects& fx) {
  absl::StatusOr<Reply> applied = p_.applier.Apply(Operation{
      now, op::Acquire{args.client, args.lock, p_.clock.CoreTtl(args.ttl_ms),
                       args.mode, args.capacity}});
  if (!applied.ok()) {
    p_.digest.DigestPending(now, fx);
    return applied.status();
  }
  AcquireOutcome& outcome = std::get<AcquireOutcome>(*applied);
  p_.digest.DigestPending(now, outcome.aborted, fx);
  if (!outcome.aborted.empty() && ShouldLog(LogEvent::kDeadlockVictims)) {
    fx.logs.push_back(LogRecord{.event = LogEvent::kDeadlockVictims,
                                .client = args.client,
                                .lock = args.lock,
                                .victims = outcome.aborted});
  }
  AcquireAnswer answer;
  switch (outcome.kind) {
    case AcquireOutcome::Kind::kGranted:
      SetLabel(args);
      answer.kind = AcquireAnswer::Kind::kGranted;
      answer.token = outcome.token;
      answer.ttl_ms = p_.clock.SureLeft(outcome.expires_at, now);
      break;
    case AcquireOutcome::Kind::kQueued:
      SetLabel(args);
      if (args.wait_timeout_ms > 0) {
        p_.parked.Park(ParkedCalls::Key(args.client, args.lock), call,
                       args.request_id, now, now + args.wait_timeout_ms);
        return std::nullopt;
      }
      answer.kind = AcquireAnswer::Kind::kQueued;
      answer.position = outcome.position;
      break;
    case AcquireOutcome::Kind::kDeadlock:
      return DeadlockVictim(std::move(outcome.aborted));
  }
  answer.aborted = std::move(outcome.aborted);
  return answer;
}

void AcquireFlow::SetLabel(const AcquireArgs& args) {
  p_.labels.Set(ParkedCalls::Key(args.client, args.lock), args.label);
}

bool AcquireFlow::Withdraw(const std::string& client, const std::string& lock,
                           Tick at) {
  absl::StatusOr<Reply> withdrawn =
      p_.applier.Apply(Operation{at, op::Withdraw{client, lock}});
  if (!withdrawn.ok() || !std::get<bool>(*withdrawn)) return false;
  p_.labels.erase(ParkedCalls::Key(client, lock));
  return true;
}

void AcquireFlow::CancelWait(const std::string& client, const std::string& lock,
                             PendingAcquire* call, Tick now, OwnerEffects& fx) {
  const ParkedCalls::Key key(client, lock);
  const ParkedCalls::Call* parked = p_.parked.Find(key);
  if (parked == nullptr || parked->call != call) return;
  (void)Withdraw(client, lock, now);
  p_.digest.DigestPending(now, fx);
  if (ShouldLog(LogEvent::kWaitCancelled)) {
    fx.logs.push_back(LogRecord{
        .event = LogEvent::kWaitCancelled, .client = client, .lock = lock});
  }
  p_.digest.FinishParked(key, WaitCancelled(), /*cache=*/false, now, fx);
}

void AcquireFlow::CallFinished(const AcquireArgs& args,
                               const AcquireCallAnswer& reply, bool cancelled,
                               Tick now, OwnerEffects& fx) {
  const bool undo = reply.tracked
                        ? p_.retries.CallFinished(args.client, args.request_id,
                                                  cancelled, now)
                        : cancelled;
  if (!undo || !reply.result.ok()) return;
  const AcquireAnswer& answer = *reply.result;
  if (answer.kind == AcquireAnswer::Kind::kGranted) {
    // Release only the very lease this answer granted.
    bool still_held = false;
    absl::StatusOr<ClientView> view = p_.machine.Status(now, args.client);
    if (view.ok()) {
      for (const HolderView& hold : view->holds) {
        if (hold.lock == args.lock && hold.token == answer.token) {
          still_held = true;
        }
      }
    }
    if (still_held) {
      (void)p_.applier.Apply(
          Operation{now, op::Release{args.client, args.lock}});
      p_.labels.erase(ParkedCalls::Key(args.client, args.lock));
      if (ShouldLog(LogEvent::kUndeliveredGrantReleased)) {
        fx.logs.push_back(
            LogRecord{.event = LogEvent::kUndeliveredGrantReleased,
                      .client = args.client,
                      .lock = args.lock,
                      .token = answer.token});
      }
    }
  } else if (answer.kind == AcquireAnswer::Kind::kQueued) {
    if (Withdraw(args.client, args.lock, now) &&
        ShouldLog(LogEvent::kWaitCancelled)) {
      fx.logs.push_back(LogRecord{.event = LogEvent::kWaitCancelled,
                                  .client = args.client,
                                  .lock = args.lock});
    }
  }
  p_.digest.DigestPending(now, fx);
}

void AcquireFlow::TimeOut(const ParkedCalls::Key& key, Tick at, Tick now,
                          OwnerEffects& fx) {
  (void)Withdraw(key.first, key.second, at);
  p_.digest.DigestPending(now, fx);
  if (ShouldLog(LogEvent::kWaitTimedOut)) {
    fx.logs.push_back(LogRecord{.event = LogEvent::kWaitTimedOut,
                                .client = key.first,
                                .lock = key.second});
  }
  p_.digest.FinishParked(key, WaitTimedOut(), /*cache=*/true, now, fx);
}

void AcquireFlow::WithdrawAll(Tick now, OwnerEffects& fx) {
  for (const ParkedCalls::Key& key : p_.parked.Keys()) {
    (void)Withdraw(key.first, key.second, now);
    p_.digest.FinishParked(key, ShuttingDown(), /*cache=*/false, now, fx);
  }
  p_.digest.DigestPending(now, fx);
}

}  // namespace leasekeeper::server
