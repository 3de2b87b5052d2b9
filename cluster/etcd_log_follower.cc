#include "cluster/etcd_log_follower.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "cluster/etcd_log.h"
#include "storage/snapshot_file.h"

namespace leasekeeper::storage {

EtcdLogFollower::EtcdLogFollower(EtcdClient& client, ClusterKeys keys,
                                 LogReplica& replica,
                                 uint64_t snapshot_every_records,
                                 SnapshotSource* source)
    : client_(client),
      keys_(std::move(keys)),
      replica_(replica),
      snapshot_every_(snapshot_every_records),
      source_(source) {
  if (!replica_.damaged_snapshots().empty()) {
    absl::MutexLock lock(&mu_);
    snapshot_status_ = absl::DataLossError(
        absl::StrCat("local snapshots skipped as damaged: ",
                     absl::StrJoin(replica_.damaged_snapshots(), "; ")));
  }
  Publish();
}

EtcdLogFollower::~EtcdLogFollower() { Stop(); }

void EtcdLogFollower::Start() {
  if (thread_.joinable()) return;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = false;
  }
  if (source_ != nullptr) source_->Resume();
  thread_ = std::thread([this] { Run(); });
}

void EtcdLogFollower::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    if (watch_context_ != nullptr) watch_context_->TryCancel();
  }
  if (source_ != nullptr) source_->Cancel();
  if (thread_.joinable()) thread_.join();
  Publish();
}

absl::Status EtcdLogFollower::status() const {
  absl::MutexLock lock(&mu_);
  return status_;
}

absl::Status EtcdLogFollower::snapshot_status() const {
  absl::MutexLock lock(&mu_);
  return snapshot_status_;
}

void EtcdLogFollower::SetStatus(absl::Status status) {
  absl::MutexLock lock(&mu_);
  status_ = std::move(status);
}

bool EtcdLogFollower::stopping() const {
  absl::MutexLock lock(&mu_);
  return stopping_;
}

void EtcdLogFollower::Publish() {
  applied_.store(replica_.applied());
  snapshot_.store(replica_.snapshot_position());
}

absl::Status EtcdLogFollower::CatchUp(EtcdClient& client,
                                      const ClusterKeys& keys,
                                      LogReplica& replica, int64_t* revision) {
  return ReadLogFrom(
      client, keys, replica.applied() + 1,
      [&](LogPosition position, absl::string_view bytes) {
        return replica.Apply(position, bytes);
      },
      revision);
}

absl::Status EtcdLogFollower::CatchUpBySnapshot(SnapshotSource& source,
                                                LogReplica& replica,
                                                LogPosition log_start) {
  const LogPosition needed =
      std::max(log_start > 0 ? log_start - 1 : 0, replica.applied() + 1);
  absl::StatusOr<FetchedSnapshot> fetched = source.Fetch(needed);
  if (!fetched.ok()) return fetched.status();
  return replica.InstallSnapshot(*fetched, needed);
}

absl::Status EtcdLogFollower::FetchSnapshotPastTrim() {
  absl::StatusOr<std::optional<LogPosition>> first =
      FirstLogPosition(client_, keys_);
  if (!first.ok()) return first.status();
  // An empty log trims nothing; ask for anything past this replica.
  const LogPosition log_start = first->value_or(replica_.applied() + 2);
  absl::Status installed = CatchUpBySnapshot(*source_, replica_, log_start);
  if (installed.ok()) installed_.fetch_add(1);
  return installed;
}

void EtcdLogFollower::Pause(std::chrono::milliseconds period) {
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(absl::Condition(&stopping_), absl::FromChrono(period));
}

void EtcdLogFollower::Run() {
  std::chrono::milliseconds backoff = kMinFetchBackoff;
  while (!stopping()) {
    int64_t revision = 0;
    absl::Status read = CatchUp(client_, keys_, replica_, &revision);
    Publish();
    if (absl::IsOutOfRange(read) && source_ != nullptr) {
      absl::Status installed = FetchSnapshotPastTrim();
      Publish();
      if (installed.ok()) {
        backoff = kMinFetchBackoff;
        continue;  // read the log on from the snapshot's position
      }
      if (stopping()) break;
      // Still OutOfRange (the node must not lead), naming why.
      SetStatus(absl::OutOfRangeError(
          absl::StrCat(read.message(), "; snapshot transfer failed: ",
                       installed.ToString())));
      Pause(backoff);
      backoff = std::min(backoff * 2, kMaxFetchBackoff);
      continue;
    }
    if (!read.ok()) {
      SetStatus(std::move(read));
      Pause(std::chrono::milliseconds(100));
      continue;
    }
    backoff = kMinFetchBackoff;
    SnapshotIfDue();
    Publish();
    SetStatus(absl::OkStatus());
    absl::Status watched = WatchFrom(revision + 1);
    if (!watched.ok() && !stopping()) SetStatus(std::move(watched));
  }
}

void EtcdLogFollower::SnapshotIfDue() {
  if (snapshot_every_ == 0 ||
      replica_.records_since_snapshot() < snapshot_every_) {
    return;
  }
  // A failed write is tried again after the next batch applied.
  absl::Status written = replica_.WriteSnapshot();
  absl::MutexLock lock(&mu_);
  snapshot_status_ = std::move(written);
}

absl::Status EtcdLogFollower::WatchFrom(int64_t revision) {
  grpc::ClientContext context;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return absl::OkStatus();
    watch_context_ = &context;
  }
  auto stream = client_.watch_stub().Watch(&context);
  etcdserverpb::WatchRequest request;
  etcdserverpb::WatchCreateRequest* create = request.mutable_create_request();
  create->set_key(keys_.log_prefix());
  create->set_range_end(PrefixRangeEnd(keys_.log_prefix()));
  create->set_start_revision(revision);
  // Deletions are the leader trimming what every member has snapshotted.
  create->add_filters(etcdserverpb::WatchCreateRequest::NODELETE);
  absl::Status result;
  if (stream->Write(request)) {
    etcdserverpb::WatchResponse response;
    while (result.ok() && stream->Read(&response)) {
      if (response.canceled() || response.compact_revision() != 0) {
        result = absl::UnavailableError(absl::StrCat(
            "etcd watch ended: ", response.cancel_reason()));
        break;
      }
      for (const mvccpb::Event& event : response.events()) {
        std::optional<LogPosition> first = keys_.LogPositionOf(event.kv().key());
        if (!first.has_value()) continue;
        if (*first != replica_.applied() + 1) {
          // A batch this follower did not expect next: read instead.
          result = absl::OkStatus();
          context.TryCancel();
          break;
        }
        absl::StatusOr<std::vector<absl::string_view>> records =
            DecodeBatch(event.kv().value());
        if (!records.ok()) {
          result = records.status();
          break;
        }
        for (size_t i = 0; i < records->size() && result.ok(); ++i) {
          result = replica_.Apply(*first + i, (*records)[i]);
        }
      }
      if (result.ok()) SnapshotIfDue();
      Publish();
    }
  }
  context.TryCancel();
  stream->Finish().IgnoreError();
  absl::MutexLock lock(&mu_);
  watch_context_ = nullptr;
  return result;
}

}  // namespace leasekeeper::storage
