#include "server/core_owner.h"

#include <algorithm>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/errors.h"
#include "server/limit_checks.h"
#include "server/server_errors.h"
#include "spdlog/spdlog.h"

namespace leasekeeper::server {
namespace {

const std::vector<std::string>& NoVictims() {
  static const auto* const kNone = new std::vector<std::string>();
  return *kNone;
}

Fingerprint AcquireFingerprint(const AcquireArgs& args) {
  return Fingerprint{.method = Fingerprint::Method::kAcquire,
                     .lock = args.lock,
                     .ttl_ms = args.ttl_ms,
                     .mode = args.mode,
                     .capacity = args.capacity};
}

}  // namespace

struct CoreOwner::Effects {
  std::vector<std::pair<PendingAcquire*, AcquireCallAnswer>> completions;
  std::vector<std::pair<std::shared_ptr<SessionSink>, SessionNotice>> notices;
  std::vector<std::pair<std::shared_ptr<SessionSink>, absl::Status>>
      stream_ends;
  std::vector<LogRecord> logs;
  bool wake_timer = false;
  // The call's own answer, given the durability outcome; run last.
  absl::AnyInvocable<void(absl::Status) &&> answer;
  // What all of the above waits for: the last record appended by the end
  // of the call (ScheduleLocked).
  storage::LogPosition position = 0;

  bool empty() const {
    return completions.empty() && notices.empty() && stream_ends.empty() &&
           logs.empty() && !answer;
  }
};

namespace {

// Sets the call's answer: `result`, or the durability failure instead.
template <typename T>
void SetAnswer(T result, CoreOwner::Completion<T> done,
               absl::AnyInvocable<void(absl::Status) &&>& answer) {
  answer = [result = std::move(result),
            done = std::move(done)](absl::Status durable) mutable {
    if (!durable.ok()) result = std::move(durable);
    std::move(done)(std::move(result));
  };
}

}  // namespace

CoreOwner::CoreOwner(ServerConfig config, Clock& clock)
    : config_(std::move(config)),
      clock_(clock),
      labels_(machine_),
      sessions_(
          SessionLifecycle::Options{
              .grace_ms = config_.session_grace_ms,
              .restart_grace_ms = config_.durability.restart_grace_ms},
          config_.limits, machine_),
      retries_(config_.retry_cache, machine_),
      watch_hub_(WatchHub::Options{
          .max_watchers = config_.limits.max_watchers,
          .max_prefix_watchers = config_.limits.max_prefix_watchers,
          .buffer_events = config_.limits.watch_buffer_events}),
      // The snapshot source runs inside machine_.Apply and Log, which run
      // under mu_.
      machine_(CoreConfigOf(config_),
               [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
                 return ServerStateLocked();
               }),
      durability_(machine_.durability()),
      storage_(config_.durability, machine_) {}

CoreOwner::~CoreOwner() = default;

CoreConfig CoreConfigOf(const ServerConfig& config) {
  return CoreConfig{
      .max_ttl = kMaxTtlMs + kGrantRoundingTicks,
      .track_idle_clients = config.forget_idle_clients_after_ms > 0};
}

// ---------------------------------------------------------------------------
// Time and effects.

Tick CoreOwner::NowLocked() {
  const Clock::Reading reading = clock_.Read();
  // A reading behind the latest tick (threads take the mutex in any order)
  // is applied later than it happened: no rounding needed then.
  now_inside_tick_ = reading.inside && reading.tick >= last_tick_;
  last_tick_ = std::max(last_tick_, reading.tick);
  return last_tick_;
}

Tick CoreOwner::ForgetDeadlineLocked() const {
  const std::optional<LockTable::IdleClient> oldest =
      machine_.table().OldestIdleClient();
  if (!oldest.has_value()) return kMaxTick;
  // The index holds only past instants; kMaxTick bounds both terms.
  return std::min(kMaxTick,
                  oldest->since + config_.forget_idle_clients_after_ms);
}

int64_t CoreOwner::CoreTtlLocked(int64_t ttl_ms) const {
  if (ttl_ms < 1 || ttl_ms > kMaxTtlMs || !now_inside_tick_) return ttl_ms;
  return ttl_ms + kGrantRoundingTicks;
}

int64_t CoreOwner::SureLeftLocked(Tick expires_at, Tick now) const {
  return SureLeftMs(expires_at, now,
                    now_inside_tick_ ? kGrantRoundingTicks : 0);
}

QueryAnswers CoreOwner::AnswersLocked(Tick now) {
  return QueryAnswers(machine_, labels_, sessions_.table(), now,
                      now_inside_tick_ ? kGrantRoundingTicks : 0);
}

Tick CoreOwner::NextDeadlineLocked() const {
  Tick next = machine_.table().NextExpiry().value_or(kMaxTick);
  next = std::min(next, parked_.NextDeadline());
  next = std::min(next, ForgetDeadlineLocked());
  return std::min(next, sessions_.table().NextDeadline());
}

void CoreOwner::AdvanceLocked(Tick now, Effects& fx) {
  while (true) {
    const Tick lapse_at = machine_.table().NextExpiry().value_or(kMaxTick);
    const Tick wait_at = parked_.NextDeadline();
    const Tick grace_at = sessions_.table().NextDeadline();
    const Tick forget_at = ForgetDeadlineLocked();
    const Tick next = std::min({lapse_at, wait_at, grace_at, forget_at});
    if (next > now || next >= kMaxTick) return;

    if (lapse_at == next) {
      // Retires every lease ending at `next`, handing each lock on at that
      // instant.
      (void)ApplyLocked(Operation{next, op::Advance{}});
      DigestEventsLocked(now, NoVictims(), fx);
    } else if (wait_at == next) {
      const WaiterKey key = *parked_.NextDue(next);
      absl::StatusOr<Reply> withdrawn =
          ApplyLocked(Operation{next, op::Withdraw{key.first, key.second}});
      if (withdrawn.ok() && std::get<bool>(*withdrawn)) {
        labels_.erase(key);
      }
      DigestEventsLocked(now, NoVictims(), fx);
      if (ShouldLog(LogEvent::kWaitTimedOut)) {
        fx.logs.push_back(LogRecord{.event = LogEvent::kWaitTimedOut,
                                    .client = key.first,
                                    .lock = key.second});
      }
      FinishParkedLocked(key, WaitTimedOut(), /*cache=*/true, now, fx);
    } else if (grace_at != next) {
      // forget_at == next: the longest-idle client has been idle long
      // enough. A session keeps it (its idle time restarts when the session
      // ends); so does a store that refuses the operation (tried again one
      // period later).
      const std::string client(machine_.table().OldestIdleClient()->client);
      bool forgotten = false;
      if (sessions_.table().SessionOf(client) == nullptr) {
        absl::StatusOr<Reply> reply =
            ApplyLocked(Operation{next, op::Forget{client}});
        forgotten = reply.ok() && std::get<bool>(*reply);
      }
      if (!forgotten) machine_.RestartIdleClock(client, now);
    } else {
      const std::string session_id = sessions_.table().NextDue(next)->second;
      const std::string client = sessions_.table().Find(session_id)->client;
      const int released =
          EndSessionLocked(session_id, next, now, std::nullopt, fx);
      counters_.CountSessionLost();
      if (ShouldLog(LogEvent::kReleasedBySessionLoss)) {
        fx.logs.push_back(LogRecord{.event = LogEvent::kReleasedBySessionLoss,
                                    .client = client,
                                    .session = session_id,
                                    .count = released});
      }
    }
  }
}

void CoreOwner::ScheduleLocked(Effects& fx) {
  fx.position = machine_.last_position();
  const Tick next = NextDeadlineLocked();
  if (next < scheduled_wake_) {
    scheduled_wake_ = next;
    fx.wake_timer = true;
  }
}

absl::StatusOr<Reply> CoreOwner::ApplyLocked(Operation op) {
  // A failed log refuses the operation before it reaches the core (a
  // refusal counts nothing); the passage of time still applies, and its
  // effects are never acknowledged (their completions get UNAVAILABLE).
  const WatchPublisher::Scope watch =
      watch_publisher_.Begin(op, machine_.table());
  const storage::LogPosition before = machine_.last_position();
  absl::StatusOr<Reply> reply = machine_.Apply(op);
  counters_.CountApplied(op, reply);
  const storage::LogPosition after = machine_.last_position();
  // An accepted operation whose record the log could not take is never
  // told (the log has failed; Perform ends the watches).
  if (reply.ok() && machine_.persistent() && after == before) return reply;
  // Published at the position of its record (a refusal appended nothing:
  // its events are the passage of time's, as of the records before it).
  // Ticks are the server's monotonic clock; the wall-clock rendering is
  // for humans, as Inspect's expires_at.
  watch_publisher_.Publish(
      watch, op, reply, machine_.table().pending_events(),
      WatchPublisher::Moment{
          .now = last_tick_,
          .inside_tick = now_inside_tick_,
          .wall = watch.watched ? absl::Now() : absl::Time()},
      after);
  return reply;
}

storage::ServerState CoreOwner::ServerStateLocked() const {
  storage::ServerState state;
  sessions_.SaveTo(state);
  retries_.SaveTo(state);
  labels_.SaveTo(state);
  return state;
}

void CoreOwner::Perform(Effects& fx) {
  if (fx.wake_timer) clock_.Interrupt();
  fx.wake_timer = false;
  // Watchers with published events wait for them to be durable, even after
  // a call with nothing else to perform.
  if (fx.empty() && !watch_hub_.AwaitsDurable()) return;
  // Inline when durable already (no store, --fsync never): a waiter's grant
  // is then sent by the thread that caused it, as the caller's own answer
  // is, not handed to the flusher thread (a wake-up and a context switch on
  // the path of every hand-over).
  const storage::LogPosition position = fx.position;
  durability_.WhenDurable(
      position,
      [this, position, fx = std::move(fx)](absl::Status durable) mutable {
        if (!durable.ok()) {
          // Nothing not durable is told: waiting calls fail, notices are
          // dropped, streams still end.
          for (auto& [call, reply] : fx.completions) {
            reply = AcquireCallAnswer{durable};
          }
          fx.notices.clear();
          watch_hub_.EndAll(durable);
        }
        PerformNow(fx, durable);
        if (durable.ok()) watch_hub_.MarkDurable(position);
      });
}

void CoreOwner::PerformNow(Effects& fx, const absl::Status& durable) {
  // Answers first: they are what waiting clients measure.
  for (auto& [call, reply] : fx.completions) call->Complete(std::move(reply));
  for (auto& [sink, notice] : fx.notices) sink->Notify(notice);
  for (auto& [sink, status] : fx.stream_ends) sink->End(status);
  for (const LogRecord& record : fx.logs) WriteLog(record);
  // Last, as when the gRPC layer sent it after the effects.
  if (fx.answer) std::move(fx.answer)(durable);
}

absl::StatusOr<storage::RecoveryReport> CoreOwner::OpenStorage(
    std::unique_ptr<storage::OperationLog> log) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<storage::RecoveryReport> report =
      storage_.Open(std::move(log));
  if (report.ok()) last_tick_ = std::max(last_tick_, machine_.table().now());
  return report;
}

absl::Status CoreOwner::SettleRecoveredState() {
  storage::LogPosition settled = 0;
  size_t unreadable = 0;
  {
    absl::MutexLock lock(&mu_);
    if (!machine_.persistent()) return absl::OkStatus();
    std::vector<op::Withdraw> withdrawals = storage_.RecoveredWaitWithdrawals();
    if (!withdrawals.empty()) {
      const Tick now = NowLocked();
      for (op::Withdraw& withdrawal : withdrawals) {
        (void)ApplyLocked(Operation{now, std::move(withdrawal)});
      }
    }
    // Nobody waits for the events of recovery and of these withdrawals.
    (void)machine_.TakeEvents();
    // Before the timer thread starts (LeasekeeperServer::Start), so its
    // first RunDueTimers sees the restored sessions' grace deadlines.
    storage::ServerState recovered = storage_.TakeRecoveredServerState();
    sessions_.Restore(recovered.sessions, NowLocked());
    unreadable = retries_.Restore(std::move(recovered.retries));
    const LockTable& table = machine_.table();
    labels_.Restore(std::move(recovered.labels),
                    [&table](const HolderLabels::Key& key) {
                      std::optional<absl::string_view> awaited =
                          table.WaitingFor(key.first);
                      return (awaited.has_value() && *awaited == key.second) ||
                             table.LeaseOf(key.first, key.second).has_value();
                    });
    settled = machine_.last_position();
  }
  if (unreadable > 0) {
    spdlog::warn("event=retry_entries_unreadable count={}", unreadable);
  }
  return durability_.WaitDurable(settled);
}

Tick CoreOwner::RunDueTimers() {
  Effects fx;
  Tick next;
  {
    absl::MutexLock lock(&mu_);
    AdvanceLocked(NowLocked(), fx);
    next = NextDeadlineLocked();
    scheduled_wake_ = next;
    fx.position = machine_.last_position();
  }
  Perform(fx);
  return next;
}

// ---------------------------------------------------------------------------
// Events.

void CoreOwner::DigestEventsLocked(Tick now,
                                   const std::vector<std::string>& victims,
                                   Effects& fx) {
  for (Event& e : machine_.TakeEvents()) {
    counters_.CountEvent(e);
    const WaiterKey key(e.client, e.lock);
    // Whatever ended, its label goes with it (a grant keeps the wait's).
    if (e.kind != Event::Kind::kGrantedFromQueue) labels_.erase(key);
    switch (e.kind) {
      case Event::Kind::kLapsed:
        if (ShouldLog(LogEvent::kLapsed)) {
          fx.logs.push_back(LogRecord{.event = LogEvent::kLapsed,
                                      .client = e.client,
                                      .lock = e.lock,
                                      .token = e.token});
        }
        NotifyLocked(e.client,
                     SessionNotice{.kind = SessionNotice::Kind::kLeaseLapsed,
                                   .lock = e.lock,
                                   .token = e.token},
                     fx);
        break;
      case Event::Kind::kGrantedFromQueue:
        OnGrantedFromQueueLocked(e, now, fx);
        break;
      case Event::Kind::kAbortedWaiter:
        if (parked_.contains(key)) {
          FinishParkedLocked(key, DeadlockVictim(victims), /*cache=*/true, now,
                             fx);
        }
        NotifyLocked(
            e.client,
            SessionNotice{.kind = SessionNotice::Kind::kAbortedDeadlockVictim,
                          .lock = e.lock},
            fx);
        break;
      case Event::Kind::kAbortedHolder:
        NotifyLocked(
            e.client,
            SessionNotice{.kind = SessionNotice::Kind::kAbortedDeadlockVictim,
                          .lock = e.lock,
                          .token = e.token},
            fx);
        break;
      case Event::Kind::kReleasedByOwner:
        break;
      case Event::Kind::kWithdrawnByOwner:
        if (parked_.contains(key)) {
          AcquireAnswer answer;
          answer.kind = AcquireAnswer::Kind::kWithdrawn;
          answer.withdraw_cause = WithdrawCause::kSessionEnded;
          FinishParkedLocked(key, std::move(answer), /*cache=*/true, now, fx);
        }
        break;
    }
  }
}

void CoreOwner::OnGrantedFromQueueLocked(const Event& e, Tick now,
                                         Effects& fx) {
  const int64_t ttl_left = SureLeftLocked(e.expires_at, now);
  const WaiterKey key(e.client, e.lock);
  int64_t waited = 0;
  if (const ParkedCalls::Call* parked = parked_.Find(key)) {
    waited = std::max<int64_t>(0, e.at - parked->queued_at);
    counters_.CountAcquireWait(waited);
    AcquireAnswer answer;
    answer.kind = AcquireAnswer::Kind::kGranted;
    answer.token = e.token;
    answer.ttl_ms = ttl_left;
    answer.waited_ms = waited;
    FinishParkedLocked(key, std::move(answer), /*cache=*/true, now, fx);
  }
  if (ShouldLog(LogEvent::kGrantedFromQueue)) {
    fx.logs.push_back(LogRecord{.event = LogEvent::kGrantedFromQueue,
                                .client = e.client,
                                .lock = e.lock,
                                .token = e.token,
                                .lease_ms = e.expires_at - e.at,
                                .waited_ms = waited});
  }
  NotifyLocked(e.client,
               SessionNotice{.kind = SessionNotice::Kind::kGrantedFromQueue,
                             .lock = e.lock,
                             .token = e.token,
                             .ttl_ms = ttl_left},
               fx);
}

void CoreOwner::FinishParkedLocked(const WaiterKey& key,
                                   absl::StatusOr<AcquireAnswer> result,
                                   bool cache, Tick now, Effects& fx) {
  std::optional<ParkedCalls::Call> finished = parked_.Finish(key);
  if (!finished.has_value()) return;
  ParkedCalls::Call& parked = *finished;
  bool tracked = false;
  if (!parked.request_id.empty()) {
    if (cache) {
      tracked = retries_.Answer(key.first, parked.request_id, result, now);
    } else {
      retries_.Forget(key.first, parked.request_id, now);
    }
  }
  fx.completions.emplace_back(parked.call,
                              AcquireCallAnswer{std::move(result), tracked});
}

void CoreOwner::NotifyLocked(const std::string& client, SessionNotice notice,
                             Effects& fx) {
  std::shared_ptr<SessionSink> sink = sessions_.table().SinkOf(client);
  if (sink != nullptr) fx.notices.emplace_back(std::move(sink), std::move(notice));
}

void CoreOwner::SetLabelLocked(const std::string& client,
                               const std::string& lock,
                               const std::string& label) {
  labels_.Set(WaiterKey(client, lock), label);
}

// ---------------------------------------------------------------------------
// Acquire.

void CoreOwner::Acquire(const AcquireArgs& args, PendingAcquire* call) {
  Effects fx;
  {
    absl::MutexLock lock(&mu_);
    const Tick now = NowLocked();
    AdvanceLocked(now, fx);
    // nullopt: parked, completed later through fx.completions of another
    // call (or of a later step of this one).
    std::optional<AcquireCallAnswer> reply = AcquireLocked(args, call, now, fx);
    if (reply.has_value()) {
      fx.answer = [call,
                   reply = *std::move(reply)](absl::Status durable) mutable {
        if (!durable.ok()) reply.result = std::move(durable);
        call->Complete(std::move(reply));
      };
    }
    ScheduleLocked(fx);
  }
  Perform(fx);
}

std::optional<AcquireCallAnswer> CoreOwner::AcquireLocked(
    const AcquireArgs& args, PendingAcquire* call, Tick now, Effects& fx) {
  if (shutting_down_ && args.wait_timeout_ms > 0) {
    return AcquireCallAnswer{ShuttingDown()};
  }
  if (absl::Status s = sessions_.Check(args.session_id, args.client);
      !s.ok()) {
    return AcquireCallAnswer{std::move(s)};
  }
  const bool retriable = !args.request_id.empty();
  if (retriable) {
    const ParkedCalls::Call* parked =
        parked_.Find(WaiterKey(args.client, args.lock));
    RetryGate::Admitted<absl::StatusOr<AcquireAnswer>> admitted =
        retries_.Admit<absl::StatusOr<AcquireAnswer>>(
            args.client, args.request_id, AcquireFingerprint(args), now,
            /*first_call_waits=*/parked != nullptr &&
                parked->request_id == args.request_id);
    switch (admitted.kind) {
      case RetryAdmission::kReused:
        return AcquireCallAnswer{RequestIdReused("request_id")};
      case RetryAdmission::kReplay:
        return AcquireCallAnswer{*std::move(admitted.first), /*tracked=*/true};
      case RetryAdmission::kInFlight:
        return TakeOverWaitLocked(args, call, now, fx);
      case RetryAdmission::kNew:
        break;
    }
  }

  // The limits, checked before anything changes. The ttl is checked
  // first (as the core would) so that its error keeps precedence.
  if (args.ttl_ms >= 1 && args.ttl_ms <= kMaxTtlMs) {
    if (absl::Status s = AcquireLimitsLocked(args, now); !s.ok()) {
      return AcquireCallAnswer{std::move(s)};
    }
  }

  if (retriable) {
    retries_.Begin(args.client, args.request_id, AcquireFingerprint(args));
  }
  std::optional<absl::StatusOr<AcquireAnswer>> result =
      ApplyAcquireLocked(args, call, now, fx);
  // Parked: the retry-cache entry stays pending until the call completes.
  if (!result.has_value()) return std::nullopt;
  const bool tracked =
      retriable && retries_.Answer(args.client, args.request_id, *result, now);
  return AcquireCallAnswer{*std::move(result), tracked};
}

absl::Status CoreOwner::AcquireLimitsLocked(const AcquireArgs& args,
                                            Tick now) {
  const LimitChecks checks(config_.limits);
  // The core's queue is the count: a second count here would cost a map
  // entry per waiter.
  if (absl::Status s = checks.Waiters(machine_.table().QueueLength(args.lock));
      !s.ok()) {
    return s;
  }
  // The caller advanced to `now` already: nothing lapses here. (An empty
  // client, refused by validation, holds nothing.)
  const absl::StatusOr<ClientView> view = machine_.Status(now, args.client);
  return view.ok() ? checks.LocksHeld(view->holds.size()) : absl::OkStatus();
}

std::optional<AcquireCallAnswer> CoreOwner::TakeOverWaitLocked(
    const AcquireArgs& args, PendingAcquire* call, Tick now, Effects& fx) {
  const WaiterKey key(args.client, args.lock);
  // The first call still waits (its client probably lost the connection).
  if (args.wait_timeout_ms > 0) {
    fx.completions.emplace_back(
        parked_.Supersede(key, call, now + args.wait_timeout_ms),
        AcquireCallAnswer{SupersededByRetry()});
    return std::nullopt;
  }
  // A retry that no longer waits: the request stays queued and the retry
  // learns its position.
  fx.completions.emplace_back(parked_.Finish(key)->call,
                              AcquireCallAnswer{SupersededByRetry()});
  AcquireAnswer answer;
  answer.kind = AcquireAnswer::Kind::kQueued;
  absl::StatusOr<LockView> view = machine_.Inspect(now, args.lock);
  if (view.ok()) {
    for (size_t i = 0; i < view->queue.size(); ++i) {
      if (view->queue[i].client == args.client) {
        answer.position = static_cast<int64_t>(i) + 1;
      }
    }
  }
  const bool tracked =
      retries_.Answer(args.client, args.request_id, answer, now);
  return AcquireCallAnswer{std::move(answer), tracked};
}

std::optional<absl::StatusOr<AcquireAnswer>> CoreOwner::ApplyAcquireLocked(
    const AcquireArgs& args, PendingAcquire* call, Tick now, Effects& fx) {
  absl::StatusOr<Reply> applied = ApplyLocked(
      Operation{now, op::Acquire{args.client, args.lock,
                                 CoreTtlLocked(args.ttl_ms), args.mode,
                                 args.capacity}});
  if (!applied.ok()) {
    DigestEventsLocked(now, NoVictims(), fx);
    return applied.status();
  }
  AcquireOutcome& outcome = std::get<AcquireOutcome>(*applied);
  DigestEventsLocked(now, outcome.aborted, fx);
  if (!outcome.aborted.empty() && ShouldLog(LogEvent::kDeadlockVictims)) {
    fx.logs.push_back(LogRecord{.event = LogEvent::kDeadlockVictims,
                                .client = args.client,
                                .lock = args.lock,
                                .victims = outcome.aborted});
  }
  AcquireAnswer answer;
  switch (outcome.kind) {
    case AcquireOutcome::Kind::kGranted:
      SetLabelLocked(args.client, args.lock, args.label);
      answer.kind = AcquireAnswer::Kind::kGranted;
      answer.token = outcome.token;
      answer.ttl_ms = SureLeftLocked(outcome.expires_at, now);
      break;
    case AcquireOutcome::Kind::kQueued:
      SetLabelLocked(args.client, args.lock, args.label);
      if (args.wait_timeout_ms > 0) {
        parked_.Park(WaiterKey(args.client, args.lock), call, args.request_id,
                     now, now + args.wait_timeout_ms);
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

void CoreOwner::CancelWait(const std::string& client, const std::string& lock,
                           PendingAcquire* call) {
  Effects fx;
  {
    absl::MutexLock guard(&mu_);
    const WaiterKey key(client, lock);
    const ParkedCalls::Call* parked = parked_.Find(key);
    if (parked == nullptr || parked->call != call) return;
    const Tick now = NowLocked();
    AdvanceLocked(now, fx);
    // Advancing may have answered the call already (a grant due by now).
    parked = parked_.Find(key);
    if (parked != nullptr && parked->call == call) {
      absl::StatusOr<Reply> withdrawn =
          ApplyLocked(Operation{now, op::Withdraw{client, lock}});
      if (withdrawn.ok() && std::get<bool>(*withdrawn)) {
        labels_.erase(key);
      }
      DigestEventsLocked(now, NoVictims(), fx);
      if (ShouldLog(LogEvent::kWaitCancelled)) {
        fx.logs.push_back(LogRecord{
            .event = LogEvent::kWaitCancelled, .client = client, .lock = lock});
      }
      FinishParkedLocked(key, WaitCancelled(), /*cache=*/false, now, fx);
    }
    ScheduleLocked(fx);
  }
  Perform(fx);
}

void CoreOwner::AcquireCallDone(const AcquireArgs& args,
                                const AcquireCallAnswer& reply,
                                bool cancelled) {
  // Only a tracked answer needs bookkeeping, and only an undelivered grant
  // or queued request needs undoing.
  if (!reply.tracked && (!cancelled || !reply.result.ok())) return;
  Effects fx;
  {
    absl::MutexLock lock(&mu_);
    const Tick now = NowLocked();
    AdvanceLocked(now, fx);
    const bool undo =
        reply.tracked
            ? retries_.CallFinished(args.client, args.request_id, cancelled, now)
            : cancelled;
    if (undo && reply.result.ok()) {
      const AcquireAnswer& answer = *reply.result;
      if (answer.kind == AcquireAnswer::Kind::kGranted) {
        // Release only the very lease this answer granted.
        bool still_held = false;
        absl::StatusOr<ClientView> view = machine_.Status(now, args.client);
        if (view.ok()) {
          for (const HolderView& hold : view->holds) {
            if (hold.lock == args.lock && hold.token == answer.token) {
              still_held = true;
            }
          }
        }
        if (still_held) {
          (void)ApplyLocked(
              Operation{now, op::Release{args.client, args.lock}});
          labels_.erase(WaiterKey(args.client, args.lock));
          if (ShouldLog(LogEvent::kUndeliveredGrantReleased)) {
            fx.logs.push_back(
                LogRecord{.event = LogEvent::kUndeliveredGrantReleased,
                          .client = args.client,
                          .lock = args.lock,
                          .token = answer.token});
          }
        }
      } else if (answer.kind == AcquireAnswer::Kind::kQueued) {
        absl::StatusOr<Reply> withdrawn =
            ApplyLocked(Operation{now, op::Withdraw{args.client, args.lock}});
        if (withdrawn.ok() && std::get<bool>(*withdrawn)) {
          labels_.erase(WaiterKey(args.client, args.lock));
          if (ShouldLog(LogEvent::kWaitCancelled)) {
            fx.logs.push_back(LogRecord{.event = LogEvent::kWaitCancelled,
                                        .client = args.client,
                                        .lock = args.lock});
          }
        }
      }
      DigestEventsLocked(now, NoVictims(), fx);
    }
    ScheduleLocked(fx);
  }
  Perform(fx);
}

// ---------------------------------------------------------------------------
// Renew, Release, Write and the queries.

template <typename T, typename Step>
void CoreOwner::Run(Step&& step, Completion<T> done) {
  Effects fx;
  {
    absl::MutexLock lock(&mu_);
    const Tick now = NowLocked();
    AdvanceLocked(now, fx);
    SetAnswer<T>(step(now, fx), std::move(done), fx.answer);
    ScheduleLocked(fx);
  }
  Perform(fx);
}

template <typename T, typename Query>
void CoreOwner::QueryAsOfNow(Query&& query, Completion<T> done) {
  Run<T>(
      [&](Tick now, Effects& fx) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> T {
        T result = query(now);
        DigestEventsLocked(now, NoVictims(), fx);
        return result;
      },
      std::move(done));
}

template <typename Answer, typename Args, typename Apply>
void CoreOwner::RetriableCall(const Args& args, Fingerprint fingerprint,
                              Apply apply,
                              Completion<absl::StatusOr<Answer>> done) {
  Run<absl::StatusOr<Answer>>(
      [&](Tick now, Effects& fx) ABSL_EXCLUSIVE_LOCKS_REQUIRED(
          mu_) -> absl::StatusOr<Answer> {
        if (absl::Status s = sessions_.Check(args.session_id, args.client);
            !s.ok()) {
          return s;
        }
        if (args.request_id.empty()) return apply(now, fx);
        // Renew and Release answer at once, so they are never in flight.
        RetryGate::Admitted<absl::StatusOr<Answer>> admitted =
            retries_.Admit<absl::StatusOr<Answer>>(
                args.client, args.request_id, fingerprint, now,
                /*first_call_waits=*/false);
        if (admitted.kind != RetryAdmission::kNew) {
          return std::move(admitted.first)
              .value_or(RequestIdReused("request_id"));
        }
        retries_.Begin(args.client, args.request_id, fingerprint);
        absl::StatusOr<Answer> result = apply(now, fx);
        retries_.Answer(args.client, args.request_id, result, now);
        return result;
      },
      std::move(done));
}

void CoreOwner::Renew(const RenewArgs& args,
                      Completion<absl::StatusOr<RenewAnswer>> done) {
  RetriableCall<RenewAnswer>(
      args,
      Fingerprint{.method = Fingerprint::Method::kRenew,
                  .lock = args.lock,
                  .ttl_ms = args.ttl_ms},
      [&](Tick now, Effects& fx)
          ABSL_NO_THREAD_SAFETY_ANALYSIS { return RenewLocked(args, now, fx); },
      std::move(done));
}

absl::StatusOr<RenewAnswer> CoreOwner::RenewLocked(const RenewArgs& args,
                                                   Tick now, Effects& fx) {
  absl::StatusOr<Reply> applied = ApplyLocked(Operation{
      now, op::Renew{args.client, args.lock, CoreTtlLocked(args.ttl_ms)}});
  DigestEventsLocked(now, NoVictims(), fx);
  if (!applied.ok()) return applied.status();
  const RenewOutcome& renewed = std::get<RenewOutcome>(*applied);
  return RenewAnswer{.token = renewed.token,
                     .ttl_ms = SureLeftLocked(renewed.expires_at, now)};
}

void CoreOwner::Release(const ReleaseArgs& args,
                        Completion<absl::StatusOr<ReleaseAnswer>> done) {
  RetriableCall<ReleaseAnswer>(
      args,
      Fingerprint{.method = Fingerprint::Method::kRelease, .lock = args.lock},
      [&](Tick now, Effects& fx) ABSL_NO_THREAD_SAFETY_ANALYSIS {
        return ReleaseLocked(args, now, fx);
      },
      std::move(done));
}

absl::StatusOr<ReleaseAnswer> CoreOwner::ReleaseLocked(const ReleaseArgs& args,
                                                       Tick now, Effects& fx) {
  absl::StatusOr<Reply> applied =
      ApplyLocked(Operation{now, op::Release{args.client, args.lock}});
  if (!applied.ok()) {
    DigestEventsLocked(now, NoVictims(), fx);
    return applied.status();
  }
  const ReleaseAnswer outcome = std::get<ReleaseOutcome>(*applied);
  const WaiterKey key(args.client, args.lock);
  labels_.erase(key);
  if (outcome == ReleaseAnswer::kWithdrawn) {
    if (parked_.contains(key)) {
      AcquireAnswer answer;
      answer.kind = AcquireAnswer::Kind::kWithdrawn;
      answer.withdraw_cause = WithdrawCause::kReleasedByClient;
      FinishParkedLocked(key, std::move(answer), /*cache=*/true, now, fx);
    }
  }
  DigestEventsLocked(now, NoVictims(), fx);
  return outcome;
}

void CoreOwner::Write(const WriteArgs& args, Completion<absl::Status> done) {
  Run<absl::Status>(
      [&](Tick now, Effects& fx) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        absl::Status result = LimitChecks(config_.limits)
                                  .StoreWrite(machine_.store(), args.lock,
                                              args.key, args.value);
        if (result.ok()) {
          // Every daemon write refuses tokens never issued for the lock;
          // the holder check only when asked. The replay leaves both off
          // (rule 6).
          result =
              ApplyLocked(
                  Operation{now, op::Write{.lock = args.lock,
                                           .key = args.key,
                                           .value = args.value,
                                           .token = args.token,
                                           .refuse_unissued = true,
                                           .require_held = args.require_held,
                                           .client = args.require_held
                                                         ? args.client
                                                         : std::string()}})
                  .status();
        }
        DigestEventsLocked(now, NoVictims(), fx);
        if (ErrorCodeOf(result) == ErrorCode::kStaleToken &&
            ShouldLog(LogEvent::kStaleWriteRefused)) {
          fx.logs.push_back(
              LogRecord{.event = LogEvent::kStaleWriteRefused,
                        .lock = args.lock,
                        .key = args.key,
                        .token = args.token,
                        .high_water = machine_.store().HighWater(args.lock)});
        }
        return result;
      },
      std::move(done));
}

void CoreOwner::Read(
    const ReadArgs& args,
    Completion<absl::StatusOr<std::optional<std::string>>> done) {
  QueryAsOfNow<absl::StatusOr<std::optional<std::string>>>(
      [&](Tick now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(
          mu_) -> absl::StatusOr<std::optional<std::string>> {
        if (args.token == 0) return machine_.Read(now, args.lock, args.key);
        // A fenced read raises the lock's high-water mark: an operation,
        // logged, so the answer waits for its record too.
        absl::StatusOr<Reply> applied = ApplyLocked(
            Operation{now, op::FencedRead{args.lock, args.key, args.token}});
        if (!applied.ok()) return applied.status();
        return std::get<ReadOutcome>(*applied).value;
      },
      std::move(done));
}

void CoreOwner::Inspect(const std::string& lock, const InspectCursor& from,
                        size_t limit,
                        Completion<absl::StatusOr<InspectAnswer>> done) {
  QueryAsOfNow<absl::StatusOr<InspectAnswer>>(
      [&](Tick now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return AnswersLocked(now).Inspect(lock, from, limit);
      },
      std::move(done));
}

void CoreOwner::Status(const std::string& client, const std::string& after,
                       size_t limit,
                       Completion<absl::StatusOr<StatusAnswer>> done) {
  QueryAsOfNow<absl::StatusOr<StatusAnswer>>(
      [&](Tick now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return AnswersLocked(now).Status(client, after, limit);
      },
      std::move(done));
}

void CoreOwner::ListLocks(const std::string& prefix, const std::string& after,
                          size_t limit,
                          Completion<absl::StatusOr<ListLocksAnswer>> done) {
  QueryAsOfNow<absl::StatusOr<ListLocksAnswer>>(
      [&](Tick now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(
          mu_) -> absl::StatusOr<ListLocksAnswer> {
        return AnswersLocked(now).ListLocks(prefix, after, limit);
      },
      std::move(done));
}

absl::StatusOr<WatchStart> CoreOwner::Watch(const WatchTarget& target,
                                            std::shared_ptr<WatchSink> sink) {
  Effects fx;
  absl::StatusOr<WatchStart> result;
  {
    absl::MutexLock guard(&mu_);
    const Tick now = NowLocked();
    AdvanceLocked(now, fx);
    WatchStart start;
    start.locks = AnswersLocked(now).WatchSnapshot(target);
    absl::StatusOr<WatchHub::Subscribed> subscribed =
        watch_hub_.Subscribe(target, std::move(sink));
    if (subscribed.ok()) {
      start.id = subscribed->id;
      start.sequence = subscribed->sequence;
      result = std::move(start);
    } else {
      result = subscribed.status();
    }
    ScheduleLocked(fx);
  }
  Perform(fx);
  return result;
}

// ---------------------------------------------------------------------------
// Sessions.

void CoreOwner::OpenSession(
    const std::string& client, const std::string& resume_id,
    std::shared_ptr<SessionSink> sink,
    Completion<absl::StatusOr<SessionOpenedAnswer>> done) {
  Run<absl::StatusOr<SessionOpenedAnswer>>(
      [&](Tick now, Effects& fx) ABSL_EXCLUSIVE_LOCKS_REQUIRED(
          mu_) -> absl::StatusOr<SessionOpenedAnswer> {
        if (shutting_down_) return ShuttingDown();
        if (!resume_id.empty()) {
          return ResumeSessionLocked(client, resume_id, std::move(sink), fx);
        }
        return OpenNewSessionLocked(client, std::move(sink), now, fx);
      },
      std::move(done));
}

absl::StatusOr<SessionOpenedAnswer> CoreOwner::ResumeSessionLocked(
    const std::string& client, const std::string& resume_id,
    std::shared_ptr<SessionSink> sink, Effects& fx) {
  absl::StatusOr<SessionLifecycle::Resumed> resumed =
      sessions_.Resume(client, resume_id, std::move(sink));
  if (!resumed.ok()) return resumed.status();
  if (resumed->replaced != nullptr) {
    // The old stream is still attached (its death not yet noticed).
    fx.stream_ends.emplace_back(std::move(resumed->replaced), SessionEnded());
  }
  if (ShouldLog(LogEvent::kSessionResumed)) {
    fx.logs.push_back(LogRecord{.event = LogEvent::kSessionResumed,
                                .client = client,
                                .session = resume_id});
  }
  return std::move(resumed->answer);
}

absl::StatusOr<SessionOpenedAnswer> CoreOwner::OpenNewSessionLocked(
    const std::string& client, std::shared_ptr<SessionSink> sink, Tick now,
    Effects& fx) {
  if (const std::string* previous = sessions_.table().SessionOf(client)) {
    const std::string previous_id = *previous;
    const int released =
        EndSessionLocked(previous_id, now, now, SessionEnded(), fx);
    if (ShouldLog(LogEvent::kSessionReplaced)) {
      fx.logs.push_back(LogRecord{.event = LogEvent::kSessionReplaced,
                                  .client = client,
                                  .session = previous_id,
                                  .count = released});
    }
  }
  absl::StatusOr<SessionOpenedAnswer> opened =
      sessions_.Open(client, std::move(sink), now);
  if (opened.ok() && ShouldLog(LogEvent::kSessionOpened)) {
    fx.logs.push_back(LogRecord{.event = LogEvent::kSessionOpened,
                                .client = client,
                                .session = opened->session_id});
  }
  return opened;
}

void CoreOwner::Keepalive(const std::string& session_id,
                          const SessionSink* sink,
                          Completion<absl::StatusOr<int>> done) {
  Run<absl::StatusOr<int>>(
      [&](Tick now, Effects& fx)
          ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::StatusOr<int> {
            if (!sessions_.table().IsCarriedBy(session_id, sink)) {
              return SessionEnded();
            }
            absl::StatusOr<Reply> renewed = ApplyLocked(Operation{
                now,
                op::RenewAll{sessions_.table().Find(session_id)->client}});
            DigestEventsLocked(now, NoVictims(), fx);
            return renewed.ok() ? std::get<int>(*renewed) : 0;
          },
      std::move(done));
}

void CoreOwner::CloseSession(const std::string& session_id,
                             const SessionSink* sink,
                             Completion<absl::Status> done) {
  Run<absl::Status>(
      [&](Tick now, Effects& fx) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        // Advancing may have ended the session already (its grace ran
        // out), so the check comes after it.
        if (!sessions_.table().IsCarriedBy(session_id, sink)) {
          return absl::OkStatus();
        }
        const std::string client = sessions_.table().Find(session_id)->client;
        const int released =
            EndSessionLocked(session_id, now, now, std::nullopt, fx);
        if (ShouldLog(LogEvent::kSessionClosed)) {
          fx.logs.push_back(LogRecord{.event = LogEvent::kSessionClosed,
                                      .client = client,
                                      .session = session_id,
                                      .count = released});
        }
        return absl::OkStatus();
      },
      std::move(done));
}

void CoreOwner::SessionStreamEnded(const std::string& session_id,
                                   const SessionSink* sink) {
  Effects fx;
  {
    absl::MutexLock lock(&mu_);
    if (!sessions_.table().IsCarriedBy(session_id, sink)) return;
    const Tick now = NowLocked();
    AdvanceLocked(now, fx);
    // An attached session has no grace to run out, so advancing left it.
    const std::string client = sessions_.table().Find(session_id)->client;
    if (!sessions_.StreamLost(session_id, now)) {
      const int released =
          EndSessionLocked(session_id, now, now, std::nullopt, fx);
      if (ShouldLog(LogEvent::kReleasedBySessionLoss)) {
        fx.logs.push_back(LogRecord{.event = LogEvent::kReleasedBySessionLoss,
                                    .client = client,
                                    .session = session_id,
                                    .count = released});
      }
    } else {
      if (ShouldLog(LogEvent::kSessionStreamLost)) {
        fx.logs.push_back(LogRecord{.event = LogEvent::kSessionStreamLost,
                                    .client = client,
                                    .session = session_id});
      }
    }
    ScheduleLocked(fx);
  }
  Perform(fx);
}

int CoreOwner::EndSessionLocked(const std::string& session_id, Tick at,
                                Tick now,
                                std::optional<absl::Status> stream_status,
                                Effects& fx) {
  std::optional<SessionTable::Session> ended = sessions_.End(session_id, at);
  if (!ended.has_value()) return 0;
  SessionTable::Session& session = *ended;
  absl::StatusOr<Reply> released =
      ApplyLocked(Operation{at, op::ReleaseAll{session.client}});
  // Idle from the end of its session on, not from its last lease.
  machine_.RestartIdleClock(session.client, at);
  DigestEventsLocked(now, NoVictims(), fx);
  if (session.sink != nullptr && stream_status.has_value()) {
    fx.stream_ends.emplace_back(std::move(session.sink),
                                *std::move(stream_status));
  }
  return released.ok() ? std::get<int>(*released) : 0;
}

// ---------------------------------------------------------------------------
// Shutdown and introspection.

void CoreOwner::BeginShutdown() {
  Effects fx;
  {
    absl::MutexLock lock(&mu_);
    if (shutting_down_) return;
    shutting_down_ = true;
    const Tick now = NowLocked();
    AdvanceLocked(now, fx);
    for (const WaiterKey& key : parked_.Keys()) {
      absl::StatusOr<Reply> withdrawn =
          ApplyLocked(Operation{now, op::Withdraw{key.first, key.second}});
      if (withdrawn.ok() && std::get<bool>(*withdrawn)) {
        labels_.erase(key);
      }
      FinishParkedLocked(key, ShuttingDown(), /*cache=*/false, now, fx);
    }
    DigestEventsLocked(now, NoVictims(), fx);
    // No grace deadlines: a stopping server releases nothing.
    for (std::shared_ptr<SessionSink>& stream : sessions_.DetachAll()) {
      fx.stream_ends.emplace_back(std::move(stream), ShuttingDown());
    }
    ScheduleLocked(fx);
  }
  Perform(fx);
  watch_hub_.EndAll(ShuttingDown());
}

CoreOwner::Stats CoreOwner::GetStats() {
  absl::MutexLock lock(&mu_);
  return Stats{.held_leases = machine_.table().held_lease_count(),
               .waiters = machine_.table().waiter_count(),
               .parked_calls = parked_.size(),
               .sessions = sessions_.table().size(),
               .retry_entries = retries_.size(),
               .labels = labels_.size(),
               .registered_clients = machine_.table().registered_client_count(),
               .counters = counters_.counts()};
}

absl::Status CoreOwner::CheckConsistency() {
  absl::MutexLock lock(&mu_);
  if (absl::Status s = machine_.table().CheckInvariants(); !s.ok()) return s;
  // The core's own record of whom each client waits for (nothing mirrors
  // it here).
  const LockTable& table = machine_.table();
  auto waits_for = [&table](const WaiterKey& key) {
    std::optional<absl::string_view> awaited = table.WaitingFor(key.first);
    return awaited.has_value() && *awaited == key.second;
  };
  for (const WaiterKey& key : parked_.Keys()) {
    if (!waits_for(key)) {
      return absl::InternalError(absl::StrCat(
          "parked call of ", key.first, " for ", key.second, " does not wait"));
    }
  }
  for (const auto& [key, label] : labels_) {
    // O(1) per label (not a view of the lock's every holder).
    if (!waits_for(key) && !table.LeaseOf(key.first, key.second).has_value()) {
      return absl::InternalError(absl::StrCat("label of ", key.first, " for ",
                                              key.second, " outlived its use"));
    }
  }
  if (absl::Status s = parked_.CheckInvariants(); !s.ok()) return s;
  if (absl::Status s = watch_hub_.CheckInvariants(); !s.ok()) return s;
  return sessions_.table().CheckInvariants(/*detached_all=*/shutting_down_);
}

// ---------------------------------------------------------------------------
// Operators.

void CoreOwner::ForceRelease(
    const std::string& lock, const std::string& client,
    Completion<absl::StatusOr<std::vector<ForcedRelease>>> done) {
  Run<absl::StatusOr<std::vector<ForcedRelease>>>(
      [&](Tick now, Effects& fx) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        absl::StatusOr<std::vector<ForcedRelease>> result;
        absl::StatusOr<LockView> view = machine_.Inspect(now, lock);
        DigestEventsLocked(now, {}, fx);
        if (!view.ok()) {
          result = view.status();
        } else {
          std::vector<ForcedRelease> released;
          watch_publisher_.set_forced_release(true);
          // The holders as they are now, lowest token first: a waiter granted
          // by one of these releases is not released in turn.
          for (const HolderView& holder : view->holders) {
            if (!client.empty() && holder.client != client) continue;
            absl::StatusOr<ReleaseAnswer> outcome = ReleaseLocked(
                ReleaseArgs{.client = holder.client, .lock = lock}, now, fx);
            if (outcome.ok() && *outcome == ReleaseAnswer::kReleased) {
              released.push_back(ForcedRelease{.client = holder.client,
                                               .token = holder.token,
                                               .mode = holder.mode});
            }
          }
          watch_publisher_.set_forced_release(false);
          if (released.empty()) {
            result = NoHolder(lock, client);
          } else {
            counters_.CountForcedReleases(released.size());
            result = std::move(released);
          }
        }
        return result;
      },
      std::move(done));
}

}  // namespace leasekeeper::server
