// LogReplica: a cluster follower's copy of the state, built by applying the
// replicated log exactly as local recovery replays a local log
// (durable_store.h), with local snapshots in the node's data dir (LOCK and
// snap-*.snap, the newest kClusterSnapshotsKept kept; no log files).
// InstallSnapshot brings a replica trimmed past the log forward from another
// member's snapshot; a failure anywhere leaves the replica and its dir as
// they were. ClusterNode owns it; its follower applies to it.
//
// Thread-safety: not thread-safe; one thread (the follower's) owns it.
//
// Invariants:
//  1. The state is that of log records 1..applied(), applied in order.
//  2. Apply accepts only position applied() + 1.
#ifndef LEASEKEEPER_CLUSTER_LOG_REPLICA_H_
#define LEASEKEEPER_CLUSTER_LOG_REPLICA_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cluster/snapshot_source.h"
#include "core/state_machine.h"
#include "storage/file.h"
#include "storage/log.h"
#include "storage/server_records.h"

namespace leasekeeper::storage {

class LogReplica {
 public:
  // Locks `dir` (creating it) and loads its newest snapshot that checks
  // out (none: applied() == 0), as recovery does (ReadNewestSnapshotFile,
  // snapshot_file.h: interrupted writes removed); the damaged ones it
  // skipped are in damaged_snapshots(). Outcomes: the replica; FailedPrecondition
  // (dir locked by another process, a snapshot version this build does not
  // read); DataLoss (a snapshot the core refuses); I/O errors.
  // `retry_ttl_ms`: how long the server keeps an answer for a retry
  // (ServerStateReplay: a replica kept up for the node's lifetime holds
  // one ttl of answers, not every answer since its snapshot); 0 keeps all.
  static absl::StatusOr<std::unique_ptr<LogReplica>> Open(
      const std::string& dir, CoreConfig core_config,
      int64_t retry_ttl_ms = 0);

  LogReplica(const LogReplica&) = delete;
  LogReplica& operator=(const LogReplica&) = delete;

  LogPosition applied() const { return applied_; }
  LogPosition snapshot_position() const { return snapshot_position_; }
  size_t records_since_snapshot() const { return applied_ - snapshot_position_; }
  Tick last_tick() const { return machine_->table().now(); }
  const StateMachine& machine() const { return *machine_; }
  // What Open found wrong with the snapshots it skipped (one description
  // each: file and fault); empty if none.
  const std::vector<std::string>& damaged_snapshots() const {
    return damaged_;
  }

  // Applies the encoded log entry at `position`. Outcomes: OK;
  // FailedPrecondition if position != applied() + 1 (nothing changes);
  // DataLoss if it does not decode, or a grace the core refuses.
  absl::Status Apply(LogPosition position, absl::string_view entry);

  // Writes a snapshot of records 1..applied() (no-op if it exists) and
  // deletes all but the newest kClusterSnapshotsKept. Outcomes: OK; I/O
  // errors. Cost: O(state) plus two fsyncs.
  absl::Status WriteSnapshot();

  // Replaces the state with that of `sent.bytes`, a whole snapshot file
  // (snapshot_file.h) another member sent, which must be what the sender
  // announced (sent.covered, sent.payload_crc32c) and cover at least
  // 1..min_covered and more than applied(); the file is written into the
  // data dir (atomically, as WriteSnapshotFile) before the state changes,
  // so a restart finds it. The bytes are decoded and checked once.
  // Outcomes: OK (applied() and snapshot_position() are its covered
  // position); DataLoss for bytes that do not check out (header, size,
  // checksum, structure), do not match the announcement, or hold a state
  // the core refuses; FailedPrecondition for a snapshot covering min_covered - 1 or less, or
  // applied() or less, or a format version this build does not read; I/O
  // errors. On every error the state is unchanged, and so is the dir,
  // but for an I/O error removing an older snapshot after the new file was
  // written (which then stays, complete).
  // Cost: O(size) plus two fsyncs.
  absl::Status InstallSnapshot(const FetchedSnapshot& sent,
                               LogPosition min_covered);

  // Copies the state into `machine` (REQUIRES: empty, same CoreConfig) and
  // the server state into *server. Cost: O(state).
  absl::Status CopyTo(StateMachine& machine, ServerState& server);

  // The data dir (where the leader, once this node leads, keeps its
  // snapshots too).
  const std::string& dir() const { return dir_; }

 private:
  LogReplica(std::string dir, CoreConfig core_config, int64_t retry_ttl_ms)
      : dir_(std::move(dir)),
        core_config_(core_config),
        machine_(std::make_unique<StateMachine>(core_config)),
        server_(retry_ttl_ms) {}

  const std::string dir_;
  const CoreConfig core_config_;
  std::unique_ptr<DirLock> lock_;
  // Never null; replaced whole by InstallSnapshot.
  std::unique_ptr<StateMachine> machine_;
  std::vector<std::string> damaged_;
  ServerStateReplay server_;
  LogPosition applied_ = 0;
  LogPosition snapshot_position_ = 0;
};

// How many local snapshots a cluster node keeps (the follower's and, once
// it leads, the leader's: one data dir).
inline constexpr size_t kClusterSnapshotsKept = 2;

}  // namespace leasekeeper::storage

#endif  // LEASEKEEPER_CLUSTER_LOG_REPLICA_H_
