// DurableStore: the local OperationLog (operation_log.h). Open recovers a
// StateMachine and the server's ServerState from a data directory (newest
// snapshot, then the log after it) and logs this restart's grace; later
// records go to the write-ahead log (log.h) with group commit under the
// fsync policy, each caller learns when its record is durable, and
// snapshots are written off-thread so the log can be cut. The owner of the
// core appends under its lock and answers only from OnDurable; the rules
// and their reasons are in docs/design/durable-path.md.
//
// Thread-safety: every public method is thread-safe. Callbacks run on the
// flusher thread, never under the store's mutex, in position order; one
// must not block for long nor call WaitDurable or Close.
//
// Invariants: those of OperationLog, and recovery after a crash at any
// point yields the state after a prefix of the appended records that holds
// every durable one (plus the restart grace).
#ifndef LEASEKEEPER_STORAGE_DURABLE_STORE_H_
#define LEASEKEEPER_STORAGE_DURABLE_STORE_H_

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "core/snapshot.h"
#include "core/state_machine.h"
#include "storage/file.h"
#include "storage/log.h"
#include "storage/operation_log.h"
#include "storage/server_records.h"

namespace leasekeeper::storage {

enum class FsyncPolicy { kAlways, kBatch, kNever };

// "always" / "batch" / "never", and back (nullopt for anything else).
absl::string_view FsyncPolicyName(FsyncPolicy policy);
std::optional<FsyncPolicy> ParseFsyncPolicy(absl::string_view name);

// The default pause between writes that a full disk refuses.
inline constexpr int64_t kOutOfSpaceRetryMs = 250;

struct DurableStoreOptions {
  FsyncPolicy fsync = FsyncPolicy::kBatch;
  // SnapshotDue() turns true once this many records were appended since the
  // last snapshot (0: never). It bounds the replay at the next start.
  uint64_t snapshot_every_records = 200'000;
  // See restart_grace.h; in the core's ticks. 0: no grace.
  int64_t restart_grace_ticks = 0;
  // --recover-truncate (log.h): cut the log at the first bad record.
  bool recover_truncate = false;
  // Log segment size, and whether segments are preallocated (log.h).
  uint64_t segment_bytes = uint64_t{8} << 20;
  bool preallocate_log_segments = true;
  // How log segments are opened for writing; tests inject faults here.
  WritableFileFactory open_file = OpenPosixWritableFile;
  // How often the flusher tries again to write while the disk is full.
  int64_t out_of_space_retry_ms = kOutOfSpaceRetryMs;
  // Called on the flusher thread when a full disk stops the log (with the
  // reason AdmitsMutations gives) and when writing resumes (OK).
  std::function<void(const absl::Status&)> on_space_change{};
  // Called on the snapshot thread with the result of each snapshot write.
  std::function<void(const absl::Status&)> on_snapshot_written{};
};

// What Open found and did; Summary() is one line for the server's log.
struct RecoveryReport {
  bool fresh = true;                 // nothing to recover: a new data dir
  LogPosition snapshot_position = 0;  // 0: no snapshot used
  uint64_t snapshot_bytes = 0;
  uint64_t records_replayed = 0;     // operations applied after the snapshot
  uint64_t graces_replayed = 0;      // RestartGrace entries among them
  uint64_t server_records_replayed = 0;  // ServerRecords among them
  size_t sessions = 0;               // in the recovered ServerState
  size_t retry_entries = 0;          // in the recovered ServerState
  LogPosition last_position = 0;     // the last record in the log
  Tick last_tick = kMinTick;         // the core's now after replay
  Tick resume_tick = 0;              // the first tick the owner may use
  size_t leases_graced = 0;          // raised by this restart's grace
  size_t held_leases = 0;
  size_t waiters = 0;
  size_t locks = 0;
  size_t clients = 0;
  bool tail_dropped = false;
  std::vector<std::string> warnings;  // torn tail, damaged snapshot, ...
  int64_t elapsed_us = 0;
  int64_t snapshot_read_us = 0;      // read, check and decode the file
  int64_t restore_us = 0;            // StateMachine::Restore
  int64_t replay_us = 0;             // log records (restore excluded)

  // Sets last_tick, resume_tick and the counts (held_leases through
  // retry_entries) from the recovered state. Cost: O(1).
  void CountRecovered(const StateMachine& machine, const ServerState& server);

  std::string Summary() const;
};

// Counters for metrics. Histograms are per-bucket counts (not cumulative):
// bucket i counts values <= kBounds[i] and > kBounds[i-1]; the last bucket
// is everything above the last bound.
struct DurableStoreStats {
  static constexpr std::array<uint64_t, 12> kBatchBounds = {
      1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096};
  static constexpr std::array<uint64_t, 14> kSyncMicrosBounds = {
      50,    100,   250,    500,    1000,   2500,   5000,
      10000, 25000, 50000, 100000, 250000, 500000, 1000000};

  uint64_t records_appended = 0;  // since Open
  uint64_t bytes_appended = 0;    // encoded entries, without framing
  LogPosition last_position = 0;
  LogPosition durable_position = 0;
  uint64_t groups = 0;            // writes to the log
  uint64_t fsyncs = 0;
  std::array<uint64_t, kBatchBounds.size() + 1> group_records{};
  uint64_t group_records_sum = 0;
  std::array<uint64_t, kSyncMicrosBounds.size() + 1> fsync_micros{};
  uint64_t fsync_micros_sum = 0;
  uint64_t fsync_micros_max = 0;
  uint64_t snapshots_written = 0;
  LogPosition last_snapshot_position = 0;
  uint64_t last_snapshot_bytes = 0;
  int64_t last_snapshot_write_us = 0;
  uint64_t snapshot_failures = 0;
  absl::Status last_snapshot_error;  // OK if the last attempt succeeded
  absl::Status health;               // OK, or why the store failed
  absl::Status out_of_space;         // OK, or why the log waits for room
  uint64_t out_of_space_episodes = 0;
};

class DurableStore final : public OperationLog {
 public:
  // Runs once the record is durable (OK) or can never be (Unavailable).
  using DurableCallback = OperationLog::DurableCallback;

  // Locks `dir` (creating it if needed), recovers `machine` and, unless
  // null, *server from it and starts the flusher and snapshot threads.
  // REQUIRES: `machine` is freshly constructed (empty), with the CoreConfig
  // the records were applied with.
  // Outcomes: the store, with recovery() describing what happened;
  //  - FailedPrecondition: the dir is locked by another process (message
  //    names its pid), or a log/snapshot format version this build does not
  //    read;
  //  - DataLoss: corruption before the tail of the log (file and byte
  //    offset; see log.h for the ways forward), records missing between
  //    the snapshot and the log, a record that does not decode, or a
  //    snapshot the core refuses;
  //  - another error for I/O (permissions, ...).
  // Cost: reads the newest snapshot and every log segment; replays the
  // records after the snapshot.
  static absl::StatusOr<std::unique_ptr<DurableStore>> Open(
      const std::string& dir, DurableStoreOptions options,
      StateMachine& machine, ServerState* server = nullptr);

  // Close().
  ~DurableStore() override;
  DurableStore(const DurableStore&) = delete;
  DurableStore& operator=(const DurableStore&) = delete;

  const RecoveryReport& recovery() const { return recovery_; }

  // Enqueues `operation` for the log and returns its position.
  // Outcomes: the position; Unavailable (with the reason) once the store
  // failed; FailedPrecondition after Close(); InvalidArgument if the
  // encoded entry is too large for the log (kMaxLogRecordBytes). While the
  // disk is full the entry is kept in memory and written once there is
  // room (its callbacks wait until then); the caller refuses new mutations
  // first (AdmitsMutations).
  // Cost: O(size of the operation); never waits for I/O, except that under
  // kNever it writes the record to the OS (no fsync).
  absl::StatusOr<LogPosition> Append(const Operation& operation) override;
  // The same for a change to the server's state.
  absl::StatusOr<LogPosition> Append(const ServerRecord& record) override;

  // Calls `done` on the flusher thread once record `position` is durable
  // (OK), or with Unavailable if the store failed before that. Also when
  // the record is already durable (then as soon as the flusher wakes).
  // REQUIRES: position <= last_position().
  void OnDurable(LogPosition position, DurableCallback done) override;

  // Blocks until record `position` is durable. OK, or Unavailable if the
  // store failed first. Not for gRPC threads; for tools, tests, shutdown.
  absl::Status WaitDurable(LogPosition position) override;

  LogPosition last_position() const override;  // last appended (or recovered)
  LogPosition durable_position() const override;  // see invariant 2

  // Decodes the log's records from `from` on (those written to the file:
  // under kBatch and kAlways a record still waiting for the flusher is not
  // there yet). Outcomes: see OperationLog::ReadFrom. Cost: reads every
  // segment from the one holding `from`.
  absl::Status ReadFrom(LogPosition from,
                        const EntryVisitor& visit) const override;

  // True when a snapshot should be submitted: enough records since the
  // last one (options), or a RestartGrace entry is waiting to be folded into
  // a snapshot (replaying one costs a full export/restore). False while a
  // snapshot is being written or when the store failed.
  bool SnapshotDue() const override;

  // Writes `snapshot` and `server` (the state after records 1..covered) on
  // the snapshot thread, after record `covered` is durable; then deletes
  // snapshots but the newest two and the log segments the older of them
  // covers. Returns false (and drops it) if a snapshot is still being
  // written or `covered` is not in (last snapshot, last_position()].
  bool SubmitSnapshot(CoreSnapshot snapshot, LogPosition covered,
                      ServerState server) override;
  bool SubmitSnapshot(CoreSnapshot snapshot, LogPosition covered) {
    return SubmitSnapshot(std::move(snapshot), covered, ServerState{});
  }

  // Blocks until no snapshot is being written; returns the result of the
  // last one (OK if none was attempted). For tests and shutdown.
  absl::Status WaitForSnapshot();

  // OK, or the Unavailable error that failed the store.
  absl::Status health() const override;
  // health()'s failure, else Unavailable naming the data dir while its
  // disk is full: the log found no room for its next quarter segment
  // (FileLog::room(); the records already taken are written into the room
  // it owns, so reads behind them go on), or a write found no room at all
  // (those records wait in memory). The flusher tries again every
  // out_of_space_retry_ms and the log resumes by itself. Else OK. A failed fsync is never retried:
  // the kernel may have dropped the pages, so it fails the store.
  absl::Status AdmitsMutations() const override;

  DurableStoreStats stats() const;

  // Writes and syncs everything appended (callbacks run), waits for the
  // snapshot being written, stops the threads. Later Appends fail. Entries
  // still waiting for room on a full disk fail the store. Returns
  // health(). Idempotent.
  absl::Status Close() override;

 private:
  struct SnapshotJob {
    CoreSnapshot snapshot;
    LogPosition covered = 0;
    ServerState server;
  };
  struct ReadyCallback {
    DurableCallback done;
    absl::Status status;
  };

  DurableStore(std::string dir, DurableStoreOptions options)
      : dir_(std::move(dir)), options_(std::move(options)) {}

  // Open's recovery: locks the dir, loads the newest usable snapshot,
  // replays the log after it, logs this restart's grace. Outcomes: OK; the
  // first step's error (DataLoss for a log or snapshot that cannot be
  // trusted).
  absl::Status Recover(StateMachine& machine, ServerState& server);
  // Creates the data dir if missing and takes its lock (DirLock).
  absl::Status LockDataDir();
  // Sets the positions and counters recovery found; hands the snapshot
  // thread a snapshot that folds the restart grace in when the state is
  // in hand as plain data (`state_in_hand`, `leftovers`).
  void StartAfterRecovery(LogPosition next, LogPosition snapshot_position,
                          bool graced, bool state_in_hand,
                          std::optional<CoreSnapshot> leftovers,
                          const ServerState& server) ABSL_LOCKS_EXCLUDED(mu_);
  // Encodes nothing: enqueues (or under kNever writes) an encoded entry.
  absl::StatusOr<LogPosition> AppendEncoded(std::string record);
  void FlusherLoop();
  void SnapshotLoop();
  // Marks records up to `position` durable, ends an out-of-space episode
  // if one was on and the log has its room (`room`: FileLog::room()), or
  // begins one if it has not (on_space_change first), and runs their
  // callbacks.
  void MarkDurable(LogPosition position, size_t group_records,
                   int64_t fsync_us, const absl::Status& room);
  // The flusher's step while out of space: asks the log to take its room
  // again, and ends the episode if it did and no refused record waits.
  void RetryRoom();
  // The same, returning the callbacks to run outside mu_.
  std::vector<DurableCallback> MarkDurableLocked(LogPosition position,
                                                 size_t group_records,
                                                 int64_t fsync_us)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Fails the store with `status` (first failure wins); runs the callbacks
  // of every record that will now never be durable.
  void Fail(const absl::Status& status);
  // The same, returning those callbacks (with the failure) to run outside
  // mu_.
  std::vector<DurableCallback> FailLocked(const absl::Status& status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RunReady(std::vector<ReadyCallback>& ready);
  // The flusher's write of `group` (positions from `first`) under the
  // policy, marking what it made durable; on a full disk the rest are put
  // back in front of pending_ (WaitForSpace); any other error fails the
  // store.
  void WriteGroup(absl::Span<const std::string> group, LogPosition first);
  // Puts back the records a full disk refused, marks the log out of space
  // (telling on_space_change the first time) and waits a retry interval or
  // until Close.
  void WaitForSpace(absl::Span<const std::string> refused,
                    const absl::Status& why);
  // Begins an out-of-space episode: returns the reason AdmitsMutations
  // now gives, or OK if one was on already (nothing to report).
  absl::Status MarkOutOfSpaceLocked(const absl::Status& why)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Status WriteSnapshot(SnapshotJob& job);

  const std::string dir_;
  const DurableStoreOptions options_;
  std::unique_ptr<DirLock> dir_lock_;
  std::unique_ptr<FileLog> log_;  // the flusher appends; the snapshot
                                  // thread discards (FileLog is thread-safe)
  RecoveryReport recovery_;

  mutable absl::Mutex mu_;
  LogPosition next_position_ ABSL_GUARDED_BY(mu_) = 1;
  LogPosition durable_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::string> pending_ ABSL_GUARDED_BY(mu_);  // not yet written
  std::map<LogPosition, std::vector<DurableCallback>> waiting_
      ABSL_GUARDED_BY(mu_);
  std::vector<ReadyCallback> ready_ ABSL_GUARDED_BY(mu_);
  absl::Status failed_ ABSL_GUARDED_BY(mu_);
  absl::Status out_of_space_ ABSL_GUARDED_BY(mu_);  // OK while there is room
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  bool flusher_done_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t records_since_snapshot_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t graces_since_snapshot_ ABSL_GUARDED_BY(mu_) = 0;
  LogPosition snapshot_position_ ABSL_GUARDED_BY(mu_) = 0;  // newest kept
  std::optional<SnapshotJob> snapshot_job_ ABSL_GUARDED_BY(mu_);
  // The snapshot recovery restored from: freeing a million strings takes a
  // while, so the snapshot thread does it instead of Open.
  std::optional<CoreSnapshot> recovery_leftovers_ ABSL_GUARDED_BY(mu_);
  bool snapshot_busy_ ABSL_GUARDED_BY(mu_) = false;
  DurableStoreStats stats_ ABSL_GUARDED_BY(mu_);

  absl::Mutex close_mu_;  // serialises Close
  bool closed_ ABSL_GUARDED_BY(close_mu_) = false;
  std::thread flusher_;
  std::thread snapshotter_;
};

}  // namespace leasekeeper::storage

#endif  // LEASEKEEPER_STORAGE_DURABLE_STORE_H_
