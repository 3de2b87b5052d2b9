#include "server/durable_state_machine.h"

#include <algorithm>
#include <utility>
#include <variant>

#include "spdlog/spdlog.h"

namespace leasekeeper::server {

DurableStateMachine::DurableStateMachine(CoreConfig config,
                                         ServerStateSource server_state)
    : state_(config), server_state_(std::move(server_state)) {}

absl::StatusOr<storage::RecoveryReport> DurableStateMachine::Open(
    const DurabilityConfig& durability, storage::ServerState* recovered) {
  if (log_ != nullptr) {
    return absl::FailedPreconditionError("an operation log is in use already");
  }
  if (durability.open_log) {
    // Another log (cluster mode's), opened and recovered by its opener.
    absl::StatusOr<DurabilityConfig::OpenedLog> opened =
        durability.open_log(state_, *recovered);
    if (!opened.ok()) return opened.status();
    durability_.log_ = opened->log.get();
    log_ = std::move(opened->log);
    clock_record_every_ms_ = opened->clock_record_every_ms;
    last_appended_tick_ = state_.table().now();
    return std::move(opened->recovery);
  }
  if (durability.data_dir.empty()) return storage::RecoveryReport{};
  storage::DurableStoreOptions options;
  options.fsync = durability.fsync;
  options.snapshot_every_records = durability.snapshot_every_records;
  options.restart_grace_ticks = durability.restart_grace_ms;
  options.recover_truncate = durability.recover_truncate;
  options.on_space_change = [this](const absl::Status& full) {
    durability_.ReportSpace(full);
  };
  options.on_snapshot_written = [this](const absl::Status& written) {
    durability_.ReportSnapshot(written);
  };
  absl::StatusOr<std::unique_ptr<storage::DurableStore>> store =
      storage::DurableStore::Open(durability.data_dir, options, state_,
                                  recovered);
  if (!store.ok()) return store.status();
  durability_.wal_ = store->get();
  durability_.log_ = store->get();
  log_ = *std::move(store);
  return durability_.wal_->recovery();
}

absl::Status DurableStateMachine::UseLog(
    std::unique_ptr<storage::OperationLog> log) {
  if (log_ != nullptr) {
    return absl::FailedPreconditionError("an operation log is in use already");
  }
  if (log->last_position() != 0) {
    return absl::FailedPreconditionError(
        "UseLog takes an empty log; recovery belongs to the log's opening");
  }
  durability_.log_ = log.get();
  log_ = std::move(log);
  return absl::OkStatus();
}

absl::StatusOr<Reply> DurableStateMachine::Apply(const Operation& op) {
  if (log_ == nullptr) return state_.Apply(op);
  if (!std::holds_alternative<op::Advance>(op.body)) {
    if (absl::Status admits = log_->AdmitsMutations(); !admits.ok()) {
      return admits;
    }
  }
  absl::StatusOr<Reply> reply = state_.Apply(op);
  if (!reply.ok()) return reply;  // refused: changed nothing but time
  absl::StatusOr<storage::LogPosition> position = log_->Append(op);
  if (!position.ok()) return reply;  // the log failed: see WhenDurable
  last_appended_tick_ = std::max(last_appended_tick_, op.at);
  MaybeSnapshot(*position);
  return reply;
}

Tick DurableStateMachine::NextClockRecord() const {
  // A failed or full log takes no mutations: no point in waking for one.
  if (log_ == nullptr || clock_record_every_ms_ <= 0 ||
      state_.table().held_lease_count() == 0 ||
      !log_->AdmitsMutations().ok()) {
    return kMaxTick;
  }
  return last_appended_tick_ + clock_record_every_ms_;
}

void DurableStateMachine::Log(const storage::ServerRecord& record) {
  // Also while the disk is full: the record describes a change already
  // made, so it waits in the log's memory for room (a failed log refuses
  // it, and the answer that depends on it fails anyway).
  if (log_ == nullptr) return;
  absl::StatusOr<storage::LogPosition> position = log_->Append(record);
  if (position.ok()) MaybeSnapshot(*position);
}

storage::LogPosition DurableStateMachine::last_position() const {
  return log_ == nullptr ? 0 : log_->last_position();
}

void DurableStateMachine::MaybeSnapshot(storage::LogPosition position) {
  if (!log_->SnapshotDue()) return;
  // In the same step as the append, so the snapshot is exactly records
  // 1..position; the log writes it on its own thread.
  log_->SubmitSnapshot(state_.Snapshot(), position, server_state_());
}

// ---------------------------------------------------------------------------
// Durability.

void DurableStateMachine::Durability::WhenDurable(
    storage::LogPosition position, DurableCallback done) {
  if (log_ == nullptr) {
    std::move(done)(absl::OkStatus());
    return;
  }
  if (absl::Status health = log_->health(); !health.ok()) {
    ReportFailure(health);
    std::move(done)(std::move(health));
    return;
  }
  // Inline when durable already (--fsync never, or a group commit that
  // covered it): no hand-off to the flusher thread on the answer's path.
  if (log_->durable_position() >= position) {
    std::move(done)(absl::OkStatus());
    return;
  }
  log_->OnDurable(position,
                  [this, done = std::move(done)](absl::Status durable) mutable {
                    if (!durable.ok()) ReportFailure(durable);
                    std::move(done)(std::move(durable));
                  });
}

absl::Status DurableStateMachine::Durability::WaitDurable(
    storage::LogPosition position) {
  if (log_ == nullptr) return absl::OkStatus();
  return log_->WaitDurable(position);
}

storage::LogPosition DurableStateMachine::Durability::last_position() const {
  return log_ == nullptr ? 0 : log_->last_position();
}

absl::Status DurableStateMachine::Durability::health() const {
  return log_ == nullptr ? absl::OkStatus() : log_->health();
}

absl::Status DurableStateMachine::Durability::AdmitsMutations() const {
  return log_ == nullptr ? absl::OkStatus() : log_->AdmitsMutations();
}

std::optional<storage::DurableStoreStats>
DurableStateMachine::Durability::stats() const {
  if (wal_ == nullptr) return std::nullopt;
  return wal_->stats();
}

void DurableStateMachine::Durability::Close() {
  if (log_ == nullptr) return;
  const absl::Status closed = log_->Close();
  if (wal_ == nullptr) return;
  const storage::DurableStoreStats stats = wal_->stats();
  // Group commit at a glance: how many records shared an fsync, and what
  // an fsync cost.
  spdlog::info(
      "event=storage_closed records={} groups={} fsyncs={} "
      "mean_group_records={:.1f} mean_fsync_us={:.0f} max_fsync_us={} "
      "snapshots={} last_position={} health=\"{}\"",
      stats.records_appended, stats.groups, stats.fsyncs,
      stats.groups == 0 ? 0.0
                        : static_cast<double>(stats.group_records_sum) /
                              static_cast<double>(stats.groups),
      stats.fsyncs == 0 ? 0.0
                        : static_cast<double>(stats.fsync_micros_sum) /
                              static_cast<double>(stats.fsyncs),
      stats.fsync_micros_max, stats.snapshots_written, stats.last_position,
      closed.ok() ? "ok" : std::string(closed.message()));
}

void DurableStateMachine::Durability::ReportSpace(const absl::Status& full) {
  if (full.ok()) {
    spdlog::info(
        "event=storage_space_recovered (the log is written again; mutations "
        "are served)");
  } else {
    spdlog::warn(
        "event=storage_full error=\"{}\" (mutations are refused with "
        "UNAVAILABLE; reads go on; retried every {} ms)",
        std::string(full.message()),
        storage::kOutOfSpaceRetryMs);
  }
  if (space_observer_) space_observer_(full);
}

void DurableStateMachine::Durability::ReportSnapshot(
    const absl::Status& written) {
  // Snapshots are rare (every --snapshot-every records), so one line per
  // failure is no flood; the first success after failures says so too.
  if (!written.ok()) {
    snapshot_failing_.store(true);
    spdlog::warn(
        "event=snapshot_failed error=\"{}\" (the log keeps every record; "
        "tried again after half an interval)",
        std::string(written.message()));
  } else if (snapshot_failing_.exchange(false)) {
    spdlog::info("event=snapshot_written_again");
  }
}

void DurableStateMachine::Durability::ReportFailure(
    const absl::Status& status) {
  if (failure_reported_.exchange(true)) return;
  spdlog::error(
      "event=storage_failed error=\"{}\" (every mutation is refused with "
      "UNAVAILABLE until leasekeeperd is restarted on a healthy disk)",
      std::string(status.message()));
  if (failure_observer_) failure_observer_(status);
}

}  // namespace leasekeeper::server
