#include "storage/log_replica.h"

#include <optional>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "storage/operation_codec.h"
#include "storage/restart_grace.h"
#include "storage/snapshot_file.h"

namespace leasekeeper::storage {

absl::Status PruneSnapshots(const std::string& dir, size_t keep) {
  absl::StatusOr<std::vector<std::string>> names = ListDirectory(dir);
  if (!names.ok()) return names.status();
  const auto snapshots = SnapshotFilesIn(*names);
  absl::Status result;
  for (size_t i = keep; i < snapshots.size(); ++i) {
    result.Update(RemoveFile(dir + "/" + snapshots[i].second));
  }
  return result;
}

absl::StatusOr<std::unique_ptr<LogReplica>> LogReplica::Open(
    const std::string& dir, CoreConfig core_config) {
  std::unique_ptr<LogReplica> replica(new LogReplica(dir, core_config));
  if (absl::Status s = CreateDirectories(dir); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<DirLock>> lock = DirLock::Acquire(dir);
  if (!lock.ok()) return lock.status();
  replica->lock_ = *std::move(lock);
  absl::StatusOr<std::vector<std::string>> names = ListDirectory(dir);
  if (!names.ok()) return names.status();
  CoreSnapshot snapshot;
  ServerState server;
  absl::StatusOr<std::optional<SnapshotFileInfo>> newest =
      ReadNewestSnapshotFile(dir, *names, snapshot, server);
  if (!newest.ok()) return newest.status();
  if (newest->has_value()) {
    if (absl::Status s = replica->machine_.Restore(snapshot); !s.ok()) {
      return absl::DataLossError(absl::StrCat(
          "snapshot ", dir, "/", SnapshotFileName((*newest)->covered),
          " is inconsistent: ", s.message()));
    }
    replica->server_.Restore(std::move(server));
    replica->applied_ = (*newest)->covered;
    replica->snapshot_position_ = (*newest)->covered;
  }
  return replica;
}

absl::Status LogReplica::Apply(LogPosition position, absl::string_view bytes) {
  if (position != applied_ + 1) {
    return absl::FailedPreconditionError(
        absl::StrCat("log position ", position, " applied after ", applied_));
  }
  absl::StatusOr<LogEntry> entry = DecodeLogEntry(bytes);
  if (!entry.ok()) {
    return absl::DataLossError(absl::StrCat("log record at position ",
                                            position, ": ",
                                            entry.status().message()));
  }
  if (const auto* record = std::get_if<ServerRecord>(&*entry)) {
    server_.Apply(*record);
  } else if (const auto* grace = std::get_if<RestartGrace>(&*entry)) {
    absl::StatusOr<size_t> raised = ApplyRestartGrace(*grace, machine_);
    if (!raised.ok()) {
      return absl::DataLossError(absl::StrCat(
          "restart grace at position ", position, ": ",
          raised.status().message()));
    }
  } else {
    // Contract errors are replayed as they happened on the leader.
    machine_.Apply(std::get<Operation>(*entry)).status().IgnoreError();
  }
  // Nobody here waits for events: the leader answered them.
  (void)machine_.TakeEvents();
  applied_ = position;
  return absl::OkStatus();
}

absl::Status LogReplica::WriteSnapshot() {
  if (applied_ == snapshot_position_) return absl::OkStatus();
  // The replay keeps applying after this: take its state and put a copy
  // back.
  ServerState server = server_.Take();
  server_.Restore(server);
  absl::StatusOr<SnapshotFileInfo> written =
      WriteSnapshotFile(dir_, machine_.Snapshot(), applied_, server);
  if (!written.ok()) return written.status();
  snapshot_position_ = applied_;
  return PruneSnapshots(dir_, 2);
}

absl::Status LogReplica::CopyTo(StateMachine& machine, ServerState& server) {
  if (absl::Status s = machine.Restore(machine_.Snapshot()); !s.ok()) return s;
  server = server_.Take();
  server_.Restore(server);
  return absl::OkStatus();
}

}  // namespace leasekeeper::storage
