#include "cluster/etcd_log.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cluster/log_replica.h"
#include "storage/operation_codec.h"
#include "storage/snapshot_file.h"

namespace leasekeeper::storage {
namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr LogPosition kNoSnapshotDue = std::numeric_limits<LogPosition>::max();

constexpr char kLeaseLapsed[] = "this node's etcd lease may have expired";

// Batches read per Range page.
constexpr int64_t kReadPageBatches = 256;

absl::Status NotLeader(absl::string_view why) {
  return absl::UnavailableError(absl::StrCat("not leader: ", why));
}

}  // namespace

absl::StatusOr<std::optional<std::string>> BatchKeyAtOrBefore(
    EtcdClient& client, const ClusterKeys& keys, LogPosition position) {
  etcdserverpb::RangeRequest holder;
  holder.set_key(keys.log_prefix());
  holder.set_range_end(keys.log(position + 1));
  holder.set_sort_order(etcdserverpb::RangeRequest::DESCEND);
  holder.set_sort_target(etcdserverpb::RangeRequest::KEY);
  holder.set_limit(1);
  holder.set_keys_only(true);
  absl::StatusOr<etcdserverpb::RangeResponse> found = client.Range(holder);
  if (!found.ok()) return found.status();
  if (found->kvs_size() == 0) return std::nullopt;
  return found->kvs(0).key();
}

absl::StatusOr<std::optional<LogPosition>> FirstLogPosition(
    EtcdClient& client, const ClusterKeys& keys) {
  etcdserverpb::RangeRequest any;
  any.set_key(keys.log_prefix());
  any.set_range_end(PrefixRangeEnd(keys.log_prefix()));
  any.set_limit(1);
  any.set_keys_only(true);
  absl::StatusOr<etcdserverpb::RangeResponse> first = client.Range(any);
  if (!first.ok()) return first.status();
  if (first->kvs_size() == 0) return std::nullopt;
  std::optional<LogPosition> position = keys.LogPositionOf(first->kvs(0).key());
  if (!position.has_value()) {
    return absl::DataLossError(
        absl::StrCat("not a log key: ", first->kvs(0).key()));
  }
  return *position;
}

absl::Status ReadLogFrom(
    EtcdClient& client, const ClusterKeys& keys, LogPosition from,
    const std::function<absl::Status(LogPosition, absl::string_view)>& visit,
    int64_t* revision) {
  const std::string end = PrefixRangeEnd(keys.log_prefix());
  absl::StatusOr<std::optional<std::string>> holder =
      BatchKeyAtOrBefore(client, keys, from);
  if (!holder.ok()) return holder.status();
  std::string start = keys.log(from);
  if (holder->has_value()) {
    start = **holder;
  } else if (from > 1) {
    // Nothing at or before `from`: either the log ends before it (then
    // nothing after it either) or its start was trimmed.
    absl::StatusOr<std::optional<LogPosition>> first =
        FirstLogPosition(client, keys);
    if (!first.ok()) return first.status();
    if (first->has_value()) {
      return absl::OutOfRangeError(absl::StrCat(
          "the log in etcd starts at position ", **first, ", after ", from,
          " (trimmed)"));
    }
  }
  int64_t read_at = 0;
  LogPosition expected = 0;  // the next batch's first position; 0: any
  bool more = true;
  while (more) {
    etcdserverpb::RangeRequest page;
    page.set_key(start);
    page.set_range_end(end);
    page.set_limit(kReadPageBatches);
    page.set_sort_order(etcdserverpb::RangeRequest::ASCEND);
    page.set_sort_target(etcdserverpb::RangeRequest::KEY);
    absl::StatusOr<etcdserverpb::RangeResponse> got = client.Range(page);
    if (!got.ok()) return got.status();
    read_at = got->header().revision();
    more = got->more();
    for (const mvccpb::KeyValue& kv : got->kvs()) {
      std::optional<LogPosition> first = keys.LogPositionOf(kv.key());
      if (!first.has_value()) continue;
      if (expected != 0 && *first != expected) {
        return absl::DataLossError(absl::StrCat(
            "log batch at position ", *first, " where ", expected,
            " was expected"));
      }
      absl::StatusOr<std::vector<absl::string_view>> records =
          DecodeBatch(kv.value());
      if (!records.ok()) {
        return absl::DataLossError(absl::StrCat(
            kv.key(), ": ", records.status().message()));
      }
      if (expected == 0 && *first > from) {
        return absl::OutOfRangeError(absl::StrCat(
            "the log in etcd starts at position ", *first, ", after ", from,
            " (trimmed)"));
      }
      for (size_t i = 0; i < records->size(); ++i) {
        const LogPosition position = *first + i;
        if (position < from) continue;
        if (absl::Status s = visit(position, (*records)[i]); !s.ok()) return s;
      }
      expected = *first + records->size();
      start = kv.key() + std::string(1, '\0');
    }
  }
  if (revision != nullptr) *revision = read_at;
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<EtcdLog>> EtcdLog::Open(EtcdClient& client,
                                                       EtcdLease& lease,
                                                       EtcdLogOptions options) {
  if (options.cluster.empty() || options.epoch <= 0 ||
      options.next_position == 0) {
    return absl::InvalidArgumentError(
        "an etcd log needs a cluster, an epoch and a next position");
  }
  std::unique_ptr<EtcdLog> log(new EtcdLog(client, lease, std::move(options)));
  log->appender_ = std::thread([l = log.get()] { l->AppendLoop(); });
  log->snapshotter_ = std::thread([l = log.get()] { l->SnapshotLoop(); });
  return log;
}

EtcdLog::EtcdLog(EtcdClient& client, EtcdLease& lease, EtcdLogOptions options)
    : client_(client),
      lease_(lease),
      options_(std::move(options)),
      keys_(options_.cluster),
      next_position_(options_.next_position),
      durable_(options_.next_position - 1),
      gathering_(options_.max_linger, options_.max_batch_bytes),
      snapshot_position_(options_.snapshot_position) {
  absl::MutexLock lock(&mu_);
  PublishLocked();
}

void EtcdLog::PublishLocked() {
  published_last_.store(next_position_ - 1);
  published_durable_.store(durable_);
  published_failed_.store(!failed_.ok());
  const bool due_ever = options_.snapshot_every_records > 0 &&
                        !snapshot_busy_ && failed_.ok();
  published_snapshot_due_at_.store(
      due_ever ? snapshot_position_ + options_.snapshot_every_records
               : kNoSnapshotDue);
}

EtcdLog::~EtcdLog() { Close().IgnoreError(); }

absl::Status EtcdLog::LeaseHealth() const {
  return lease_.Valid() ? absl::OkStatus() : NotLeader(kLeaseLapsed);
}

absl::Status EtcdLog::HealthLocked() const {
  if (!failed_.ok()) return failed_;
  return LeaseHealth();
}

absl::Status EtcdLog::health() const {
  if (published_failed_.load()) {
    absl::ReaderMutexLock lock(&mu_);
    return failed_;
  }
  return LeaseHealth();
}

absl::StatusOr<LogPosition> EtcdLog::AppendEncoded(std::string record) {
  if (record.size() > kMaxLogRecordBytes) {
    return absl::InvalidArgumentError("log record too large");
  }
  absl::MutexLock lock(&mu_);
  if (closing_) return absl::FailedPreconditionError("the log is closed");
  if (absl::Status s = HealthLocked(); !s.ok()) return s;
  pending_bytes_ += record.size();
  pending_.push_back(std::move(record));
  ++stats_.records;
  const LogPosition position = next_position_++;
  PublishLocked();
  return position;
}

absl::StatusOr<LogPosition> EtcdLog::Append(const Operation& operation) {
  std::string record;
  EncodeOperation(operation, record);
  return AppendEncoded(std::move(record));
}

absl::StatusOr<LogPosition> EtcdLog::Append(const ServerRecord& record) {
  std::string bytes;
  EncodeServerRecord(record, bytes);
  return AppendEncoded(std::move(bytes));
}

absl::StatusOr<LogPosition> EtcdLog::Append(const RestartGrace& grace) {
  std::string bytes;
  EncodeRestartGrace(grace, bytes);
  return AppendEncoded(std::move(bytes));
}

void EtcdLog::OnDurable(LogPosition position, DurableCallback done) {
  absl::Status status;
  {
    absl::MutexLock lock(&mu_);
    if (position > durable_ && failed_.ok() && !appender_done_) {
      waiting_[position].push_back(std::move(done));
      return;
    }
    status = position <= durable_ ? absl::OkStatus()
             : !failed_.ok()      ? failed_
                                  : absl::FailedPreconditionError(
                                   "the log closed before the record was "
                                   "durable");
  }
  std::move(done)(std::move(status));
}

absl::Status EtcdLog::WaitDurable(LogPosition position) {
  absl::MutexLock lock(&mu_);
  auto settled = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return position <= durable_ || !failed_.ok() || appender_done_;
  };
  mu_.Await(absl::Condition(&settled));
  if (position <= durable_) return absl::OkStatus();
  if (!failed_.ok()) return failed_;
  return absl::FailedPreconditionError("the log closed first");
}

LogPosition EtcdLog::last_position() const { return published_last_.load(); }

LogPosition EtcdLog::durable_position() const {
  return published_durable_.load();
}

absl::Status EtcdLog::ReadFrom(LogPosition from,
                               const EntryVisitor& visit) const {
  return ReadLogFrom(
      client_, keys_, from,
      [&](LogPosition position, absl::string_view bytes) -> absl::Status {
        absl::StatusOr<LogEntry> entry = DecodeLogEntry(bytes);
        if (!entry.ok()) return entry.status();
        return visit(position, *entry);
      });
}

bool EtcdLog::SnapshotDue() const {
  return published_last_.load() >= published_snapshot_due_at_.load();
}

bool EtcdLog::SubmitSnapshot(CoreSnapshot core, LogPosition covered,
                             ServerState server) {
  absl::MutexLock lock(&mu_);
  if (snapshot_busy_ || covered <= snapshot_position_ ||
      covered >= next_position_ || closing_) {
    return false;
  }
  snapshot_busy_ = true;
  snapshot_job_ = SnapshotJob{std::move(core), covered, std::move(server)};
  PublishLocked();
  return true;
}

void EtcdLog::Fail(absl::Status status) {
  std::vector<DurableCallback> callbacks;
  {
    absl::MutexLock lock(&mu_);
    if (failed_.ok()) failed_ = std::move(status);
    for (auto& [position, list] : waiting_) {
      for (DurableCallback& done : list) callbacks.push_back(std::move(done));
    }
    waiting_.clear();
    pending_.clear();
    pending_bytes_ = 0;
    status = failed_;
    PublishLocked();
  }
  for (DurableCallback& done : callbacks) std::move(done)(status);
}

absl::Status EtcdLog::CommitBatch(LogPosition first,
                                  const std::string& value) {
  const std::string leader_key = keys_.leader();
  const std::string batch_key = keys_.log(first);
  etcdserverpb::TxnRequest txn;
#ifndef LEASEKEEPER_FAILPOINT_UNGUARDED_APPEND
  CompareCreateRevision(txn, leader_key, options_.epoch);
  CompareCreateRevision(txn, batch_key, 0);  // the key is new
#endif  // else FAILPOINT unguarded-append: a blind put (etcd_log.h)
  etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
  put->set_key(batch_key);
  put->set_value(value);
  txn.add_failure()->mutable_request_range()->set_key(leader_key);
  etcdserverpb::RangeRequest* batch_range =
      txn.add_failure()->mutable_request_range();
  batch_range->set_key(batch_key);
  batch_range->set_keys_only(true);

  bool retried = false;
  while (true) {
    // Never send what this node may no longer send as leader.
    if (absl::Status lease = LeaseHealth(); !lease.ok()) return lease;
    const SteadyClock::time_point start = SteadyClock::now();
    absl::StatusOr<etcdserverpb::TxnResponse> response =
        client_.Txn(txn, options_.txn_timeout);
    if (!response.ok()) {
      // The answer is lost, not the transaction's fate: try again (the
      // compare on the batch key makes a second commit impossible).
      retried = true;
      {
        absl::MutexLock lock(&mu_);
        ++stats_.retries;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    const uint64_t micros = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(
            SteadyClock::now() - start)
            .count());
    {
      absl::MutexLock lock(&mu_);
      size_t i = 0;
      while (i < EtcdLogStats::kTxnMicrosBounds.size() &&
             micros > EtcdLogStats::kTxnMicrosBounds[i]) {
        ++i;
      }
      ++stats_.txn_micros[i];
      stats_.txn_micros_sum += micros;
    }
    if (response->succeeded()) return absl::OkStatus();
    // Why the compare failed.
    const etcdserverpb::RangeResponse& leader_now =
        response->responses(0).response_range();
    const etcdserverpb::RangeResponse& batch_now =
        response->responses(1).response_range();
    const bool still_ours = leader_now.kvs_size() == 1 &&
                            leader_now.kvs(0).create_revision() ==
                                options_.epoch;
    if (still_ours && batch_now.kvs_size() == 1 && retried) {
      return absl::OkStatus();  // an earlier attempt committed it
    }
    if (!still_ours) {
      return NotLeader(absl::StrCat(
          "the leader key no longer has this node's epoch ", options_.epoch,
          " (deposed)"));
    }
    return absl::DataLossError(absl::StrCat(
        "log key ", batch_key, " exists already in epoch ", options_.epoch));
  }
}

void EtcdLog::AppendLoop() {
  while (true) {
    AppendBatch batch;
    AppenderStep step;
    {
      absl::MutexLock lock(&mu_);
      step = NextBatchLocked(batch);
    }
    if (step == AppenderStep::kStop) break;
    if (step == AppenderStep::kIdle) continue;
    if (step == AppenderStep::kLeaseLapsed) {
      // The lease lapsed while idle: fail now, so that health() and every
      // later call learn it from the log too.
      Fail(NotLeader(kLeaseLapsed));
      break;
    }
    if (absl::Status committed = CommitAndAnswer(batch); !committed.ok()) {
      Fail(std::move(committed));
      break;
    }
  }
  AnswerTheRestOnExit();
}

EtcdLog::AppenderStep EtcdLog::NextBatchLocked(AppendBatch& batch) {
  auto ready = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return !pending_.empty() || closing_ || !failed_.ok();
  };
  // Wakes at least every 50 ms to notice a lapsed lease.
  mu_.AwaitWithTimeout(absl::Condition(&ready), absl::Milliseconds(50));
  if (!pending_.empty() && !closing_) {
    auto gathered = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
      return closing_ || !failed_.ok() ||
             gathering_.CutNow(pending_.size(), pending_bytes_,
                               SteadyClock::now());
    };
    const SteadyClock::time_point linger_end = gathering_.LingerEnd();
    const SteadyClock::time_point now = SteadyClock::now();
    if (!gathered() && linger_end > now) {
      mu_.AwaitWithTimeout(absl::Condition(&gathered),
                           absl::FromChrono(linger_end - now));
    }
  }
  if (!failed_.ok() || (pending_.empty() && closing_)) {
    return AppenderStep::kStop;
  }
  if (pending_.empty()) {
    return lease_.Valid() ? AppenderStep::kIdle : AppenderStep::kLeaseLapsed;
  }
  batch.first = durable_ + 1;
  size_t bytes = 0;
  size_t taken = 0;
  while (taken < pending_.size() &&
         (taken == 0 ||
          bytes + pending_[taken].size() <= options_.max_batch_bytes)) {
    bytes += pending_[taken].size();
    ++taken;
  }
  pending_bytes_ -= bytes;
  batch.records.assign(std::make_move_iterator(pending_.begin()),
                       std::make_move_iterator(pending_.begin() + taken));
  pending_.erase(pending_.begin(), pending_.begin() + taken);
  return AppenderStep::kCommit;
}

absl::Status EtcdLog::CommitAndAnswer(const AppendBatch& batch) {
  const SteadyClock::time_point commit_start = SteadyClock::now();
  absl::Status committed =
      CommitBatch(batch.first, EncodeBatch(batch.records));
  if (!committed.ok()) return committed;
  std::vector<DurableCallback> callbacks;
  size_t pending_at_commit = 0;  // records pending when the commit ended
  {
    absl::MutexLock lock(&mu_);
    durable_ = batch.first + batch.records.size() - 1;
    ++stats_.transactions;
    PublishLocked();
    auto end = waiting_.upper_bound(durable_);
    for (auto it = waiting_.begin(); it != end; ++it) {
      for (DurableCallback& done : it->second) {
        callbacks.push_back(std::move(done));
      }
    }
    waiting_.erase(waiting_.begin(), end);
    pending_at_commit = pending_.size();
  }
  const SteadyClock::duration took = SteadyClock::now() - commit_start;
  for (DurableCallback& done : callbacks) std::move(done)(absl::OkStatus());
  // The linger counts from the last answer sent, not from the commit:
  // sending the answers can take a good part of it.
  absl::MutexLock lock(&mu_);
  gathering_.Committed(callbacks.size(), pending_at_commit, took,
                       SteadyClock::now());
  return absl::OkStatus();
}

void EtcdLog::AnswerTheRestOnExit() {
  std::vector<DurableCallback> callbacks;
  absl::Status status;
  {
    absl::MutexLock lock(&mu_);
    appender_done_ = true;
    status = failed_.ok() ? absl::FailedPreconditionError(
                                "the log closed before the record was durable")
                          : failed_;
    for (auto& [position, list] : waiting_) {
      for (DurableCallback& done : list) callbacks.push_back(std::move(done));
    }
    waiting_.clear();
  }
  for (DurableCallback& done : callbacks) std::move(done)(status);
}

void EtcdLog::SnapshotLoop() {
  while (true) {
    SnapshotJob job;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
        return snapshot_job_.has_value() || appender_done_;
      };
      mu_.Await(absl::Condition(&ready));
      if (!snapshot_job_.has_value()) return;
      job = *std::move(snapshot_job_);
      snapshot_job_.reset();
    }
    // Only durable records may be in a snapshot: a node that restarts from
    // it must hold nothing the log does not.
    absl::Status durable = WaitDurable(job.covered);
    absl::Status written = durable;
    if (durable.ok() && !options_.snapshot_dir.empty()) {
      written = WriteSnapshotFile(options_.snapshot_dir, job.core,
                                  job.covered, job.server,
                                  kClusterSnapshotsKept)
                    .status();
    }
    absl::MutexLock lock(&mu_);
    if (durable.ok() && written.ok() && !options_.snapshot_dir.empty()) {
      snapshot_position_ = job.covered;
    }
    // A failed write is tried again at the next due snapshot; until then
    // the member's reported snapshot stays behind and holds the trim back.
    if (durable.ok()) stats_.snapshot_status = written;
    snapshot_busy_ = false;
    PublishLocked();
  }
}

absl::Status EtcdLog::Close() {
  absl::MutexLock close_lock(&close_mu_);
  if (closed_) return health();
  closed_ = true;
  {
    absl::MutexLock lock(&mu_);
    closing_ = true;
  }
  if (appender_.joinable()) appender_.join();
  if (snapshotter_.joinable()) snapshotter_.join();
  absl::MutexLock lock(&mu_);
  return failed_;
}

EtcdLogStats EtcdLog::stats() const {
  absl::ReaderMutexLock lock(&mu_);
  EtcdLogStats stats = stats_;
  stats.last_position = next_position_ - 1;
  stats.durable_position = durable_;
  stats.snapshot_position = snapshot_position_;
  return stats;
}

}  // namespace leasekeeper::storage
