// CoreOwner: the single owner of leasekeeper's core inside leasekeeperd. It
// holds the core mutex and the clock and sequences every call through the
// rules kept beside the core (docs/design/sessions-and-retries.md).
// Thread-safety: every public method is thread-safe. REQUIRES of every
// caller: hold no lock that a completion, a PendingAcquire or a SessionSink
// callback takes (they run after the core mutex is released).
#ifndef LEASEKEEPER_SERVER_CORE_OWNER_H_
#define LEASEKEEPER_SERVER_CORE_OWNER_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_map.h"
#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "core/state_machine.h"
#include "server/answers.h"
#include "server/clock.h"
#include "server/durable_state_machine.h"
#include "server/event_log.h"
#include "server/owner_counters.h"
#include "server/parked_calls.h"
#include "server/query_answers.h"
#include "server/retry_cache.h"
#include "server/retry_gate.h"
#include "server/server_config.h"
#include "server/session_lifecycle.h"
#include "server/session_table.h"
#include "server/storage_lifecycle.h"
#include "server/watch_hub.h"
#include "server/watch_publisher.h"
#include "storage/durable_store.h"
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

  // A call's answer: called exactly once, once every record the answer may
  // reflect is durable, after the call's effects; UNAVAILABLE (with the
  // reason) if the log failed.
  template <typename T>
  using Completion = absl::AnyInvocable<void(T) &&>;

  // Applies an Acquire (REQUIRES: args validated by the gRPC layer).
  // `call` is completed (PendingAcquire::Complete) exactly once, as a
  // completion: with the grant, the queued position or
  // the error at once, or, when the call waits, with whatever settles its
  // wait later (a grant, a withdrawal, an abort, its timeout, CancelWait,
  // shutdown). Outcomes: see absl::StatusOr<AcquireAnswer>; a retry of a parked
  // request_id takes over the parked slot (the earlier call is completed with
  // SupersededByRetry).
  void Acquire(const AcquireArgs& args, PendingAcquire* call);

  // The gRPC call of a parked Acquire was cancelled (client cancel, deadline,
  // disconnect). If `call` is still parked, its request is withdrawn and the
  // call completed with WaitCancelled. Otherwise nothing happens.
  void CancelWait(const std::string& client, const std::string& lock,
                  PendingAcquire* call);

  // An Acquire call finished. `cancelled`: the transport reports that the
  // answer did not reach the client. If the answer was a grant (or a
  // queued request) that no call delivered, the grant is released (or the
  // request withdrawn) again: a lock is never granted to nobody.
  void AcquireCallDone(const AcquireArgs& args, const AcquireCallAnswer& reply,
                       bool cancelled);

  // Outcomes: the renewed lease; core errors; SessionEnded; RequestIdReused.
  void Renew(const RenewArgs& args,
             Completion<absl::StatusOr<RenewAnswer>> done);
  // Outcomes: kReleased / kWithdrawn (a parked call of the client for that
  // lock is completed as withdrawn); core errors; SessionEnded;
  // RequestIdReused.
  void Release(const ReleaseArgs& args,
               Completion<absl::StatusOr<ReleaseAnswer>> done);
  // An operator's forced release (server/core_owner_admin.cc): ends the
  // lease `client` holds on `lock`, or every lease on `lock` when `client`
  // is empty, each as one Release operation (so the log replays it). Waits,
  // sessions and the retry cache are untouched. Outcomes: the leases ended,
  // by token; NoHolder (server_errors.h) if no lease matched: nothing
  // changed.
  // Cost: O(holders of the lock).
  struct ForcedRelease {
    std::string client;
    FencingToken token = 0;
    LockMode mode = LockMode::kExclusive;
  };
  void ForceRelease(
      const std::string& lock, const std::string& client,
      Completion<absl::StatusOr<std::vector<ForcedRelease>>> done);
  // Outcomes: OK; LimitExceeded (max-keys-per-lock, max-store-bytes);
  // core errors (a stale token is logged): kTokenNotIssued
  // for a token never issued for the lock, kNotHolder (require_held) if
  // args.client holds no live lease on it with exactly args.token.
  void Write(const WriteArgs& args, Completion<absl::Status> done);

  // Queries. Each answers as of the clock's now, and like a mutation once
  // every record appended when it ran is durable (its read barrier: every
  // record the answer may reflect, a write, a grant, a lapse), so an answer
  // never shows what a crash could still lose. A read therefore shares the
  // group commit of the writes it saw and never costs an fsync of its own.
  // Read: the value, or nullopt. With a token, a fenced read
  // (op::FencedRead), applied and logged like a write. Outcomes: core
  // errors.
  void Read(const ReadArgs& args,
            Completion<absl::StatusOr<std::optional<std::string>>> done);
  // Inspect, Status and ListLocks: QueryAnswers' pages as of now, with
  // their outcomes and costs; besides, UNAVAILABLE if the log failed.
  void Inspect(const std::string& lock, const InspectCursor& from, size_t limit,
               Completion<absl::StatusOr<InspectAnswer>> done);
  void Status(const std::string& client, const std::string& after, size_t limit,
              Completion<absl::StatusOr<StatusAnswer>> done);
  void ListLocks(const std::string& prefix, const std::string& after,
                 size_t limit,
                 Completion<absl::StatusOr<ListLocksAnswer>> done);

  // Opens a session for `client`, or resumes `resume_id` (which must be a
  // session of `client` that has not ended; a stream still attached to it
  // is ended). Opening a new session ends the client's previous one at once
  // (its leases released, its wait withdrawn, its stream ended).
  // Outcomes: the session; SessionEnded (resume of an ended session);
  // InvalidField (resume of another client's session); LimitExceeded
  // (max-sessions); ShuttingDown.
  void OpenSession(const std::string& client, const std::string& resume_id,
                   std::shared_ptr<SessionSink> sink,
                   Completion<absl::StatusOr<SessionOpenedAnswer>> done);
  // Renews every lease of the session's client. Outcomes: the number
  // renewed; SessionEnded if `sink` no longer carries the session.
  void Keepalive(const std::string& session_id, const SessionSink* sink,
                 Completion<absl::StatusOr<int>> done);
  // Ends the session now (leases released, wait withdrawn); nothing
  // changes unless `sink` carries the session. Outcomes: OK (also when
  // nothing changed); UNAVAILABLE.
  void CloseSession(const std::string& session_id, const SessionSink* sink,
                    Completion<absl::Status> done);
  // The stream ended without close: the grace period starts (or the session
  // ends at once if the grace is 0). Ignored unless `sink` carries it.
  // Nobody waits for an answer: its effects follow the rules above.
  void SessionStreamEnded(const std::string& session_id,
                          const SessionSink* sink);

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
  // with the previous process; the client retries), last in line first so
  // that no withdrawal grants anything, puts the recovered sessions and
  // retry-cache entries back, and waits until the withdrawals are durable.
  // A recovered session is in grace until the first tick + max(session
  // grace, restart grace). Outcomes: OK, or the store's error.
  absl::Status SettleRecoveredState();

  // The log's thread-safe half, never under the core's mutex: an answer
  // that must not overtake earlier ones (WhenAllDurable, on the thread the
  // completions above run on), the failure observer the health service
  // turns NOT_SERVING with (REQUIRES: set before any call is served), the
  // store's counters, and Close for shutdown, after gRPC stopped.
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
    OwnerCounters::Counts counters{};
  };
  Stats GetStats();

  // Watches: registers `sink` with the watch hub (server/watch_hub.h) for
  // `target` and takes the snapshot of the matching locks
  // (QueryAnswers::WatchSnapshot) in the same hold of the mutex, so the
  // watcher's first event is the first change after it. Every change the
  // core applies is published to the hub as it is applied, with its log
  // position; watchers are woken once it is durable (Perform). The caller
  // shows the snapshot only once it is durable (durability().WhenAllDurable,
  // after Watch returned). Unlike the queries it answers at once: the
  // watcher must know its id before any event can wake it. Outcomes: the
  // watcher and the snapshot; the hub's refusals (limits, shutdown).
  absl::StatusOr<WatchStart> Watch(const WatchTarget& target,
                                   std::shared_ptr<WatchSink> sink);
  // The hub itself, for a watcher's Take and Unsubscribe and for stats.
  WatchHub& watch_hub() { return watch_hub_; }

  // Checks the server's indexes against the core, the core's own
  // invariants and the watch hub's: a parked call exists for (client, lock)
  // iff it was answered nothing yet and the core has client queued on lock;
  // every session is open or in grace; every label belongs to a lease or a
  // wait. O(size); for tests.
  absl::Status CheckConsistency();

 private:
  struct Effects;
  using WaiterKey = std::pair<std::string, std::string>;  // (client, lock)

  // The shape of every call: under mu_, handles what is due by now, runs
  // `step(now, fx)` for the call's answer, and schedules the timer; after
  // unlocking, performs the effects and answers `done` once durable.
  template <typename T, typename Step>
  void Run(Step&& step, Completion<T> done) ABSL_LOCKS_EXCLUDED(mu_);
  // A query: `query(now)`, then the events it caused (lapses it retired).
  template <typename T, typename Query>
  void QueryAsOfNow(Query&& query, Completion<T> done) ABSL_LOCKS_EXCLUDED(mu_);
  Tick NowLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Tick NextDeadlineLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // When the longest-idle client is due to be forgotten (kMaxTick: none,
  // or forgetting is off).
  Tick ForgetDeadlineLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AdvanceLocked(Tick now, Effects& fx) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Arms the timer for the next deadline and marks the effects with the
  // position they wait for (the last record appended so far).
  void ScheduleLocked(Effects& fx) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<Reply> ApplyLocked(Operation op)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Turns the core's pending events into effects. `now` is when answers are
  // produced; `victims` the abort list of the Acquire that caused them.
  void DigestEventsLocked(Tick now, const std::vector<std::string>& victims,
                          Effects& fx) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A waiter the core granted: answers its parked call, logs, notifies.
  void OnGrantedFromQueueLocked(const Event& e, Tick now, Effects& fx)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Acquire's steps; nullopt: the call is parked.
  std::optional<AcquireCallAnswer> AcquireLocked(const AcquireArgs& args,
                                                 PendingAcquire* call, Tick now,
                                                 Effects& fx)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A retry whose first call still waits takes its place.
  std::optional<AcquireCallAnswer> TakeOverWaitLocked(const AcquireArgs& args,
                                                      PendingAcquire* call,
                                                      Tick now, Effects& fx)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Applies the Acquire and turns the core's outcome into its answer.
  std::optional<absl::StatusOr<AcquireAnswer>> ApplyAcquireLocked(
      const AcquireArgs& args, PendingAcquire* call, Tick now, Effects& fx)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Renew and Release: brings time up to now, checks the session, answers
  // a retry from the retry cache or else calls apply(now, fx) (under mu_)
  // and remembers its answer, then performs the effects.
  template <typename Answer, typename Args, typename Apply>
  void RetriableCall(const Args& args, Fingerprint fingerprint, Apply apply,
                     Completion<absl::StatusOr<Answer>> done)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<RenewAnswer> RenewLocked(const RenewArgs& args, Tick now,
                                          Effects& fx)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<ReleaseAnswer> ReleaseLocked(const ReleaseArgs& args, Tick now,
                                              Effects& fx)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Removes a parked call and queues its completion with `result`, storing
  // the result as the request_id's first answer (unless `cache` is false, in
  // which case the request_id's entry is dropped).
  void FinishParkedLocked(const WaiterKey& key,
                          absl::StatusOr<AcquireAnswer> result, bool cache,
                          Tick now, Effects& fx)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends a session at `at`: releases the client's leases, withdraws its
  // wait, forgets the session. `stream_status`: end its attached stream with
  // this status (if any).
  int EndSessionLocked(const std::string& session_id, Tick at, Tick now,
                       std::optional<absl::Status> stream_status, Effects& fx)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // OpenSession's two cases.
  absl::StatusOr<SessionOpenedAnswer> ResumeSessionLocked(
      const std::string& client, const std::string& resume_id,
      std::shared_ptr<SessionSink> sink, Effects& fx)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<SessionOpenedAnswer> OpenNewSessionLocked(
      const std::string& client, std::shared_ptr<SessionSink> sink, Tick now,
      Effects& fx) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void NotifyLocked(const std::string& client, SessionNotice notice,
                    Effects& fx) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The read-only answers as of `now` (QueryAnswers).
  QueryAnswers AnswersLocked(Tick now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SetLabelLocked(const std::string& client, const std::string& lock,
                      const std::string& label)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Durable server state: server records go through
  // machine_.Log. The sessions and the answered retry-cache entries, as plain data.
  // O(sessions + retry entries).
  storage::ServerState ServerStateLocked() const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Performs effects and then answers the call, once durable (see Answers
  // above). REQUIRES: mu_ not held.
  void Perform(Effects& fx);
  void PerformNow(Effects& fx, const absl::Status& durable);

  const ServerConfig config_;
  Clock& clock_;

  absl::Mutex mu_;
  Tick last_tick_ ABSL_GUARDED_BY(mu_) = kMinTick;
  // Whether the last NowLocked reading lay inside last_tick_ (Clock::Read):
  // an Acquire or Renew applied at it gets kGrantRoundingTicks more.
  bool now_inside_tick_ ABSL_GUARDED_BY(mu_) = false;
  // The ttl the core is given for a request's `ttl_ms` at the current
  // reading (rounded up, see now_inside_tick_; out of range unchanged, for
  // the core to refuse), and what surely remains then of a lease ending at
  // `expires_at`.
  int64_t CoreTtlLocked(int64_t ttl_ms) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int64_t SureLeftLocked(Tick expires_at, Tick now) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The tick the timer thread will wake at next (kMaxTick: no deadline).
  Tick scheduled_wake_ ABSL_GUARDED_BY(mu_) = kMaxTick;
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;

  ParkedCalls parked_ ABSL_GUARDED_BY(mu_);

  // Logs through machine_, under mu_.
  HolderLabels labels_ ABSL_GUARDED_BY(mu_);

  // Logs through machine_, under mu_.
  SessionLifecycle sessions_ ABSL_GUARDED_BY(mu_);

  // Logs through machine_, under mu_.
  RetryGate retries_ ABSL_GUARDED_BY(mu_);

  // OK, or the limit an Acquire would exceed (LimitChecks: waiters on the
  // lock, leases of the client). Cost: O(leases of the client).
  absl::Status AcquireLimitsLocked(const AcquireArgs& args, Tick now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  OwnerCounters counters_ ABSL_GUARDED_BY(mu_);

  // Its own mutex (a leaf under mu_). Outlives machine_, whose log's
  // pending answers may still wake watchers.
  WatchHub watch_hub_;
  // Fed by ApplyLocked with every operation applied.
  WatchPublisher watch_publisher_ ABSL_GUARDED_BY(mu_){watch_hub_};

  // The core and its durable path: apply, append, snapshot. Its log is
  // opened once (OpenStorage) before any other call. Last but
  // one member: the log is destroyed (closed, pending answers run) before
  // the rest.
  DurableStateMachine machine_ ABSL_GUARDED_BY(mu_);
  // machine_'s thread-safe half ("when durable"), used after mu_ is
  // released.
  DurableStateMachine::Durability& durability_;
  // Opens machine_'s log and keeps what it recovered until settled.
  StorageLifecycle storage_ ABSL_GUARDED_BY(mu_);
};

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_CORE_OWNER_H_
