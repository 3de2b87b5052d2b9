#include "storage/etcd_log_follower.h"

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "storage/etcd_log.h"

namespace leasekeeper::storage {

EtcdLogFollower::EtcdLogFollower(EtcdClient& client, ClusterKeys keys,
                                 LogReplica& replica,
                                 uint64_t snapshot_every_records)
    : client_(client),
      keys_(std::move(keys)),
      replica_(replica),
      snapshot_every_(snapshot_every_records) {
  Publish();
}

EtcdLogFollower::~EtcdLogFollower() { Stop(); }

void EtcdLogFollower::Start() {
  if (thread_.joinable()) return;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = false;
  }
  thread_ = std::thread([this] { Run(); });
}

void EtcdLogFollower::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    if (watch_context_ != nullptr) watch_context_->TryCancel();
  }
  if (thread_.joinable()) thread_.join();
  Publish();
}

absl::Status EtcdLogFollower::status() const {
  absl::MutexLock lock(&mu_);
  return status_;
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

void EtcdLogFollower::Run() {
  while (!stopping()) {
    int64_t revision = 0;
    absl::Status read = CatchUp(client_, keys_, replica_, &revision);
    Publish();
    if (!read.ok()) {
      SetStatus(std::move(read));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    // A failed snapshot does not stay in status(): it is tried again
    // after the next batch the watch applies, which reports it.
    SnapshotIfDue().IgnoreError();
    Publish();
    SetStatus(absl::OkStatus());
    absl::Status watched = WatchFrom(revision + 1);
    if (!watched.ok() && !stopping()) SetStatus(std::move(watched));
  }
}

absl::Status EtcdLogFollower::SnapshotIfDue() {
  if (snapshot_every_ == 0 ||
      replica_.records_since_snapshot() < snapshot_every_) {
    return absl::OkStatus();
  }
  return replica_.WriteSnapshot();
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
      if (result.ok()) result = SnapshotIfDue();
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
