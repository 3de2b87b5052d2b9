// EtcdLog: the replicated OperationLog (storage/operation_log.h) of a
// cluster node while it leads. Records go to etcd in batches under
// /leasekeeper/<cluster>/log/ (etcd_keys.h), one transaction per batch, each
// guarded by the leader key's create revision (this leadership's epoch), so
// a deposed leader can never append. A record is durable, and its callback
// runs, only once etcd answered that its batch committed. When the lease
// can no longer be trusted or a compare fails, the log fails for good
// (Unavailable "not leader: ..."). The transaction, lost answers, batching
// and the fault suite's failpoint: docs/design/cluster.md.
//
// Thread-safety: every method is thread-safe. Callbacks run on the appender
// thread (or inline in OnDurable when already durable), never under the
// log's mutex; they must not call WaitDurable or Close.
//
// Invariants: those of OperationLog, and (except in the failpoint build)
//  1. A record is durable only if a transaction guarded by this epoch put
//     the batch holding it into etcd.
//  2. Batches are contiguous: the batch at first position f with n records
//     is followed by the batch at f + n.
#ifndef LEASEKEEPER_CLUSTER_ETCD_LOG_H_
#define LEASEKEEPER_CLUSTER_ETCD_LOG_H_

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "cluster/batch_gathering.h"
#include "cluster/etcd_client.h"
#include "cluster/etcd_keys.h"
#include "cluster/etcd_lease.h"
#include "storage/operation_log.h"
#include "storage/restart_grace.h"

namespace leasekeeper::storage {

struct EtcdLogOptions {
  std::string cluster;
  // The leader key's create revision (the epoch of this leadership).
  int64_t epoch = 0;
  // The first position this leadership appends: the log's end + 1.
  LogPosition next_position = 1;
  // A batch is cut at this size (etcd refuses requests over its
  // --max-request-bytes, 1.5 MiB by default).
  size_t max_batch_bytes = size_t{1} << 20;
  // The longest the appender waits after a commit for the callers it
  // answered (batch_gathering.h); zero: cut whatever is pending at once.
  std::chrono::microseconds max_linger{3000};
  // Deadline of one transaction attempt.
  std::chrono::milliseconds txn_timeout{500};
  // Local snapshots (see above); 0: never due.
  uint64_t snapshot_every_records = 200'000;
  std::string snapshot_dir;
  // The newest local snapshot when the leadership began.
  LogPosition snapshot_position = 0;
};

struct EtcdLogStats {
  static constexpr std::array<uint64_t, 12> kTxnMicrosBounds = {
      250, 500, 1000, 2000, 4000, 8000, 16000, 32000, 64000, 128000, 256000,
      1000000};
  uint64_t records = 0;       // appended since Open
  uint64_t transactions = 0;  // successful batch transactions
  uint64_t retries = 0;       // attempts whose answer was lost
  LogPosition last_position = 0;
  LogPosition durable_position = 0;
  LogPosition snapshot_position = 0;
  // The last snapshot write's outcome (OK before the first).
  absl::Status snapshot_status;
  // Per-bucket counts of transaction latencies (not cumulative).
  std::array<uint64_t, kTxnMicrosBounds.size() + 1> txn_micros{};
  uint64_t txn_micros_sum = 0;
};

class EtcdLog final : public OperationLog {
 public:
  // Starts the appender and snapshot threads. `client` and `lease` must
  // outlive the log. Outcomes: the log; InvalidArgument for an empty
  // cluster or epoch 0.
  static absl::StatusOr<std::unique_ptr<EtcdLog>> Open(EtcdClient& client,
                                                       EtcdLease& lease,
                                                       EtcdLogOptions options);
  ~EtcdLog() override;  // Close()
  EtcdLog(const EtcdLog&) = delete;
  EtcdLog& operator=(const EtcdLog&) = delete;

  absl::StatusOr<LogPosition> Append(const Operation& operation) override;
  absl::StatusOr<LogPosition> Append(const ServerRecord& record) override;
  // The failover grace of a new leadership (restart_grace.h), appended
  // like any record.
  absl::StatusOr<LogPosition> Append(const RestartGrace& grace);

  void OnDurable(LogPosition position, DurableCallback done) override;
  absl::Status WaitDurable(LogPosition position) override;
  LogPosition last_position() const override;
  LogPosition durable_position() const override;
  absl::Status health() const override;
  // Reads etcd (ReadLogFrom below).
  absl::Status ReadFrom(LogPosition from,
                        const EntryVisitor& visit) const override;
  bool SnapshotDue() const override;
  // Writes a local snapshot file (snapshot_file.h) into the data dir on the
  // snapshot thread once record `covered` is durable; the newest
  // kClusterSnapshotsKept (log_replica.h) are kept. False (and dropped)
  // while one is being written, after Close, or when `covered` is not in
  // (last snapshot, last_position()]. A failed write shows in
  // stats().snapshot_status until the next one.
  bool SubmitSnapshot(CoreSnapshot core, LogPosition covered,
                      ServerState server) override;
  // Appends what is pending (while the lease is valid), stops the threads.
  absl::Status Close() override;

  EtcdLogStats stats() const;

 private:
  struct SnapshotJob {
    CoreSnapshot core;
    LogPosition covered = 0;
    ServerState server;
  };

  EtcdLog(EtcdClient& client, EtcdLease& lease, EtcdLogOptions options);
  absl::StatusOr<LogPosition> AppendEncoded(std::string record);
  // The appender thread: takes a batch, commits it, answers its callers,
  // until the log closes or fails.
  void AppendLoop();
  // Records taken for one transaction, from position `first` on.
  struct AppendBatch {
    LogPosition first = 0;
    std::vector<std::string> records;
  };
  enum class AppenderStep {
    kStop,         // failed, or closing with nothing pending
    kIdle,         // nothing pending, the lease valid: wait again
    kLeaseLapsed,  // nothing pending and the lease lapsed
    kCommit,       // `batch` holds records to commit
  };
  // Waits (at most 50 ms, then for the batch's linger) for records and
  // takes at most max_batch_bytes of them into `batch`.
  AppenderStep NextBatchLocked(AppendBatch& batch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Commits `batch`, then answers the callers waiting for it and tells the
  // gathering. Outcomes: OK; CommitBatch's error (nothing answered).
  absl::Status CommitAndAnswer(const AppendBatch& batch)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Marks the appender done and answers every caller still waiting with
  // the failure (or FailedPrecondition after Close).
  void AnswerTheRestOnExit() ABSL_LOCKS_EXCLUDED(mu_);
  void SnapshotLoop();
  // One batch, retried while the lease is valid. OK once durable.
  absl::Status CommitBatch(LogPosition first, const std::string& value);
  void Fail(absl::Status status);
  // OK while this node's etcd lease is valid on its own clock.
  absl::Status LeaseHealth() const;
  absl::Status HealthLocked() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Stores the published view below from the state under mu_; called
  // wherever that state changes.
  void PublishLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  EtcdClient& client_;
  EtcdLease& lease_;
  const EtcdLogOptions options_;
  const ClusterKeys keys_;

  mutable absl::Mutex mu_;
  LogPosition next_position_ ABSL_GUARDED_BY(mu_);
  LogPosition durable_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> pending_ ABSL_GUARDED_BY(mu_);  // from durable_+1
  size_t pending_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  BatchGathering gathering_ ABSL_GUARDED_BY(mu_);
  std::map<LogPosition, std::vector<DurableCallback>> waiting_
      ABSL_GUARDED_BY(mu_);
  absl::Status failed_ ABSL_GUARDED_BY(mu_);
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  bool appender_done_ ABSL_GUARDED_BY(mu_) = false;
  LogPosition snapshot_position_ ABSL_GUARDED_BY(mu_);
  std::optional<SnapshotJob> snapshot_job_ ABSL_GUARDED_BY(mu_);
  bool snapshot_busy_ ABSL_GUARDED_BY(mu_) = false;
  // Counters; stats() adds the positions from the fields above.
  EtcdLogStats stats_ ABSL_GUARDED_BY(mu_);

  // The published view: what last_position, durable_position, health and
  // SnapshotDue read without mu_. The core calls them several times per
  // operation, while the appender waits on mu_ with a condition that every
  // unlock evaluates; a stale value only delays a snapshot by a record or
  // sends a caller to OnDurable, which decides under mu_.
  std::atomic<LogPosition> published_last_{0};
  std::atomic<LogPosition> published_durable_{0};
  std::atomic<bool> published_failed_{false};
  // A snapshot is due once published_last_ reaches it (the maximum: never).
  std::atomic<LogPosition> published_snapshot_due_at_{0};

  absl::Mutex close_mu_;
  bool closed_ ABSL_GUARDED_BY(close_mu_) = false;
  std::thread appender_;
  std::thread snapshotter_;
};

// Reads the log in etcd from position `from` on, in order, calling
// visit(position, encoded entry) for each record, at one consistent
// revision per page. Sets *revision (unless null) to the etcd revision of
// the last page read (a watch from revision + 1 misses nothing).
// Outcomes: OK (the end of the log was reached); OutOfRange if records at
// or after `from` were trimmed away (a snapshot is needed); DataLoss for a
// batch that does not decode or a gap between batches; etcd's error; the
// first non-OK of visit. REQUIRES: from >= 1.
absl::Status ReadLogFrom(
    EtcdClient& client, const ClusterKeys& keys, LogPosition from,
    const std::function<absl::Status(LogPosition, absl::string_view)>& visit,
    int64_t* revision = nullptr);

// The key of the last batch whose first position is at or before
// `position`: the batch holding `position` if the log reaches it.
// Outcomes: the key; nullopt if every batch starts after `position` (or
// there is none); etcd's error. Cost: one keys-only Range.
absl::StatusOr<std::optional<std::string>> BatchKeyAtOrBefore(
    EtcdClient& client, const ClusterKeys& keys, LogPosition position);

// The first position of the first batch in etcd: records before it were
// trimmed. Outcomes: the position; nullopt for an empty log; DataLoss for
// a key under the log prefix that is not a log key; etcd's error.
absl::StatusOr<std::optional<LogPosition>> FirstLogPosition(
    EtcdClient& client, const ClusterKeys& keys);

}  // namespace leasekeeper::storage

#endif  // LEASEKEEPER_CLUSTER_ETCD_LOG_H_
