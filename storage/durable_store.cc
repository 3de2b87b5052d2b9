#include "storage/durable_store.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "storage/operation_codec.h"
#include "storage/restart_grace.h"
#include "storage/snapshot_file.h"

namespace leasekeeper::storage {
namespace {

int64_t MicrosSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now() - start)
      .count();
}

template <size_t N>
void Count(std::array<uint64_t, N + 1>& buckets,
           const std::array<uint64_t, N>& bounds, uint64_t value) {
  size_t i = 0;
  while (i < N && value > bounds[i]) ++i;
  ++buckets[i];
}

size_t CountHolders(const CoreSnapshot& snapshot) {
  size_t n = 0;
  for (const CoreSnapshot::Lock& lock : snapshot.locks) n += lock.holders.size();
  return n;
}

// A snapshot is a copy of the whole core, allocated by the thread that took
// it and freed here. glibc keeps freed memory in its arenas, scattered among
// the table's live allocations, so without a trim each snapshot left the
// daemon's RSS higher (1,000,000 held locks with a data dir: 444 bytes per
// lock against 222 without one). malloc_trim(0) hands the free pages back
// (madvise), at the cost of one walk of the arenas per snapshot.
void ReturnFreedMemoryToTheOs() {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

// The newest snapshot that checks out, as plain data (nothing loaded when
// the dir has none): a damaged one falls back to the next older (the log is
// kept back to the older of the two newest).
struct LoadedSnapshot {
  bool present = false;
  LogPosition position = 0;  // the last record it covers; 0 if none
  CoreSnapshot core;
  ServerState server;
  std::string damaged;  // the newest damaged snapshot's name, if any
};

absl::StatusOr<LoadedSnapshot> LoadNewestSnapshot(
    const std::string& dir, const std::vector<std::string>& names,
    RecoveryReport& report) {
  const auto snapshot_start = std::chrono::steady_clock::now();
  LoadedSnapshot loaded;
  std::vector<std::string> damaged_snapshots;
  absl::StatusOr<std::optional<SnapshotFileInfo>> newest =
      ReadNewestSnapshotFile(dir, names, loaded.core, loaded.server,
                             &damaged_snapshots);
  if (!newest.ok()) return newest.status();
  loaded.present = newest->has_value();
  loaded.position = loaded.present ? (*newest)->covered : 0;
  if (loaded.present) report.snapshot_bytes = (*newest)->bytes;
  for (const std::string& d : damaged_snapshots) {
    report.warnings.push_back(absl::StrCat(
        "snapshot unusable, falling back to an older one: ", d));
  }
  if (!damaged_snapshots.empty()) loaded.damaged = damaged_snapshots.back();
  report.snapshot_position = loaded.position;
  report.snapshot_read_us = MicrosSince(snapshot_start);
  return loaded;
}

// The log in `dir`, its records continuing from the snapshot's position.
absl::StatusOr<std::unique_ptr<FileLog>> OpenLogAfter(
    const std::string& dir, const DurableStoreOptions& options,
    LogPosition snapshot_position, RecoveryReport& report) {
  FileLogOptions log_options;
  log_options.segment_bytes = options.segment_bytes;
  log_options.preallocate_segments = options.preallocate_log_segments;
  log_options.truncate_at_corruption = options.recover_truncate;
  log_options.min_next_position = snapshot_position + 1;
  log_options.open_file = options.open_file;
  LogOpenReport log_report;
  absl::StatusOr<std::unique_ptr<FileLog>> log =
      FileLog::Open(dir, log_options, &log_report);
  if (!log.ok()) return log.status();
  report.tail_dropped = log_report.tail_dropped;
  for (std::string& w : log_report.warnings) {
    report.warnings.push_back(std::move(w));
  }
  return log;
}

// What replay applies the log to. Until the first operation the snapshot
// stays plain data, so RestartGrace entries right after it (the common case
// after a restart) are applied to the data and the core is restored once.
class ReplayTarget {
 public:
  ReplayTarget(StateMachine& machine, LoadedSnapshot snapshot,
               const std::string& dir, RecoveryReport& report)
      : machine_(machine),
        restored_(!snapshot.present),
        loaded_(std::move(snapshot.core)),
        snapshot_position_(snapshot.position),
        dir_(dir),
        report_(report) {
    server_replay_.Restore(std::move(snapshot.server));
  }

  bool restored() const { return restored_; }

  // Restores the core from the snapshot (once; OK if already done).
  // Outcomes: OK; DataLoss if the snapshot is inconsistent.
  absl::Status Restore() {
    if (restored_) return absl::OkStatus();
    restored_ = true;
    const auto restore_start = std::chrono::steady_clock::now();
    absl::Status s = machine_.Restore(loaded_);
    report_.restore_us = MicrosSince(restore_start);
    leftovers_ = std::move(loaded_);
    loaded_ = CoreSnapshot{};
    if (!s.ok()) {
      return absl::DataLossError(absl::StrCat(
          "the snapshot at position ", snapshot_position_, " in ", dir_,
          " is inconsistent: ", s.message()));
    }
    return absl::OkStatus();
  }

  // Applies the log entry at `position`. Outcomes: OK; DataLoss if the
  // snapshot is inconsistent or a restart grace cannot be applied.
  absl::Status Apply(LogPosition position, const LogEntry& entry) {
    if (const auto* record = std::get_if<ServerRecord>(&entry)) {
      // The server's state: no need to restore the core for it.
      server_replay_.Apply(*record);
      ++report_.server_records_replayed;
      return absl::OkStatus();
    }
    if (const auto* grace = std::get_if<RestartGrace>(&entry)) {
      ++report_.graces_replayed;
      if (!restored_ && grace->at == loaded_.now) {
        ApplyRestartGrace(*grace, loaded_);
        return absl::OkStatus();
      }
      if (absl::Status s = Restore(); !s.ok()) return s;
      absl::StatusOr<size_t> raised = ApplyRestartGrace(*grace, machine_);
      if (!raised.ok()) {
        return absl::DataLossError(absl::StrCat(
            "restart grace at position ", position,
            " failed: ", raised.status().message()));
      }
      return absl::OkStatus();
    }
    if (absl::Status s = Restore(); !s.ok()) return s;
    // Contract errors are replayed as they happened the first time.
    machine_.Apply(std::get<Operation>(entry)).status().IgnoreError();
    ++report_.records_replayed;
    return absl::OkStatus();
  }

  // The last tick and the number of held leases of the state replayed.
  Tick last_tick() const {
    return restored_ ? machine_.table().now() : loaded_.now;
  }
  size_t held() const {
    return restored_ ? machine_.table().held_lease_count()
                     : CountHolders(loaded_);
  }

  // Applies this restart's `grace`; the leases it raised.
  absl::StatusOr<size_t> ApplyGrace(const RestartGrace& grace) {
    if (!restored_) return ApplyRestartGrace(grace, loaded_);
    return ApplyRestartGrace(grace, machine_);
  }

  ServerState TakeServer() { return server_replay_.Take(); }
  // The snapshot the core was restored from, if it was.
  std::optional<CoreSnapshot> TakeLeftovers() { return std::move(leftovers_); }

 private:
  StateMachine& machine_;
  bool restored_;
  CoreSnapshot loaded_;
  const LogPosition snapshot_position_;
  const std::string& dir_;
  RecoveryReport& report_;
  ServerStateReplay server_replay_;
  std::optional<CoreSnapshot> leftovers_;
};

// Replays the log's records after the snapshot onto `target`.
// Outcomes: OK; DataLoss for a gap, a missing record or an entry that does
// not apply; the decoder's error for a record that does not decode.
absl::Status ReplayLog(const FileLog& log, const std::string& dir,
                       const std::string& damaged, ReplayTarget& target,
                       RecoveryReport& report) {
  const LogPosition snapshot_position = report.snapshot_position;
  const auto replay_start = std::chrono::steady_clock::now();
  LogPosition expected = snapshot_position + 1;
  absl::Status replayed = log.ReadFrom(
      snapshot_position + 1,
      [&](LogPosition position, absl::string_view record) -> absl::Status {
        if (position != expected) {
          return absl::DataLossError(absl::StrCat(
              "log position ", position, " read where ", expected,
              " was expected"));
        }
        ++expected;
        absl::StatusOr<LogEntry> entry = DecodeLogEntry(record);
        if (!entry.ok()) {
          return absl::Status(
              entry.status().code(),
              absl::StrCat("log record at position ", position, " in ", dir,
                           ": ", entry.status().message()));
        }
        return target.Apply(position, *entry);
      });
  if (absl::IsOutOfRange(replayed)) {
    return absl::DataLossError(absl::StrCat(
        "log records are missing in ", dir, ": the newest usable snapshot "
        "covers positions up to ", snapshot_position, " but ",
        replayed.message(),
        damaged.empty() ? "" : absl::StrCat(" (damaged snapshot: ", damaged,
                                            ")"),
        ". Restore the data dir from a backup"));
  }
  if (!replayed.ok()) return replayed;
  report.replay_us = MicrosSince(replay_start) - report.restore_us;
  return absl::OkStatus();
}

// This restart's grace, logged (and synced) before anything can depend on
// it, then applied. Outcomes: whether one was logged; the log's error.
absl::StatusOr<bool> LogThisRestartsGrace(FileLog& log, int64_t grace_ticks,
                                          ReplayTarget& target,
                                          RecoveryReport& report) {
  if (grace_ticks <= 0 || target.held() == 0) return false;
  const RestartGrace grace{target.last_tick(), grace_ticks};
  std::string record;
  EncodeRestartGrace(grace, record);
  if (absl::Status s = log.Append({record}); !s.ok()) return s;
  if (absl::Status s = log.Sync(); !s.ok()) return s;
  absl::StatusOr<size_t> raised = target.ApplyGrace(grace);
  if (!raised.ok()) return raised.status();
  report.leases_graced = *raised;
  return true;
}

}  // namespace

absl::string_view FsyncPolicyName(FsyncPolicy policy) {
  switch (policy) {
    case FsyncPolicy::kAlways:
      return "always";
    case FsyncPolicy::kBatch:
      return "batch";
    case FsyncPolicy::kNever:
      return "never";
  }
  return "?";
}

std::optional<FsyncPolicy> ParseFsyncPolicy(absl::string_view name) {
  if (name == "always") return FsyncPolicy::kAlways;
  if (name == "batch") return FsyncPolicy::kBatch;
  if (name == "never") return FsyncPolicy::kNever;
  return std::nullopt;
}

std::string RecoveryReport::Summary() const {
  if (fresh) {
    return absl::StrCat("new data dir, nothing to recover; ",
                        elapsed_us / 1000, " ms");
  }
  std::string s = absl::StrCat(
      "recovered ", locks, " locks (", held_leases, " leases held, ", waiters,
      " waiting), ", clients, " clients: snapshot at position ",
      snapshot_position, " (", snapshot_bytes, " bytes, read ",
      snapshot_read_us / 1000, " ms, restored ", restore_us / 1000,
      " ms) + ", records_replayed, " log records replayed (",
      replay_us / 1000, " ms); last position ",
      last_position, ", last tick ", last_tick, ", resuming at tick ",
      resume_tick, "; restart grace raised ", leases_graced, " leases; ",
      sessions, " sessions and ", retry_entries, " retry-cache entries (",
      server_records_replayed, " server records replayed); ",
      elapsed_us / 1000, " ms in all");
  if (tail_dropped) absl::StrAppend(&s, "; torn log tail dropped");
  if (!warnings.empty()) {
    absl::StrAppend(&s, "; warnings: ", absl::StrJoin(warnings, "; "));
  }
  return s;
}

void RecoveryReport::CountRecovered(const StateMachine& machine,
                                    const ServerState& server) {
  last_tick = machine.table().now();
  resume_tick = last_tick == kMinTick ? 0 : last_tick + 1;
  held_leases = machine.table().held_lease_count();
  waiters = machine.table().waiter_count();
  locks = machine.table().lock_count();
  clients = machine.table().registered_client_count();
  sessions = server.sessions.size();
  retry_entries = server.retries.size();
}

absl::StatusOr<std::unique_ptr<DurableStore>> DurableStore::Open(
    const std::string& dir, DurableStoreOptions options,
    StateMachine& machine, ServerState* server) {
  std::unique_ptr<DurableStore> store(
      new DurableStore(dir, std::move(options)));
  ServerState ignored;
  if (absl::Status s =
          store->Recover(machine, server != nullptr ? *server : ignored);
      !s.ok()) {
    return s;
  }
  store->flusher_ = std::thread([s = store.get()] { s->FlusherLoop(); });
  store->snapshotter_ = std::thread([s = store.get()] { s->SnapshotLoop(); });
  return store;
}

absl::Status DurableStore::Recover(StateMachine& machine,
                                   ServerState& server) {
  const auto start = std::chrono::steady_clock::now();
  if (absl::Status s = LockDataDir(); !s.ok()) return s;
  absl::StatusOr<std::vector<std::string>> names = ListDirectory(dir_);
  if (!names.ok()) return names.status();
  absl::StatusOr<LoadedSnapshot> snapshot =
      LoadNewestSnapshot(dir_, *names, recovery_);
  if (!snapshot.ok()) return snapshot.status();
  const LogPosition snapshot_position = snapshot->position;
  const std::string damaged = snapshot->damaged;
  absl::StatusOr<std::unique_ptr<FileLog>> log =
      OpenLogAfter(dir_, options_, snapshot_position, recovery_);
  if (!log.ok()) return log.status();
  log_ = *std::move(log);

  ReplayTarget target(machine, *std::move(snapshot), dir_, recovery_);
  if (absl::Status s = ReplayLog(*log_, dir_, damaged, target, recovery_);
      !s.ok()) {
    return s;
  }
  absl::StatusOr<bool> graced =
      LogThisRestartsGrace(*log_, options_.restart_grace_ticks, target,
                           recovery_);
  if (!graced.ok()) return graced.status();
  // The snapshot stayed plain data through replay (nothing but grace
  // entries followed it): it is now exactly the state at the last record.
  const bool state_in_hand = !target.restored();
  if (absl::Status s = target.Restore(); !s.ok()) return s;
  machine.TakeEvents();  // replay's events were answered long ago

  const LogPosition next = log_->next_position();
  recovery_.last_position = next - 1;
  recovery_.fresh = snapshot_position == 0 && next == 1;
  server = target.TakeServer();
  recovery_.CountRecovered(machine, server);
  recovery_.elapsed_us = MicrosSince(start);
  StartAfterRecovery(next, snapshot_position, *graced, state_in_hand,
                     target.TakeLeftovers(), server);
  return absl::OkStatus();
}

absl::Status DurableStore::LockDataDir() {
  if (absl::Status s = CreateDirectories(dir_); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<DirLock>> dir_lock = DirLock::Acquire(dir_);
  if (!dir_lock.ok()) return dir_lock.status();
  dir_lock_ = *std::move(dir_lock);
  return absl::OkStatus();
}

void DurableStore::StartAfterRecovery(LogPosition next,
                                      LogPosition snapshot_position,
                                      bool graced, bool state_in_hand,
                                      std::optional<CoreSnapshot> leftovers,
                                      const ServerState& server) {
  absl::MutexLock lock(&mu_);
  recovery_leftovers_ = std::move(leftovers);
  next_position_ = next;
  durable_ = next - 1;
  snapshot_position_ = snapshot_position;
  records_since_snapshot_ = next - 1 - snapshot_position;
  graces_since_snapshot_ = recovery_.graces_replayed + (graced ? 1 : 0);
  stats_.last_position = next - 1;
  stats_.durable_position = next - 1;
  if (state_in_hand && graces_since_snapshot_ > 0 && next - 1 > snapshot_position &&
      options_.snapshot_every_records > 0 && recovery_leftovers_.has_value()) {
    // Fold the grace into a new snapshot from the data recovery already
    // holds, on the snapshot thread: the next start need not replay it, and
    // the owner need not export its state under its lock to get there.
    snapshot_job_ =
        SnapshotJob{*std::move(recovery_leftovers_), next - 1, server};
    recovery_leftovers_.reset();
    snapshot_busy_ = true;
    records_since_snapshot_ = 0;
    graces_since_snapshot_ = 0;
  }
}

DurableStore::~DurableStore() { Close().IgnoreError(); }

absl::StatusOr<LogPosition> DurableStore::Append(const Operation& operation) {
  std::string record;
  EncodeOperation(operation, record);
  return AppendEncoded(std::move(record));
}

absl::StatusOr<LogPosition> DurableStore::Append(const ServerRecord& server) {
  std::string record;
  EncodeServerRecord(server, record);
  return AppendEncoded(std::move(record));
}

absl::StatusOr<LogPosition> DurableStore::AppendEncoded(std::string record) {
  if (record.size() >= kMaxLogRecordBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("log entry of ", record.size(),
                     " bytes is too large for the log"));
  }
  std::vector<DurableCallback> callbacks;
  absl::Status space_reason;  // set when this record found the disk full
  LogPosition position;
  {
    absl::MutexLock lock(&mu_);
    if (!failed_.ok()) return failed_;
    if (closing_) return absl::FailedPreconditionError("durable store closed");
    position = next_position_++;
    stats_.bytes_appended += record.size();
    ++stats_.records_appended;
    stats_.last_position = position;
    ++records_since_snapshot_;
    // While the disk is full (or records it refused still wait) the
    // flusher writes, in order, under every policy.
    if (options_.fsync != FsyncPolicy::kNever || !out_of_space_.ok() ||
        !pending_.empty()) {
      pending_.push_back(std::move(record));
      return position;
    }
    // kNever: one write(2) here is all the durability the policy asks for
    // (see the header). Under mu_, so nobody sees the record appended but
    // not durable and parks a callback that this thread, which holds the
    // core's lock, would then have to run. The flusher writes in this mode
    // only while the disk is out of space, when nothing is written here, so
    // the log keeps a single writer.
    if (absl::Status written = log_->Append({record}); !written.ok()) {
      if (!IsOutOfSpace(written)) {
        callbacks = FailLocked(written);
      } else {
        // The log is as it was: the flusher writes it once there is room,
        // and until then every record queues behind it.
        pending_.push_back(std::move(record));
        space_reason = MarkOutOfSpaceLocked(written);
      }
    } else {
      callbacks = MarkDurableLocked(position, 1, -1);
      if (absl::Status room = log_->room(); !room.ok()) {
        space_reason = MarkOutOfSpaceLocked(room);
      }
    }
  }
  if (!space_reason.ok() && options_.on_space_change) {
    options_.on_space_change(space_reason);
  }
  // Empty (nothing waits in this mode), but never drop a callback.
  for (DurableCallback& callback : callbacks) {
    std::move(callback)(health());
  }
  return position;
}

void DurableStore::OnDurable(LogPosition position, DurableCallback done) {
  absl::Status status;
  {
    absl::MutexLock lock(&mu_);
    if (position > durable_) {
      if (failed_.ok() && !flusher_done_) {
        waiting_[position].push_back(std::move(done));
        return;
      }
      status = failed_.ok() ? absl::FailedPreconditionError(
                                  "durable store closed before the record "
                                  "was written")
                            : failed_;
    }
    if (!flusher_done_) {
      ready_.push_back(ReadyCallback{std::move(done), status});
      return;
    }
  }
  std::move(done)(status);  // after Close: no flusher to run it
}

absl::Status DurableStore::WaitDurable(LogPosition position) {
  absl::MutexLock lock(&mu_);
  auto done = [this, position]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return durable_ >= position || !failed_.ok() || flusher_done_;
  };
  mu_.Await(absl::Condition(&done));
  if (durable_ >= position) return absl::OkStatus();
  if (!failed_.ok()) return failed_;
  return absl::FailedPreconditionError("durable store closed");
}

LogPosition DurableStore::last_position() const {
  absl::MutexLock lock(&mu_);
  return next_position_ - 1;
}

LogPosition DurableStore::durable_position() const {
  absl::MutexLock lock(&mu_);
  return durable_;
}

absl::Status DurableStore::health() const {
  absl::MutexLock lock(&mu_);
  return failed_;
}

absl::Status DurableStore::AdmitsMutations() const {
  absl::MutexLock lock(&mu_);
  return failed_.ok() ? out_of_space_ : failed_;
}

DurableStoreStats DurableStore::stats() const {
  absl::MutexLock lock(&mu_);
  DurableStoreStats stats = stats_;
  stats.health = failed_;
  stats.out_of_space = out_of_space_;
  stats.durable_position = durable_;
  return stats;
}

void DurableStore::FlusherLoop() {
  const auto retry = std::chrono::milliseconds(options_.out_of_space_retry_ms);
  auto next_room_try = std::chrono::steady_clock::now();
  for (;;) {
    std::vector<std::string> group;
    LogPosition first = 0;
    std::vector<ReadyCallback> ready;
    bool exit = false;
    bool short_of_room = false;
    {
      absl::MutexLock lock(&mu_);
      auto has_work = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
        return closing_ || !pending_.empty() || !ready_.empty();
      };
      if (out_of_space_.ok()) {
        mu_.Await(absl::Condition(&has_work));
      } else {
        mu_.AwaitWithTimeout(absl::Condition(&has_work),
                             absl::Milliseconds(options_.out_of_space_retry_ms));
      }
      short_of_room = !out_of_space_.ok() && !closing_;
      ready.swap(ready_);
      if (!pending_.empty()) {
        first = next_position_ - pending_.size();
        group.swap(pending_);
      }
      exit = closing_ && group.empty() && ready.empty();
      // Decided under the lock, so no OnDurable can slip in after it.
      if (exit) flusher_done_ = true;
    }
    RunReady(ready);
    if (!group.empty()) WriteGroup(group, first);
    if (short_of_room && std::chrono::steady_clock::now() >= next_room_try) {
      next_room_try = std::chrono::steady_clock::now() + retry;
      RetryRoom();
    }
    if (exit) break;
  }
}

void DurableStore::RetryRoom() {
  if (!log_->ReserveRoom().ok()) return;
  bool recovered = false;
  {
    absl::MutexLock lock(&mu_);
    // Records a full disk refused end the episode when they are written.
    if (!out_of_space_.ok() && pending_.empty() && failed_.ok()) {
      out_of_space_ = absl::OkStatus();
      recovered = true;
    }
  }
  if (recovered && options_.on_space_change) {
    options_.on_space_change(absl::OkStatus());
  }
}

void DurableStore::WriteGroup(absl::Span<const std::string> group,
                              LogPosition first) {
  // kAlways: a record at a time, each synced; otherwise one write for the
  // group and, unless kNever, one sync.
  const size_t step =
      options_.fsync == FsyncPolicy::kAlways ? 1 : group.size();
  for (size_t done = 0; done < group.size(); done += step) {
    const absl::Span<const std::string> part = group.subspan(done, step);
    if (absl::Status s = log_->Append(part); !s.ok()) {
      if (IsOutOfSpace(s)) {
        WaitForSpace(group.subspan(done), s);
      } else {
        Fail(s);
      }
      return;
    }
    int64_t fsync_us = -1;
    if (options_.fsync != FsyncPolicy::kNever) {
      const auto sync_start = std::chrono::steady_clock::now();
      if (absl::Status s = log_->Sync(); !s.ok()) {
        Fail(s);
        return;
      }
      fsync_us = MicrosSince(sync_start);
    }
    MarkDurable(first + done + part.size() - 1, part.size(), fsync_us,
                log_->room());
  }
}

void DurableStore::WaitForSpace(absl::Span<const std::string> refused,
                                const absl::Status& why) {
  bool closing = false;
  absl::Status reason;  // set when this refusal began the episode
  {
    absl::MutexLock lock(&mu_);
    closing = closing_;
    if (!closing) {
      pending_.insert(pending_.begin(), refused.begin(), refused.end());
      reason = MarkOutOfSpaceLocked(why);
    }
  }
  if (closing) {
    // Nobody frees space for a store that is shutting down.
    Fail(absl::UnavailableError(absl::StrCat(
        "closed while the disk of data dir ", dir_,
        " was full; the records waiting for room were not written (",
        why.message(), ")")));
    return;
  }
  if (!reason.ok() && options_.on_space_change) {
    options_.on_space_change(reason);
  }
  absl::MutexLock lock(&mu_);
  auto closing_now = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return closing_;
  };
  mu_.AwaitWithTimeout(absl::Condition(&closing_now),
                       absl::Milliseconds(options_.out_of_space_retry_ms));
}

absl::Status DurableStore::MarkOutOfSpaceLocked(const absl::Status& why) {
  if (!out_of_space_.ok()) return absl::OkStatus();
  out_of_space_ = absl::UnavailableError(absl::StrCat(
      "the disk of data dir ", dir_,
      " is full; mutations are refused until space is freed, then resume "
      "by themselves (",
      why.message(), ")"));
  ++stats_.out_of_space_episodes;
  return out_of_space_;
}

void DurableStore::MarkDurable(LogPosition position, size_t group_records,
                               int64_t fsync_us, const absl::Status& room) {
  std::vector<DurableCallback> done;
  bool space_recovered = false;
  absl::Status space_reason;  // set when the log found its room short
  {
    absl::MutexLock lock(&mu_);
    done = MarkDurableLocked(position, group_records, fsync_us);
    // A write went in and the log has its room, so a full disk has room
    // again. In the same step as the durable position, so that kNever's
    // inline writes resume only after the flusher's records.
    if (room.ok()) {
      space_recovered = !out_of_space_.ok();
      out_of_space_ = absl::OkStatus();
    } else {
      space_reason = MarkOutOfSpaceLocked(room);
    }
  }
  if (options_.on_space_change) {
    if (space_recovered) options_.on_space_change(absl::OkStatus());
    if (!space_reason.ok()) options_.on_space_change(space_reason);
  }
  for (DurableCallback& cb : done) std::move(cb)(absl::OkStatus());
}

std::vector<DurableStore::DurableCallback> DurableStore::MarkDurableLocked(
    LogPosition position, size_t group_records, int64_t fsync_us) {
  durable_ = position;
  ++stats_.groups;
  stats_.group_records_sum += group_records;
  Count(stats_.group_records, DurableStoreStats::kBatchBounds, group_records);
  if (fsync_us >= 0) {
    const auto us = static_cast<uint64_t>(fsync_us);
    ++stats_.fsyncs;
    stats_.fsync_micros_sum += us;
    stats_.fsync_micros_max = std::max(stats_.fsync_micros_max, us);
    Count(stats_.fsync_micros, DurableStoreStats::kSyncMicrosBounds, us);
  }
  std::vector<DurableCallback> done;
  auto end = waiting_.upper_bound(position);
  for (auto it = waiting_.begin(); it != end; ++it) {
    for (DurableCallback& cb : it->second) done.push_back(std::move(cb));
  }
  waiting_.erase(waiting_.begin(), end);
  return done;
}

void DurableStore::Fail(const absl::Status& status) {
  std::vector<DurableCallback> doomed;
  absl::Status reason;
  {
    absl::MutexLock lock(&mu_);
    doomed = FailLocked(status);
    reason = failed_;
  }
  for (DurableCallback& cb : doomed) std::move(cb)(reason);
}

std::vector<DurableStore::DurableCallback> DurableStore::FailLocked(
    const absl::Status& status) {
  if (failed_.ok()) {
    failed_ = absl::UnavailableError(absl::StrCat(
        "durable store failed; mutations are refused until the disk is "
        "fixed and leasekeeperd restarted: ",
        status.message()));
  }
  std::vector<DurableCallback> doomed;
  for (auto& [position, callbacks] : waiting_) {
    for (DurableCallback& cb : callbacks) doomed.push_back(std::move(cb));
  }
  waiting_.clear();
  pending_.clear();
  return doomed;
}

void DurableStore::RunReady(std::vector<ReadyCallback>& ready) {
  for (ReadyCallback& r : ready) std::move(r.done)(r.status);
  ready.clear();
}

absl::Status DurableStore::ReadFrom(LogPosition from,
                                    const EntryVisitor& visit) const {
  return log_->ReadFrom(
      from, [&](LogPosition position, absl::string_view record) {
        absl::StatusOr<LogEntry> entry = DecodeLogEntry(record);
        if (!entry.ok()) {
          return absl::DataLossError(absl::StrCat(
              "log record at position ", position, " in ", dir_, ": ",
              entry.status().message()));
        }
        return visit(position, *entry);
      });
}

bool DurableStore::SnapshotDue() const {
  absl::MutexLock lock(&mu_);
  if (options_.snapshot_every_records == 0 || !failed_.ok() ||
      !out_of_space_.ok() || snapshot_busy_ || closing_) {
    return false;
  }
  return records_since_snapshot_ >= options_.snapshot_every_records ||
         graces_since_snapshot_ > 0;
}

bool DurableStore::SubmitSnapshot(CoreSnapshot snapshot, LogPosition covered,
                                  ServerState server) {
  absl::MutexLock lock(&mu_);
  if (snapshot_busy_ || closing_ || !failed_.ok() ||
      covered <= snapshot_position_ || covered >= next_position_) {
    return false;
  }
  snapshot_busy_ = true;
  records_since_snapshot_ = next_position_ - 1 - covered;
  graces_since_snapshot_ = 0;
  snapshot_job_ = SnapshotJob{std::move(snapshot), covered, std::move(server)};
  return true;
}

absl::Status DurableStore::WaitForSnapshot() {
  absl::MutexLock lock(&mu_);
  auto idle = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return !snapshot_busy_;
  };
  mu_.Await(absl::Condition(&idle));
  return stats_.last_snapshot_error;
}

void DurableStore::SnapshotLoop() {
  std::optional<CoreSnapshot> leftovers;
  {
    absl::MutexLock lock(&mu_);
    leftovers.swap(recovery_leftovers_);
  }
  leftovers.reset();
  for (;;) {
    SnapshotJob job;
    {
      absl::MutexLock lock(&mu_);
      auto has_work = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
        return snapshot_job_.has_value() || closing_;
      };
      mu_.Await(absl::Condition(&has_work));
      if (!snapshot_job_.has_value()) return;  // closing
      job = std::move(*snapshot_job_);
      snapshot_job_.reset();
    }
    absl::Status status = WriteSnapshot(job);
    job = SnapshotJob{};
    ReturnFreedMemoryToTheOs();
    {
      absl::MutexLock lock(&mu_);
      stats_.last_snapshot_error = status;
      snapshot_busy_ = false;
      if (!status.ok()) {
        // Try again after half an interval; the log still has everything.
        ++stats_.snapshot_failures;
        records_since_snapshot_ = options_.snapshot_every_records / 2;
      }
    }
    if (options_.on_snapshot_written) options_.on_snapshot_written(status);
  }
}

absl::Status DurableStore::WriteSnapshot(SnapshotJob& job) {
  if (absl::Status s = WaitDurable(job.covered); !s.ok()) return s;
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<SnapshotFileInfo> info =
      WriteSnapshotFile(dir_, job.snapshot, job.covered, job.server);
  job.snapshot = CoreSnapshot{};
  job.server = ServerState{};
  if (!info.ok()) return info.status();
  LogPosition older = 0;
  {
    absl::MutexLock lock(&mu_);
    older = snapshot_position_;
    snapshot_position_ = job.covered;
    ++stats_.snapshots_written;
    stats_.last_snapshot_position = job.covered;
    stats_.last_snapshot_bytes = info->bytes;
    stats_.last_snapshot_write_us = MicrosSince(start);
  }
  // Keep the newest two snapshots; the log back to the older one, so a
  // damaged newest snapshot can be replaced by the older plus more replay.
  absl::Status cleanup;
  absl::StatusOr<std::vector<std::string>> names = ListDirectory(dir_);
  if (!names.ok()) return names.status();
  for (const auto& [covered, name] : SnapshotFilesIn(*names)) {
    if (covered != job.covered && covered != older) {
      cleanup.Update(RemoveFile(dir_ + "/" + name));
    }
  }
  if (older > 0) cleanup.Update(log_->DiscardBefore(older + 1));
  return cleanup;
}

absl::Status DurableStore::Close() {
  absl::MutexLock close_lock(&close_mu_);
  if (!closed_) {
    closed_ = true;
    {
      absl::MutexLock lock(&mu_);
      closing_ = true;
    }
    if (flusher_.joinable()) flusher_.join();
    if (snapshotter_.joinable()) snapshotter_.join();
    absl::MutexLock lock(&mu_);
    flusher_done_ = true;
  }
  return health();
}

}  // namespace leasekeeper::storage
