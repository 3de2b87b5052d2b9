// DurableStateMachine: the core's StateMachine with its durable path, the
// one place where an operation is applied, appended to the operation log in
// apply order, covered by snapshots and known to be durable
// (docs/design/server.md). Owned by CoreOwner.
// Thread-safety: the machine has no lock (its owner calls it under the
// core mutex); its Durability half is thread-safe.
#ifndef LEASEKEEPER_SERVER_DURABLE_STATE_MACHINE_H_
#define LEASEKEEPER_SERVER_DURABLE_STATE_MACHINE_H_

#include <atomic>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/state_machine.h"
#include "server/server_config.h"
#include "storage/durable_store.h"
#include "storage/operation_log.h"
#include "storage/server_records.h"

namespace leasekeeper::server {

class DurableStateMachine {
 public:
  // The server's state for a snapshot, as plain data (sessions and the
  // answered retry-cache entries). Called only from Apply and Log, so
  // under the owner's mutex.
  using ServerStateSource = absl::AnyInvocable<storage::ServerState() const>;
  using DurableCallback = absl::AnyInvocable<void(absl::Status) &&>;

  // The thread-safe half: when records become durable, and the log's
  // lifecycle after serving. REQUIRES of every caller: hold no lock that a
  // callback takes.
  class Durability {
   public:
    Durability(const Durability&) = delete;
    Durability& operator=(const Durability&) = delete;

    // Calls `done` once every record up to `position` is durable: OK, or
    // UNAVAILABLE (with the reason) if the log failed (then the failure
    // observer learns it, once). Inline when there is no log, the log
    // failed already, or the position is durable already; otherwise on the
    // thread that makes it durable (the WAL's flusher).
    void WhenDurable(storage::LogPosition position, DurableCallback done);
    // WhenDurable(last_position()): once everything appended so far is
    // durable. For an answer no call produced that must not overtake the
    // answers to earlier calls (a refused session call, a watch snapshot).
    void WhenAllDurable(DurableCallback done) {
      WhenDurable(last_position(), std::move(done));
    }
    // Blocks until `position` is durable: OK, or the log's failure. Not for
    // gRPC threads (recovery, tools, tests).
    absl::Status WaitDurable(storage::LogPosition position);
    // The position of the last record appended (0 without a log), read
    // without the owner's mutex: at least every record applied before the
    // caller's last call into the machine returned.
    storage::LogPosition last_position() const;
    // OK, or why the log failed (OK without a log).
    absl::Status health() const;
    // OK, or why the log takes no new mutation now (OperationLog's).
    absl::Status AdmitsMutations() const;
    // The local WAL's counters; nullopt unless Open opened one.
    std::optional<storage::DurableStoreStats> stats() const;
    // Writes and syncs everything appended, runs the waiting callbacks and
    // closes the log (a summary line of the WAL's group commit is logged).
    // For shutdown, once nothing applies any more. Idempotent.
    void Close();
    // Calls `observer` once, with the log's error, the first time a
    // WhenDurable finds the log failed (on that caller's thread).
    // REQUIRES: called before any call is served.
    void SetFailureObserver(
        absl::AnyInvocable<void(const absl::Status&)> observer) {
      failure_observer_ = std::move(observer);
    }

    // Calls `observer` on the log's flusher thread when a full disk stops
    // the local log (with the reason) and when it writes again (OK); the
    // log lines are written here. REQUIRES: called before Open.
    void SetSpaceObserver(
        absl::AnyInvocable<void(const absl::Status&)> observer) {
      space_observer_ = std::move(observer);
    }

   private:
    friend class DurableStateMachine;
    Durability() = default;
    void ReportFailure(const absl::Status& status);
    void ReportSpace(const absl::Status& full);
    void ReportSnapshot(const absl::Status& written);

    // Set once (Open or UseLog) before any call is served, then read-only.
    storage::OperationLog* log_ = nullptr;
    storage::DurableStore* wal_ = nullptr;
    absl::AnyInvocable<void(const absl::Status&)> failure_observer_;
    absl::AnyInvocable<void(const absl::Status&)> space_observer_;
    std::atomic<bool> failure_reported_{false};
    std::atomic<bool> snapshot_failing_{false};
  };

  DurableStateMachine(CoreConfig config, ServerStateSource server_state);
  DurableStateMachine(const DurableStateMachine&) = delete;
  DurableStateMachine& operator=(const DurableStateMachine&) = delete;

  // Opens the local WAL in durability.data_dir and recovers the state from
  // it (storage::DurableStore::Open); the server records it recovered go
  // to *recovered. When durability.open_log is set, the log it opens is
  // used instead (cluster mode; it recovers the state itself). Without
  // either: nothing is opened, a fresh report.
  // REQUIRES: called once, before any other call, and no log in use.
  // Outcomes: the recovery report; the store's error (a locked data dir,
  // corruption before the tail of the log, a version mismatch, I/O).
  absl::StatusOr<storage::RecoveryReport> Open(
      const DurabilityConfig& durability, storage::ServerState* recovered);
  // Uses `log` instead of opening a data dir (tests' fake logs, other
  // implementations). Outcomes: OK; FailedPrecondition if a log is in use
  // already or `log` holds records (recovery belongs to its opening).
  absl::Status UseLog(std::unique_ptr<storage::OperationLog> log);
  // Whether a log is in use.
  bool persistent() const { return log_ != nullptr; }

  // Applies `op` and appends it (see the guarantees above). Outcomes: the
  // core's reply; the core's error (nothing appended); the log's error if
  // it failed or its disk is full (AdmitsMutations; nothing applied, unless
  // op is an Advance). A failed
  // append after a successful apply returns the reply: the log has failed
  // then, so nothing that depends on the record is ever acknowledged.
  absl::StatusOr<Reply> Apply(const Operation& op);
  // Appends a server record (if a log is in use and healthy; otherwise the
  // answer that depends on it fails with the log's error anyway).
  void Log(const storage::ServerRecord& record);
  // The position of the last record appended (0 without a log): the read
  // barrier of everything applied so far.
  storage::LogPosition last_position() const;
  // When the clock is next due in the log (an Advance at that tick or
  // later, applied like any other): clock_record_every_ms (OpenedLog) after
  // the last operation appended, while a lease is held; kMaxTick when no
  // lease is held, the log takes no clock records or has failed, or there
  // is no log.
  // Every other record carries its tick too, so a busy log needs none.
  Tick NextClockRecord() const;

  // The rest of the core's surface outside Apply (core/state_machine.h):
  // queries at `now`, the events to drain, the idle clock, the snapshot.
  absl::StatusOr<std::optional<std::string>> Read(Tick now,
                                                  absl::string_view lock,
                                                  absl::string_view key) {
    return state_.Read(now, lock, key);
  }
  absl::StatusOr<KeyPage> Keys(Tick now, absl::string_view lock,
                               absl::string_view after, size_t limit) {
    return state_.Keys(now, lock, after, limit);
  }
  absl::StatusOr<LockView> Inspect(Tick now, absl::string_view lock) {
    return state_.Inspect(now, lock);
  }
  absl::StatusOr<ClientView> Status(Tick now, absl::string_view client) {
    return state_.Status(now, client);
  }
  LockPage InspectPage(Tick now, absl::string_view lock,
                       const InspectCursor& from, size_t limit) {
    return state_.InspectPage(now, lock, from, limit);
  }
  ClientPage StatusPage(Tick now, absl::string_view client,
                        absl::string_view after, size_t limit) {
    return state_.StatusPage(now, client, after, limit);
  }
  std::vector<Event> TakeEvents() { return state_.TakeEvents(); }
  void RestartIdleClock(absl::string_view client, Tick at) {
    state_.RestartIdleClock(client, at);
  }
  CoreSnapshot Snapshot() const { return state_.Snapshot(); }
  const LockTable& table() const { return state_.table(); }
  const FencedStore& store() const { return state_.store(); }

  // The thread-safe half (see above). Its address never changes.
  Durability& durability() { return durability_; }

 private:
  void MaybeSnapshot(storage::LogPosition position);

  StateMachine state_;
  ServerStateSource server_state_;
  // OpenedLog::clock_record_every_ms (0: none), and the tick of the last
  // operation appended.
  int64_t clock_record_every_ms_ = 0;
  Tick last_appended_tick_ = 0;
  Durability durability_;
  // Null without a log; set once by Open or UseLog. Last member: the log
  // is destroyed (closed, its waiting callbacks run) before the rest.
  std::unique_ptr<storage::OperationLog> log_;
};

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_DURABLE_STATE_MACHINE_H_
