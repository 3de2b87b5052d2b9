// CoreOwner: the single owner of leasekeeper's core inside leasekeeperd. It
// holds the core mutex and the clock and sequences every call: under the
// mutex it brings time up to now (every due deadline at its own tick), hands
// the call to the rule it belongs to (AcquireFlow, LeaseCalls, SessionCalls,
// QueryAnswers, ...), and schedules the timer; after unlocking it performs
// the call's effects and answers once durable
// (docs/design/sessions-and-retries.md).
// Thread-safety: every public method is thread-safe. REQUIRES of every
// caller: hold no lock that a completion, a PendingAcquire or a SessionSink
// callback takes (they run after the core mutex is released).
#ifndef LEASEKEEPER_SERVER_CORE_OWNER_H_
#define LEASEKEEPER_SERVER_CORE_OWNER_H_

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/answers.h"
#include "server/clock.h"
#include "server/durable_state_machine.h"
#include "server/owner_calls.h"
#include "server/owner_clock.h"
#include "server/owner_counters.h"
#include "server/owner_effects.h"
#include "server/owner_rules.h"
#include "server/query_answers.h"
#include "server/server_config.h"
#include "server/storage_lifecycle.h"
#include "server/watch_hub.h"
#include "storage/operation_log.h"
#include "storage/server_records.h"

namespace leasekeeper::server {

// The core's configuration for a server configured so: what every replica
// of its log (cluster followers) must apply the records with.
CoreConfig CoreConfigOf(const ServerConfig& config);

class CoreOwner {
 public:
  CoreOwner(ServerConfig config, Clock& clock);
  CoreOwner(const CoreOwner&) = delete;
  CoreOwner& operator=(const CoreOwner&) = delete;
  ~CoreOwner();

  template <typename T>
  using Completion = ::leasekeeper::server::Completion<T>;
  using ForcedRelease = ::leasekeeper::server::ForcedRelease;

  // Applies an Acquire (REQUIRES: args validated by the gRPC layer).
  // `call` is completed (PendingAcquire::Complete) exactly once, as a
  // completion: with AcquireFlow::Acquire's answer at once, or, when the
  // call waits, with whatever settles its wait later (a grant, a
  // withdrawal, an abort, its timeout, a cancel, shutdown).
  void Acquire(const AcquireArgs& args, PendingAcquire* call);
  // What the gRPC side reports about the Acquire call (owner_calls.h):
  // its wait was cancelled (AcquireFlow::CancelWait), or it finished
  // (AcquireFlow::CallFinished: a lock is never granted to nobody).
  void ReportAcquireCall(const AcquireCallReport& report);

  // A lease call (owner_calls.h): LeaseCalls' Renew, Release and
  // ForceRelease, with their outcomes.
  void Lease(LeaseCall call);
  // A store mutation: a write (op::Write) or a delete (op::Delete, always
  // holder-checked). Outcomes: whether the key had a value before;
  // LimitExceeded (a write: max-keys-per-lock, max-store-bytes; a delete
  // never is); core errors (a stale token is logged): kTokenNotIssued for a
  // token never issued for the lock, kNotHolder (a delete, or a write with
  // require_held) if the client holds no live lease on it with exactly that
  // token, kStaleToken.
  void Write(const StoreMutation& mutation,
             Completion<absl::StatusOr<StoreAnswer>> done);

  // A query (owner_calls.h), answered as of the clock's now, and like a
  // mutation once every record appended when it ran is durable (its read
  // barrier), so an answer never shows what a crash could still lose.
  // Read: the value, or nullopt; with a token a fenced read
  // (op::FencedRead), applied and logged like a write; core errors. Keys:
  // a page of a lock's key names (StateMachine::Keys), no token. Inspect,
  // Status, ListLocks: QueryAnswers' pages, with their outcomes.
  // Besides, UNAVAILABLE if the log failed.
  void Query(QueryCall call);

  // A session call (owner_calls.h): SessionCalls' Open (besides
  // ShuttingDown), Keepalive and Close (answered OK also when nothing
  // changed), and a stream's end without close (nobody waits for it;
  // ignored unless `sink` carries the session).
  void Session(SessionCall call);

  // Watches: registers `sink` with the watch hub for `target` and takes
  // the snapshot of the matching locks (QueryAnswers::WatchSnapshot) in the
  // same hold of the mutex, so the watcher's first event is the first
  // change after it (every applied operation is published as it is
  // applied, OperationApplier). The caller shows the snapshot only once it
  // is durable (durability().WhenAllDurable). Answers at once: the watcher
  // must know its id before any event can wake it. Outcomes: the watcher
  // and the snapshot; the hub's refusals (limits, shutdown).
  absl::StatusOr<WatchStart> Watch(const WatchTarget& target,
                                   std::shared_ptr<WatchSink> sink);
  // The hub itself (its own mutex), for a watcher's Take and Unsubscribe
  // and for stats.
  WatchHub& watch_hub() { return watch_hub_; }

  // Processes everything due at the clock's now; returns the tick of the
  // next deadline (kMaxTick if none). For the timer thread.
  Tick RunDueTimers();

  // Opens the storage and recovers the core from it, or uses `log`
  // (StorageLifecycle::Open has the cases and outcomes). REQUIRES: called
  // once, before any other call.
  absl::StatusOr<storage::RecoveryReport> OpenStorage(
      std::unique_ptr<storage::OperationLog> log = nullptr);
  // After OpenStorage, once the clock continues from the report's
  // resume_tick: withdraws every wait recovered from the log (its call died
  // with the previous process; the client retries), puts the recovered
  // sessions (in grace until the first tick + max(session grace, restart
  // grace)) and retry-cache entries back, and waits until the withdrawals
  // are durable. Outcomes: OK, or the store's error.
  absl::Status SettleRecoveredState();
  // The log's thread-safe half, never under the core's mutex: an answer
  // that must not overtake earlier ones (WhenAllDurable), the failure
  // observer (REQUIRES: set before any call is served), the store's
  // counters, and Close for shutdown, after gRPC stopped.
  DurableStateMachine::Durability& durability() { return durability_; }

  // Stops taking waits: every parked call is withdrawn and completed with
  // ShuttingDown, every session stream ended with ShuttingDown (sessions are
  // not released), and later waiting Acquires and session opens are
  // refused. Idempotent.
  void BeginShutdown();

  // Sizes as of now, and the cumulative counts since the process started,
  // for metrics (server/server_metrics.h) and tests.
  struct Stats {
    size_t held_leases = 0;
    size_t waiters = 0;
    size_t parked_calls = 0;
    size_t sessions = 0;
    size_t retry_entries = 0;
    size_t labels = 0;
    size_t registered_clients = 0;  // the core's: holders, waiters, idle
    size_t store_bytes = 0;         // FencedStore::bytes()
    size_t store_keys = 0;          // FencedStore::key_count()
    OwnerCounters::Counts counters{};
  };
  Stats GetStats();

  // CheckOwnerConsistency over the parts; O(size); for tests.
  absl::Status CheckConsistency();

 private:
  // The shape of every call: under mu_, handles what is due by now, runs
  // `step(now, fx)` for the call's answer, and schedules the timer; after
  // unlocking, performs the effects and answers `done` once durable.
  template <typename T, typename Step>
  void Run(Step&& step, Completion<T> done) ABSL_LOCKS_EXCLUDED(mu_);
  // A query: `query(now)`, then the events it caused (lapses it retired).
  template <typename T, typename AnswerStep>
  void QueryAsOfNow(AnswerStep&& query, Completion<T> done)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The queries' answers as of `now`.
  absl::StatusOr<std::optional<std::string>> AnswerLocked(const ReadArgs& args,
                                                          Tick now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<KeysAnswer> AnswerLocked(const KeysQuery& query, Tick now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<InspectAnswer> AnswerLocked(const InspectQuery& query,
                                             Tick now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<StatusAnswer> AnswerLocked(const StatusQuery& query, Tick now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<ListLocksAnswer> AnswerLocked(const ListLocksQuery& query,
                                               Tick now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The lease calls' and the session calls' steps under mu_.
  absl::StatusOr<RenewAnswer> StepLocked(const RenewArgs& args, Tick now,
                                         OwnerEffects& fx)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<ReleaseAnswer> StepLocked(const ReleaseArgs& args, Tick now,
                                           OwnerEffects& fx)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<std::vector<ForcedRelease>> StepLocked(
      const ForceReleaseArgs& args, Tick now, OwnerEffects& fx)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<SessionOpenedAnswer> StepLocked(const OpenSessionArgs& args,
                                                 Tick now, OwnerEffects& fx)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<int> StepLocked(const KeepaliveArgs& args, Tick now,
                                 OwnerEffects& fx)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status StepLocked(const CloseSessionArgs& args, Tick now,
                          OwnerEffects& fx) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Runs an asked call's step (StepLocked) and answers it.
  template <typename Request>
  void RunAsked(Asked<Request>& asked) ABSL_LOCKS_EXCLUDED(mu_);
  void StreamEnded(const SessionStreamEnded& ended) ABSL_LOCKS_EXCLUDED(mu_);

  Tick NextDeadlineLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // When the longest-idle client is due to be forgotten (kMaxTick: none,
  // or forgetting is off).
  Tick ForgetDeadlineLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CancelWait(const AcquireWaitCancelled& cancelled)
      ABSL_LOCKS_EXCLUDED(mu_);
  void CallFinished(const AcquireCallFinished& finished)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Processes every deadline due by `now`, each at its own tick.
  void AdvanceLocked(Tick now, OwnerEffects& fx)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The longest-idle client is due at `at`: forgotten, unless a session
  // keeps it or the store refuses (then tried again one period later).
  void ForgetLocked(Tick at, Tick now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Arms the timer for the next deadline and marks the effects with the
  // position they wait for (the last record appended so far).
  void ScheduleLocked(OwnerEffects& fx) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The read-only answers as of `now` (QueryAnswers).
  QueryAnswers AnswersLocked(Tick now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Durable server state: the sessions and the answered retry-cache
  // entries, as plain data. O(sessions + retry entries).
  storage::ServerState ServerStateLocked() const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Performs effects and then answers the call, once durable. REQUIRES:
  // mu_ not held.
  void Perform(OwnerEffects& fx) ABSL_LOCKS_EXCLUDED(mu_);

  const ServerConfig config_;
  Clock& clock_;

  absl::Mutex mu_;
  OwnerClock time_ ABSL_GUARDED_BY(mu_){clock_};
  // The tick the timer thread will wake at next (kMaxTick: no deadline).
  Tick scheduled_wake_ ABSL_GUARDED_BY(mu_) = kMaxTick;
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;

  // Its own mutex (a leaf under mu_). Outlives machine_, whose log's
  // pending answers may still wake watchers.
  WatchHub watch_hub_;
  // The server's state beside the core and the rules over it; they log
  // through machine_ (declared later, used only after construction).
  OwnerRules rules_ ABSL_GUARDED_BY(mu_);

  // The core and its durable path: apply, append, snapshot. Its log is
  // opened once (OpenStorage) before any other call. Last but one member:
  // the log is destroyed (closed, pending answers run) before the rest.
  DurableStateMachine machine_ ABSL_GUARDED_BY(mu_);
  // machine_'s thread-safe half ("when durable"), used after mu_ is
  // released.
  DurableStateMachine::Durability& durability_;
  // Opens machine_'s log and keeps what it recovered until settled.
  StorageLifecycle storage_ ABSL_GUARDED_BY(mu_);
};

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_CORE_OWNER_H_
