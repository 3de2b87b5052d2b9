#include "cluster/log_replica.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "storage/operation_codec.h"
#include "storage/restart_grace.h"
#include "storage/snapshot_file.h"

namespace leasekeeper::storage {

absl::StatusOr<std::unique_ptr<LogReplica>> LogReplica::Open(
    const std::string& dir, CoreConfig core_config, int64_t retry_ttl_ms) {
  std::unique_ptr<LogReplica> replica(
      new LogReplica(dir, core_config, retry_ttl_ms));
  if (absl::Status s = CreateDirectories(dir); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<DirLock>> lock = DirLock::Acquire(dir);
  if (!lock.ok()) return lock.status();
  replica->lock_ = *std::move(lock);
  absl::StatusOr<std::vector<std::string>> names = ListDirectory(dir);
  if (!names.ok()) return names.status();
  CoreSnapshot snapshot;
  ServerState server;
  absl::StatusOr<std::optional<SnapshotFileInfo>> newest =
      ReadNewestSnapshotFile(dir, *names, snapshot, server,
                             &replica->damaged_);
  if (!newest.ok()) return newest.status();
  if (newest->has_value()) {
    if (absl::Status s = replica->machine_->Restore(snapshot); !s.ok()) {
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
    absl::StatusOr<size_t> raised = ApplyRestartGrace(*grace, *machine_);
    if (!raised.ok()) {
      return absl::DataLossError(absl::StrCat(
          "restart grace at position ", position, ": ",
          raised.status().message()));
    }
  } else {
    // Contract errors are replayed as they happened on the leader.
    machine_->Apply(std::get<Operation>(*entry)).status().IgnoreError();
  }
  // Nobody here waits for events: the leader answered them.
  (void)machine_->TakeEvents();
  applied_ = position;
  return absl::OkStatus();
}

absl::Status LogReplica::WriteSnapshot() {
  if (applied_ == snapshot_position_) return absl::OkStatus();
  // The replay keeps applying after this: take its state and put a copy
  // back.
  ServerState server = server_.Take();
  server_.Restore(server);
  absl::StatusOr<SnapshotFileInfo> written = WriteSnapshotFile(
      dir_, machine_->Snapshot(), applied_, server, kClusterSnapshotsKept);
  if (!written.ok()) return written.status();
  snapshot_position_ = applied_;
  return absl::OkStatus();
}

absl::Status LogReplica::InstallSnapshot(const FetchedSnapshot& sent,
                                         LogPosition min_covered) {
  CoreSnapshot snapshot;
  ServerState server;
  absl::StatusOr<SnapshotFileInfo> info =
      DecodeSnapshotFileBytes(sent.bytes, "the received snapshot", &snapshot,
                              &server);
  if (!info.ok()) return info.status();
  if (info->covered != sent.covered ||
      info->payload_crc32c != sent.payload_crc32c) {
    return absl::DataLossError(absl::StrCat(
        "the received snapshot covers ", info->covered,
        " with payload checksum ", info->payload_crc32c,
        "; its sender announced ", sent.covered, " and ",
        sent.payload_crc32c));
  }
  if (info->covered < min_covered || info->covered <= applied_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the received snapshot covers positions 1..", info->covered,
        "; needed at least 1..", std::max(min_covered, applied_ + 1)));
  }
  auto machine = std::make_unique<StateMachine>(core_config_);
  if (absl::Status s = machine->Restore(snapshot); !s.ok()) {
    return absl::DataLossError(absl::StrCat(
        "the received snapshot at position ", info->covered,
        " is inconsistent: ", s.message()));
  }
  if (absl::Status s = WriteSnapshotFileBytes(dir_, info->covered, sent.bytes,
                                              kClusterSnapshotsKept);
      !s.ok()) {
    return s;
  }
  machine_ = std::move(machine);
  server_.Restore(std::move(server));
  applied_ = info->covered;
  snapshot_position_ = info->covered;
  return absl::OkStatus();
}

absl::Status LogReplica::CopyTo(StateMachine& machine, ServerState& server) {
  if (absl::Status s = machine.Restore(machine_->Snapshot()); !s.ok()) {
    return s;
  }
  server = server_.Take();
  server_.Restore(server);
  return absl::OkStatus();
}

}  // namespace leasekeeper::storage
