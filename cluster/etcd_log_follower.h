// EtcdLogFollower: keeps a LogReplica (log_replica.h) up with the log in
// etcd, on its own thread: reads from the replica's position to the end,
// then watches, applying each batch as it commits, and writes a local
// snapshot every snapshot_every_records. A replica trimmed past is brought
// forward with a snapshot from its SnapshotSource (snapshot_source.h),
// retried with a backoff. ClusterNode runs one while the node follows.
// docs/design/cluster.md ("Followers").
//
// Thread-safety: Start/Stop from one controlling thread; applied(),
// snapshot_position(), snapshots_installed(), status() and
// snapshot_status() from any thread. The replica belongs to the follower
// thread between Start and Stop, to the caller otherwise.
#ifndef LEASEKEEPER_CLUSTER_ETCD_LOG_FOLLOWER_H_
#define LEASEKEEPER_CLUSTER_ETCD_LOG_FOLLOWER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "cluster/etcd_client.h"
#include "cluster/etcd_keys.h"
#include "cluster/log_replica.h"
#include "cluster/snapshot_source.h"

namespace leasekeeper::storage {

class EtcdLogFollower {
 public:
  static constexpr std::chrono::milliseconds kMinFetchBackoff{100};
  static constexpr std::chrono::milliseconds kMaxFetchBackoff{5000};

  // `client`, `replica` and `source` (null: no snapshot transfer) must
  // outlive the follower.
  EtcdLogFollower(EtcdClient& client, ClusterKeys keys, LogReplica& replica,
                  uint64_t snapshot_every_records,
                  SnapshotSource* source = nullptr);
  ~EtcdLogFollower();  // Stop()
  EtcdLogFollower(const EtcdLogFollower&) = delete;
  EtcdLogFollower& operator=(const EtcdLogFollower&) = delete;

  // Starts following (no-op if running).
  void Start();
  // Stops the thread (cancelling a snapshot transfer in progress) and
  // waits for it; the replica is the caller's again. Idempotent.
  void Stop();

  LogPosition applied() const { return applied_.load(); }
  LogPosition snapshot_position() const { return snapshot_.load(); }
  // Snapshots installed from the source since construction.
  uint64_t snapshots_installed() const { return installed_.load(); }
  // OK, or the last error reading or applying (etcd unreachable, trimmed:
  // OutOfRange, also while a snapshot transfer fails: its message names
  // the transfer's error; a record that does not decode: DataLoss);
  // FailedPrecondition until the first read of the log has ended, so that
  // a node that cannot know yet whether it was trimmed past does not lead.
  absl::Status status() const;
  // OK, or what is wrong with the local snapshots: DataLoss naming the
  // damaged files LogReplica::Open skipped (until a snapshot is written),
  // or the last write's I/O error (until one succeeds).
  absl::Status snapshot_status() const;

  // Brings `replica` forward over a trimmed log whose first record is at
  // `log_start`: fetches a snapshot covering at least
  // max(log_start - 1, replica.applied() + 1) from `source` and installs
  // it (LogReplica::InstallSnapshot, which checks that the bytes are what
  // the sender announced). What the follower thread does on OutOfRange;
  // static so a test can feed it a fake source. Outcomes: OK
  // (replica.applied() is the snapshot's position); the source's error;
  // InstallSnapshot's (FailedPrecondition for a snapshot not past the
  // trimmed point; DataLoss for bytes that do not check out or do not
  // match the announcement). Nothing is installed unless OK.
  static absl::Status CatchUpBySnapshot(SnapshotSource& source,
                                        LogReplica& replica,
                                        LogPosition log_start);

  // Reads the log from the replica's position to its end and applies it:
  // what the follower thread does, for the controlling thread while the
  // follower is stopped (a new leader's catch-up). Outcomes: see
  // ReadLogFrom and LogReplica::Apply.
  static absl::Status CatchUp(EtcdClient& client, const ClusterKeys& keys,
                              LogReplica& replica, int64_t* revision = nullptr);

 private:
  void Run();
  // Watches from `revision`; returns when the watch ends or a gap shows.
  absl::Status WatchFrom(int64_t revision);
  // A local snapshot once snapshot_every_ records were applied since the
  // last one; its outcome goes to snapshot_status().
  void SnapshotIfDue();
  // The follower's answer to OutOfRange: CatchUpBySnapshot from the log's
  // current first position.
  absl::Status FetchSnapshotPastTrim();
  // Waits `period` unless Stop comes first.
  void Pause(std::chrono::milliseconds period);
  void Publish();
  void SetStatus(absl::Status status);
  bool stopping() const;

  EtcdClient& client_;
  const ClusterKeys keys_;
  LogReplica& replica_;
  const uint64_t snapshot_every_;
  SnapshotSource* const source_;

  std::atomic<LogPosition> applied_{0};
  std::atomic<LogPosition> snapshot_{0};
  std::atomic<uint64_t> installed_{0};
  mutable absl::Mutex mu_;
  absl::Status status_ ABSL_GUARDED_BY(mu_) =
      absl::FailedPreconditionError("the log has not been read yet");
  absl::Status snapshot_status_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* watch_context_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::thread thread_;
};

}  // namespace leasekeeper::storage

#endif  // LEASEKEEPER_CLUSTER_ETCD_LOG_FOLLOWER_H_
