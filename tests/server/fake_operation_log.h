// FakeOperationLog: an in-memory storage::OperationLog whose durability the
// test controls. Entries are kept as plain data; nothing is durable until
// the test says so (MakeDurable), unless it lets every entry be durable at
// once (AutoDurable). Callbacks run on the thread that makes their record
// durable (the test's) or, for a record already durable, inline in
// OnDurable.
//
// Thread-safety: every method is thread-safe; callbacks run outside its
// mutex.
#ifndef LEASEKEEPER_TESTS_SERVER_FAKE_OPERATION_LOG_H_
#define LEASEKEEPER_TESTS_SERVER_FAKE_OPERATION_LOG_H_

#include <map>
#include <utility>
#include <variant>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "storage/operation_log.h"

namespace leasekeeper::testing {

class FakeOperationLog final : public storage::OperationLog {
 public:
  using LogPosition = storage::LogPosition;

  absl::StatusOr<LogPosition> Append(const Operation& operation) override {
    return AppendEntry(operation);
  }
  absl::StatusOr<LogPosition> Append(
      const storage::ServerRecord& record) override {
    return AppendEntry(record);
  }

  void OnDurable(LogPosition position, DurableCallback done) override {
    absl::Status status;
    {
      absl::MutexLock lock(&mu_);
      if (position > durable_ && failed_.ok()) {
        waiting_[position].push_back(std::move(done));
        return;
      }
      status = position <= durable_ ? absl::OkStatus() : failed_;
    }
    std::move(done)(status);
  }

  absl::Status WaitDurable(LogPosition position) override {
    absl::MutexLock lock(&mu_);
    auto done = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
      return durable_ >= position || !failed_.ok();
    };
    mu_.Await(absl::Condition(&done));
    return durable_ >= position ? absl::OkStatus() : failed_;
  }

  LogPosition last_position() const override {
    absl::MutexLock lock(&mu_);
    return entries_.size();
  }
  LogPosition durable_position() const override {
    absl::MutexLock lock(&mu_);
    return durable_;
  }
  absl::Status health() const override {
    absl::MutexLock lock(&mu_);
    return failed_;
  }

  absl::Status ReadFrom(LogPosition from,
                        const EntryVisitor& visit) const override {
    std::vector<storage::LogEntry> entries;
    {
      absl::MutexLock lock(&mu_);
      if (from > entries_.size()) return absl::OkStatus();
      entries.assign(entries_.begin() + static_cast<ptrdiff_t>(from - 1),
                     entries_.end());
    }
    for (size_t i = 0; i < entries.size(); ++i) {
      if (absl::Status s = visit(from + i, entries[i]); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  bool SnapshotDue() const override {
    absl::MutexLock lock(&mu_);
    return snapshot_due_;
  }
  // Keeps the snapshot (see snapshots()); stays due until the test says
  // otherwise.
  bool SubmitSnapshot(CoreSnapshot core, LogPosition covered,
                      storage::ServerState server) override {
    absl::MutexLock lock(&mu_);
    if (!snapshot_due_) return false;
    snapshots_.push_back(
        Snapshot{std::move(core), covered, std::move(server)});
    return true;
  }

  absl::Status Close() override {
    MakeDurable(last_position());
    return health();
  }

  // --- The test's controls.

  // Every entry appended from now on is durable at once (true), or waits
  // for MakeDurable (false, the default).
  void AutoDurable(bool on) {
    {
      absl::MutexLock lock(&mu_);
      auto_durable_ = on;
    }
    if (on) MakeDurable(last_position());
  }

  // Records 1..position are durable; runs their callbacks here.
  void MakeDurable(LogPosition position) {
    std::vector<DurableCallback> done;
    {
      absl::MutexLock lock(&mu_);
      position = std::min<LogPosition>(position, entries_.size());
      if (position <= durable_) return;
      durable_ = position;
      done = TakeWaitingLocked(position);
    }
    for (DurableCallback& callback : done) std::move(callback)(absl::OkStatus());
  }

  // Fails the log: waiting callbacks get `status`.
  void Fail(absl::Status status) {
    std::vector<DurableCallback> done;
    {
      absl::MutexLock lock(&mu_);
      failed_ = status;
      done = TakeWaitingLocked(~LogPosition{0});
    }
    for (DurableCallback& callback : done) std::move(callback)(status);
  }

  std::vector<storage::LogEntry> entries() const {
    absl::MutexLock lock(&mu_);
    return entries_;
  }
  // The server records among the entries, in order.
  std::vector<storage::ServerRecord> server_records() const {
    std::vector<storage::ServerRecord> records;
    for (const storage::LogEntry& entry : entries()) {
      if (const auto* r = std::get_if<storage::ServerRecord>(&entry)) {
        records.push_back(*r);
      }
    }
    return records;
  }

  // Whether SnapshotDue answers true (false by default), and the snapshots
  // submitted while it did.
  struct Snapshot {
    CoreSnapshot core;
    LogPosition covered = 0;
    storage::ServerState server;
  };
  void SetSnapshotDue(bool due) {
    absl::MutexLock lock(&mu_);
    snapshot_due_ = due;
  }
  std::vector<Snapshot> snapshots() const {
    absl::MutexLock lock(&mu_);
    return snapshots_;
  }

 private:
  template <typename Entry>
  absl::StatusOr<LogPosition> AppendEntry(const Entry& entry) {
    absl::MutexLock lock(&mu_);
    if (!failed_.ok()) return failed_;
    entries_.push_back(entry);
    if (auto_durable_) durable_ = entries_.size();
    return entries_.size();
  }

  std::vector<DurableCallback> TakeWaitingLocked(LogPosition position)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    std::vector<DurableCallback> done;
    auto end = waiting_.upper_bound(position);
    for (auto it = waiting_.begin(); it != end; ++it) {
      for (DurableCallback& cb : it->second) done.push_back(std::move(cb));
    }
    waiting_.erase(waiting_.begin(), end);
    return done;
  }

  mutable absl::Mutex mu_;
  std::vector<storage::LogEntry> entries_ ABSL_GUARDED_BY(mu_);
  LogPosition durable_ ABSL_GUARDED_BY(mu_) = 0;
  bool auto_durable_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status failed_ ABSL_GUARDED_BY(mu_);
  std::map<LogPosition, std::vector<DurableCallback>> waiting_
      ABSL_GUARDED_BY(mu_);
  bool snapshot_due_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<Snapshot> snapshots_ ABSL_GUARDED_BY(mu_);
};

}  // namespace leasekeeper::testing

#endif  // LEASEKEEPER_TESTS_SERVER_FAKE_OPERATION_LOG_H_
