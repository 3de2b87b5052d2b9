// LogReplica: a cluster follower's copy of the state, built by applying the
// replicated log exactly as recovery replays a local log (durable_store.h):
// operations to a StateMachine, RestartGrace entries with
// ApplyRestartGrace, server records to a ServerStateReplay. It keeps local
// snapshots (snapshot_file.h) in the node's data dir, so that a restarted
// node, or a follower that wins an election, has little to read.
//
// Data dir: LOCK (one process), snap-*.snap (the newest two are kept). No
// log files: the log is etcd's.
//
// Thread-safety: not thread-safe; one thread (the follower's) owns it.
//
// Invariants:
//  1. The state is that of log records 1..applied(), applied in order.
//  2. Apply accepts only position applied() + 1.
#ifndef LEASEKEEPER_STORAGE_LOG_REPLICA_H_
#define LEASEKEEPER_STORAGE_LOG_REPLICA_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/state_machine.h"
#include "storage/file.h"
#include "storage/log.h"
#include "storage/server_records.h"

namespace leasekeeper::storage {

class LogReplica {
 public:
  // Locks `dir` (creating it) and loads its newest snapshot that checks
  // out (none: applied() == 0), as recovery does (ReadNewestSnapshotFile,
  // snapshot_file.h: interrupted writes removed). Outcomes: the replica; FailedPrecondition
  // (dir locked by another process, a snapshot version this build does not
  // read); DataLoss (a snapshot the core refuses); I/O errors.
  static absl::StatusOr<std::unique_ptr<LogReplica>> Open(
      const std::string& dir, CoreConfig core_config);

  LogReplica(const LogReplica&) = delete;
  LogReplica& operator=(const LogReplica&) = delete;

  LogPosition applied() const { return applied_; }
  LogPosition snapshot_position() const { return snapshot_position_; }
  size_t records_since_snapshot() const { return applied_ - snapshot_position_; }
  Tick last_tick() const { return machine_.table().now(); }
  const StateMachine& machine() const { return machine_; }

  // Applies the encoded log entry at `position`. Outcomes: OK;
  // FailedPrecondition if position != applied() + 1 (nothing changes);
  // DataLoss if it does not decode, or a grace the core refuses.
  absl::Status Apply(LogPosition position, absl::string_view entry);

  // Writes a snapshot of records 1..applied() (no-op if it exists) and
  // deletes all but the newest two. Outcomes: OK; I/O errors.
  // Cost: O(state) plus two fsyncs.
  absl::Status WriteSnapshot();

  // Copies the state into `machine` (REQUIRES: empty, same CoreConfig) and
  // the server state into *server. Cost: O(state).
  absl::Status CopyTo(StateMachine& machine, ServerState& server);

  // The data dir (where the leader, once this node leads, keeps its
  // snapshots too).
  const std::string& dir() const { return dir_; }

 private:
  LogReplica(std::string dir, CoreConfig core_config)
      : dir_(std::move(dir)), machine_(core_config) {}

  const std::string dir_;
  std::unique_ptr<DirLock> lock_;
  StateMachine machine_;
  ServerStateReplay server_;
  LogPosition applied_ = 0;
  LogPosition snapshot_position_ = 0;
};

// Deletes every snapshot in `dir` but the newest `keep`. Outcomes: OK; I/O.
absl::Status PruneSnapshots(const std::string& dir, size_t keep);

}  // namespace leasekeeper::storage

#endif  // LEASEKEEPER_STORAGE_LOG_REPLICA_H_
