// EtcdLogFollower: keeps a LogReplica (log_replica.h) up with the log in
// etcd (etcd_log.h), on its own thread: it reads the log from the
// replica's applied position to the end (ReadLogFrom), then watches the log
// prefix from the revision it read at, applying each new batch as it is
// committed. A gap, a broken watch or a compaction sends it back to
// reading. Every snapshot_every_records applied records it writes a local
// snapshot (LogReplica::WriteSnapshot), so the leader may trim the log
// behind it.
//
// A follower whose position was trimmed away (it was down while every
// live member snapshotted past it) cannot catch up from etcd: status()
// says OutOfRange until an operator restores its data dir from another
// member's snapshot (no snapshot transfer between nodes in this version).
//
// Thread-safety: Start/Stop from one controlling thread; applied(),
// snapshot_position() and status() from any thread. The replica belongs to
// the follower thread between Start and Stop, to the caller otherwise.
#ifndef LEASEKEEPER_STORAGE_ETCD_LOG_FOLLOWER_H_
#define LEASEKEEPER_STORAGE_ETCD_LOG_FOLLOWER_H_

#include <atomic>
#include <cstdint>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "storage/etcd_client.h"
#include "storage/etcd_keys.h"
#include "storage/log_replica.h"

namespace leasekeeper::storage {

class EtcdLogFollower {
 public:
  // `client` and `replica` must outlive the follower.
  EtcdLogFollower(EtcdClient& client, ClusterKeys keys, LogReplica& replica,
                  uint64_t snapshot_every_records);
  ~EtcdLogFollower();  // Stop()
  EtcdLogFollower(const EtcdLogFollower&) = delete;
  EtcdLogFollower& operator=(const EtcdLogFollower&) = delete;

  // Starts following (no-op if running).
  void Start();
  // Stops the thread and waits for it; the replica is the caller's again.
  // Idempotent.
  void Stop();

  LogPosition applied() const { return applied_.load(); }
  LogPosition snapshot_position() const { return snapshot_.load(); }
  // OK, or the last error reading or applying (etcd unreachable, trimmed:
  // OutOfRange, a record that does not decode: DataLoss).
  absl::Status status() const;

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
  // last one. Outcomes: OK (also when not due); LogReplica::WriteSnapshot's.
  absl::Status SnapshotIfDue();
  void Publish();
  void SetStatus(absl::Status status);
  bool stopping() const;

  EtcdClient& client_;
  const ClusterKeys keys_;
  LogReplica& replica_;
  const uint64_t snapshot_every_;

  std::atomic<LogPosition> applied_{0};
  std::atomic<LogPosition> snapshot_{0};
  mutable absl::Mutex mu_;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* watch_context_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::thread thread_;
};

}  // namespace leasekeeper::storage

#endif  // LEASEKEEPER_STORAGE_ETCD_LOG_FOLLOWER_H_
