#include "server/core_owner.h"

#include <algorithm>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>

#include "core/errors.h"
#include "server/limit_checks.h"
#include "server/owner_consistency.h"
#include "server/server_errors.h"
#include "spdlog/spdlog.h"

namespace leasekeeper::server {

CoreOwner::CoreOwner(ServerConfig config, Clock& clock)
    : config_(std::move(config)),
      clock_(clock),
      watch_hub_(WatchHub::Options{
          .max_watchers = config_.limits.max_watchers,
          .max_prefix_watchers = config_.limits.max_prefix_watchers,
          .buffer_events = config_.limits.watch_buffer_events}),
      rules_(config_, machine_, time_, watch_hub_),
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

Tick CoreOwner::ForgetDeadlineLocked() const {
  const std::optional<LockTable::IdleClient> oldest =
      machine_.table().OldestIdleClient();
  if (!oldest.has_value()) return kMaxTick;
  // The index holds only past instants; kMaxTick bounds both terms.
  return std::min(kMaxTick,
                  oldest->since + config_.forget_idle_clients_after_ms);
}

QueryAnswers CoreOwner::AnswersLocked(Tick now) {
  return QueryAnswers(machine_, rules_.labels, rules_.sessions.table(), now,
                      time_.rounding());
}

Tick CoreOwner::NextDeadlineLocked() const {
  Tick next = machine_.table().NextExpiry().value_or(kMaxTick);
  next = std::min(next, rules_.parked.NextDeadline());
  next = std::min(next, ForgetDeadlineLocked());
  next = std::min(next, machine_.NextClockRecord());
  return std::min(next, rules_.sessions.table().NextDeadline());
}

void CoreOwner::AdvanceLocked(Tick now, OwnerEffects& fx) {
  while (true) {
    const Tick lapse_at = machine_.table().NextExpiry().value_or(kMaxTick);
    const Tick wait_at = rules_.parked.NextDeadline();
    const Tick grace_at = rules_.sessions.table().NextDeadline();
    const Tick forget_at = ForgetDeadlineLocked();
    const Tick next = std::min({lapse_at, wait_at, grace_at, forget_at});
    if (next > now || next >= kMaxTick) return;

    if (lapse_at == next) {
      // Retires every lease ending at `next`, handing each lock on at that
      // instant.
      (void)rules_.applier.Apply(Operation{next, op::Advance{}});
      rules_.digest.DigestPending(now, fx);
    } else if (wait_at == next) {
      const ParkedCalls::Key key = *rules_.parked.NextDue(next);
      rules_.acquires.TimeOut(key, next, now, fx);
    } else if (grace_at != next) {
      ForgetLocked(next, now);
    } else {
      const std::string session_id =
          rules_.sessions.table().NextDue(next)->second;
      rules_.session_calls.GraceEnded(session_id, next, now, fx);
    }
  }
}

void CoreOwner::ForgetLocked(Tick at, Tick now) {
  // A session keeps its client (its idle time restarts when the session
  // ends); so does a store that refuses the operation.
  const std::string client(machine_.table().OldestIdleClient()->client);
  bool forgotten = false;
  if (rules_.sessions.table().SessionOf(client) == nullptr) {
    absl::StatusOr<Reply> reply =
        rules_.applier.Apply(Operation{at, op::Forget{client}});
    forgotten = reply.ok() && std::get<bool>(*reply);
  }
  if (!forgotten) machine_.RestartIdleClock(client, now);
}

void CoreOwner::ScheduleLocked(OwnerEffects& fx) {
  fx.position = machine_.last_position();
  const Tick next = NextDeadlineLocked();
  if (next < scheduled_wake_) {
    scheduled_wake_ = next;
    fx.wake_timer = true;
  }
}

storage::ServerState CoreOwner::ServerStateLocked() const {
  storage::ServerState state;
  rules_.sessions.SaveTo(state);
  rules_.retries.SaveTo(state);
  rules_.labels.SaveTo(state);
  return state;
}

void CoreOwner::Perform(OwnerEffects& fx) {
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
  durability_.WhenDurable(position, [this, position, fx = std::move(fx)](
                                        absl::Status durable) mutable {
    if (!durable.ok()) watch_hub_.EndAll(durable);
    fx.Perform(durable);
    if (durable.ok()) watch_hub_.MarkDurable(position);
  });
}

namespace {

// Whether an answer is an UNAVAILABLE refusal.
template <typename T>
bool IsUnavailableAnswer(const absl::StatusOr<T>& answer) {
  return absl::IsUnavailable(answer.status());
}
bool IsUnavailableAnswer(const absl::Status& answer) {
  return absl::IsUnavailable(answer);
}

// A mutation the log refused before it was applied (a full disk) changed
// nothing and tells nothing of the state, so it is answered at once rather
// than behind the records waiting for room.
bool RefusedBeforeApplying(bool unavailable, storage::LogPosition before,
                           storage::LogPosition after,
                           const DurableStateMachine::Durability& durability) {
  return unavailable && after == before && !durability.AdmitsMutations().ok();
}

}  // namespace

template <typename T, typename Step>
void CoreOwner::Run(Step&& step, Completion<T> done) {
  OwnerEffects fx;
  {
    absl::MutexLock lock(&mu_);
    const Tick now = time_.Read();
    AdvanceLocked(now, fx);
    const storage::LogPosition before = machine_.last_position();
    T answer = step(now, fx);
    const bool refused_before_applying =
        RefusedBeforeApplying(IsUnavailableAnswer(answer), before,
                              machine_.last_position(), durability_);
    fx.SetAnswer<T>(std::move(answer), std::move(done));
    ScheduleLocked(fx);
    if (refused_before_applying) fx.position = 0;
  }
  Perform(fx);
}

template <typename T, typename AnswerStep>
void CoreOwner::QueryAsOfNow(AnswerStep&& query, Completion<T> done) {
  Run<T>(
      [&](Tick now, OwnerEffects& fx) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> T {
        T result = query(now);
        rules_.digest.DigestPending(now, fx);
        return result;
      },
      std::move(done));
}

// ---------------------------------------------------------------------------
// Storage.

absl::StatusOr<storage::RecoveryReport> CoreOwner::OpenStorage(
    std::unique_ptr<storage::OperationLog> log) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<storage::RecoveryReport> report =
      storage_.Open(std::move(log));
  if (report.ok()) time_.ContinueFrom(machine_.table().now());
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
      const Tick now = time_.Read();
      for (op::Withdraw& withdrawal : withdrawals) {
        (void)rules_.applier.Apply(Operation{now, std::move(withdrawal)});
      }
    }
    // Nobody waits for the events of recovery and of these withdrawals.
    (void)machine_.TakeEvents();
    // Before the timer thread starts (LeasekeeperServer::Start), so its
    // first RunDueTimers sees the restored sessions' grace deadlines.
    storage::ServerState recovered = storage_.TakeRecoveredServerState();
    rules_.sessions.Restore(recovered.sessions, time_.Read());
    unreadable = rules_.retries.Restore(std::move(recovered.retries));
    const LockTable& table = machine_.table();
    rules_.labels.Restore(std::move(recovered.labels),
                          [&table](const HolderLabels::Key& key) {
                            std::optional<absl::string_view> awaited =
                                table.WaitingFor(key.first);
                            return (awaited.has_value() &&
                                    *awaited == key.second) ||
                                   table.LeaseOf(key.first, key.second)
                                       .has_value();
                          });
    settled = machine_.last_position();
  }
  if (unreadable > 0) {
    spdlog::warn("event=retry_entries_unreadable count={}", unreadable);
  }
  return durability_.WaitDurable(settled);
}

Tick CoreOwner::RunDueTimers() {
  OwnerEffects fx;
  Tick next;
  {
    absl::MutexLock lock(&mu_);
    const Tick now = time_.Read();
    AdvanceLocked(now, fx);
    // The clock into the log while a lease is held (cluster mode), so that
    // a new leader continues from a recent tick.
    if (machine_.NextClockRecord() <= now) {
      (void)rules_.applier.Apply(Operation{now, op::Advance{}});
    }
    next = NextDeadlineLocked();
    scheduled_wake_ = next;
    fx.position = machine_.last_position();
  }
  Perform(fx);
  return next;
}

// ---------------------------------------------------------------------------
// Acquire.

void CoreOwner::Acquire(const AcquireArgs& args, PendingAcquire* call) {
  OwnerEffects fx;
  {
    absl::MutexLock lock(&mu_);
    const Tick now = time_.Read();
    AdvanceLocked(now, fx);
    // nullopt: parked, completed later through fx.completions of another
    // call (or of a later step of this one).
    const storage::LogPosition before = machine_.last_position();
    std::optional<AcquireCallAnswer> reply =
        rules_.acquires.Acquire(args, call, shutting_down_, now, fx);
    const bool refused_before_applying =
        reply.has_value() &&
        RefusedBeforeApplying(IsUnavailableAnswer(reply->result), before,
                              machine_.last_position(), durability_);
    if (reply.has_value()) {
      fx.answer = [call,
                   reply = *std::move(reply)](absl::Status durable) mutable {
        if (!durable.ok()) reply.result = std::move(durable);
        call->Complete(std::move(reply));
      };
    }
    ScheduleLocked(fx);
    if (refused_before_applying) fx.position = 0;
  }
  Perform(fx);
}

void CoreOwner::ReportAcquireCall(const AcquireCallReport& report) {
  if (const auto* cancelled = std::get_if<AcquireWaitCancelled>(&report)) {
    CancelWait(*cancelled);
  } else {
    CallFinished(std::get<AcquireCallFinished>(report));
  }
}

void CoreOwner::CancelWait(const AcquireWaitCancelled& cancelled) {
  OwnerEffects fx;
  {
    absl::MutexLock guard(&mu_);
    const ParkedCalls::Call* parked =
        rules_.parked.Find(ParkedCalls::Key(cancelled.client, cancelled.lock));
    if (parked == nullptr || parked->call != cancelled.call) return;
    const Tick now = time_.Read();
    AdvanceLocked(now, fx);
    // Advancing may have answered the call already (a grant due by now).
    rules_.acquires.CancelWait(cancelled.client, cancelled.lock, cancelled.call,
                               now, fx);
    ScheduleLocked(fx);
  }
  Perform(fx);
}

void CoreOwner::CallFinished(const AcquireCallFinished& finished) {
  // Only a tracked answer needs bookkeeping, and only an undelivered grant
  // or queued request needs undoing.
  if (!finished.reply.tracked &&
      (!finished.cancelled || !finished.reply.result.ok())) {
    return;
  }
  OwnerEffects fx;
  {
    absl::MutexLock lock(&mu_);
    const Tick now = time_.Read();
    AdvanceLocked(now, fx);
    rules_.acquires.CallFinished(finished.args, finished.reply,
                                 finished.cancelled, now, fx);
    ScheduleLocked(fx);
  }
  Perform(fx);
}

// ---------------------------------------------------------------------------
// Renew, Release, Write.

template <typename Request>
void CoreOwner::RunAsked(Asked<Request>& asked) {
  Run<typename Asked<Request>::Result>(
      [&](Tick now, OwnerEffects& fx) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return StepLocked(asked.request, now, fx);
      },
      std::move(asked.done));
}

void CoreOwner::Lease(LeaseCall call) {
  std::visit([this](auto& asked) { RunAsked(asked); }, call);
}

absl::StatusOr<RenewAnswer> CoreOwner::StepLocked(const RenewArgs& args,
                                                  Tick now, OwnerEffects& fx) {
  return rules_.leases.Renew(args, now, fx);
}

absl::StatusOr<ReleaseAnswer> CoreOwner::StepLocked(const ReleaseArgs& args,
                                                    Tick now,
                                                    OwnerEffects& fx) {
  return rules_.leases.Release(args, now, fx);
}

absl::StatusOr<std::vector<ForcedRelease>> CoreOwner::StepLocked(
    const ForceReleaseArgs& args, Tick now, OwnerEffects& fx) {
  return rules_.leases.ForceRelease(args.lock, args.client, now, fx);
}

namespace {

// The core operation of a store mutation at `now`, with the limit check a
// write needs first (a delete never grows the store).
struct StoreStep {
  absl::Status limits;
  Operation op;
};

StoreStep StoreStepOf(const StoreMutation& mutation, const Limits& limits,
                      const FencedStore& store, Tick now) {
  if (const auto* d = std::get_if<DeleteArgs>(&mutation)) {
    return {absl::OkStatus(), Operation{now, op::Delete{.lock = d->lock,
                                                        .key = d->key,
                                                        .token = d->token,
                                                        .client = d->client}}};
  }
  const WriteArgs& w = std::get<WriteArgs>(mutation);
  // Every daemon write refuses tokens never issued for the lock; the holder
  // check only when asked. The replay leaves both off (rule 6).
  return {LimitChecks(limits).StoreWrite(store, w.lock, w.key, w.value),
          Operation{now, op::Write{.lock = w.lock,
                                   .key = w.key,
                                   .value = w.value,
                                   .token = w.token,
                                   .refuse_unissued = true,
                                   .require_held = w.require_held,
                                   .client = w.require_held ? w.client
                                                            : std::string()}}};
}

}  // namespace

void CoreOwner::Write(const StoreMutation& mutation,
                      Completion<absl::StatusOr<StoreAnswer>> done) {
  Run<absl::StatusOr<StoreAnswer>>(
      [&](Tick now, OwnerEffects& fx) ABSL_EXCLUSIVE_LOCKS_REQUIRED(
          mu_) -> absl::StatusOr<StoreAnswer> {
        const auto [lock, key, token] = std::visit(
            [](const auto& m) { return std::tie(m.lock, m.key, m.token); },
            mutation);
        const bool existed = machine_.store().Contains(lock, key);
        StoreStep step =
            StoreStepOf(mutation, config_.limits, machine_.store(), now);
        absl::Status result = step.limits;
        if (result.ok()) {
          result = rules_.applier.Apply(std::move(step.op)).status();
        }
        rules_.digest.DigestPending(now, fx);
        if (ErrorCodeOf(result) == ErrorCode::kStaleToken &&
            ShouldLog(LogEvent::kStaleWriteRefused)) {
          fx.logs.push_back(
              LogRecord{.event = LogEvent::kStaleWriteRefused,
                        .lock = lock,
                        .key = key,
                        .token = token,
                        .high_water = machine_.store().HighWater(lock)});
        }
        if (!result.ok()) return result;
        return StoreAnswer{.existed = existed};
      },
      std::move(done));
}

// ---------------------------------------------------------------------------
// Queries and watches.

void CoreOwner::Query(QueryCall call) {
  std::visit(
      [this](auto& asked) {
        using Result = typename std::decay_t<decltype(asked)>::Result;
        QueryAsOfNow<Result>(
            [&](Tick now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
              return AnswerLocked(asked.request, now);
            },
            std::move(asked.done));
      },
      call);
}

absl::StatusOr<std::optional<std::string>> CoreOwner::AnswerLocked(
    const ReadArgs& args, Tick now) {
  if (args.token == 0) return machine_.Read(now, args.lock, args.key);
  // A fenced read raises the lock's high-water mark: an operation, logged,
  // so the answer waits for its record too.
  absl::StatusOr<Reply> applied = rules_.applier.Apply(
      Operation{now, op::FencedRead{args.lock, args.key, args.token}});
  if (!applied.ok()) return applied.status();
  return std::get<ReadOutcome>(*applied).value;
}

absl::StatusOr<KeysAnswer> CoreOwner::AnswerLocked(const KeysQuery& query,
                                                   Tick now) {
  absl::StatusOr<KeyPage> page =
      machine_.Keys(now, query.lock, query.after, query.limit);
  if (!page.ok()) return page.status();
  KeysAnswer answer{.keys = std::move(page->keys)};
  if (page->more) answer.next_after = answer.keys.back();
  return answer;
}

absl::StatusOr<InspectAnswer> CoreOwner::AnswerLocked(const InspectQuery& query,
                                                      Tick now) {
  return AnswersLocked(now).Inspect(query.lock, query.from, query.limit);
}

absl::StatusOr<StatusAnswer> CoreOwner::AnswerLocked(const StatusQuery& query,
                                                     Tick now) {
  return AnswersLocked(now).Status(query.client, query.after, query.limit);
}

absl::StatusOr<ListLocksAnswer> CoreOwner::AnswerLocked(
    const ListLocksQuery& query, Tick now) {
  return AnswersLocked(now).ListLocks(query.prefix, query.after, query.limit);
}

absl::StatusOr<WatchStart> CoreOwner::Watch(const WatchTarget& target,
                                            std::shared_ptr<WatchSink> sink) {
  OwnerEffects fx;
  absl::StatusOr<WatchStart> result;
  {
    absl::MutexLock guard(&mu_);
    const Tick now = time_.Read();
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

void CoreOwner::Session(SessionCall call) {
  if (auto* ended = std::get_if<SessionStreamEnded>(&call)) {
    StreamEnded(*ended);
    return;
  }
  std::visit(
      [this](auto& asked) {
        if constexpr (!std::is_same_v<std::decay_t<decltype(asked)>,
                                      SessionStreamEnded>) {
          RunAsked(asked);
        }
      },
      call);
}

absl::StatusOr<SessionOpenedAnswer> CoreOwner::StepLocked(
    const OpenSessionArgs& args, Tick now, OwnerEffects& fx) {
  if (shutting_down_) return ShuttingDown();
  return rules_.session_calls.Open(args.client, args.resume_id, args.sink, now,
                                   fx);
}

absl::StatusOr<int> CoreOwner::StepLocked(const KeepaliveArgs& args, Tick now,
                                          OwnerEffects& fx) {
  return rules_.session_calls.Keepalive(args.session_id, args.sink, now, fx);
}

absl::Status CoreOwner::StepLocked(const CloseSessionArgs& args, Tick now,
                                   OwnerEffects& fx) {
  // Advancing may have ended the session already (its grace ran out), so
  // the check comes after it.
  rules_.session_calls.Close(args.session_id, args.sink, now, fx);
  return absl::OkStatus();
}

void CoreOwner::StreamEnded(const SessionStreamEnded& ended) {
  OwnerEffects fx;
  {
    absl::MutexLock lock(&mu_);
    if (!rules_.sessions.table().IsCarriedBy(ended.session_id, ended.sink))
      return;
    const Tick now = time_.Read();
    AdvanceLocked(now, fx);
    // An attached session has no grace to run out, so advancing left it.
    rules_.session_calls.StreamLost(ended.session_id, now, fx);
    ScheduleLocked(fx);
  }
  Perform(fx);
}

// ---------------------------------------------------------------------------
// Shutdown and introspection.

void CoreOwner::BeginShutdown() {
  OwnerEffects fx;
  {
    absl::MutexLock lock(&mu_);
    if (shutting_down_) return;
    shutting_down_ = true;
    const Tick now = time_.Read();
    AdvanceLocked(now, fx);
    rules_.acquires.WithdrawAll(now, fx);
    // No grace deadlines: a stopping server releases nothing.
    for (std::shared_ptr<SessionSink>& stream : rules_.sessions.DetachAll()) {
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
               .parked_calls = rules_.parked.size(),
               .sessions = rules_.sessions.table().size(),
               .retry_entries = rules_.retries.size(),
               .labels = rules_.labels.size(),
               .registered_clients = machine_.table().registered_client_count(),
               .store_bytes = machine_.store().bytes(),
               .store_keys = machine_.store().key_count(),
               .counters = rules_.counters.counts()};
}

absl::Status CoreOwner::CheckConsistency() {
  absl::MutexLock lock(&mu_);
  return CheckOwnerConsistency(machine_.table(), rules_.parked, rules_.labels,
                               watch_hub_, rules_.sessions.table(),
                               /*detached_all=*/shutting_down_);
}

}  // namespace leasekeeper::server
