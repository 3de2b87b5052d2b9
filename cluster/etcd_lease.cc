#include "cluster/etcd_lease.h"

#include <algorithm>

namespace leasekeeper::storage {

absl::StatusOr<std::unique_ptr<EtcdLease>> EtcdLease::Grant(
    EtcdClient& client, EtcdLeaseOptions options) {
  const Clock::time_point sent = Clock::now();
  absl::StatusOr<etcdserverpb::LeaseGrantResponse> granted =
      client.LeaseGrant(options.ttl.count());
  if (!granted.ok()) return granted.status();
  // etcd may raise the TTL (see EtcdLeaseOptions::ttl), never lower it: the
  // requested one is the safe figure.
  const Clock::time_point valid_until = sent + options.ttl - options.margin;
  std::unique_ptr<EtcdLease> lease(
      new EtcdLease(client, options, granted->id(), valid_until));
  lease->sender_ = std::thread([l = lease.get()] { l->SendLoop(); });
  return lease;
}

EtcdLease::EtcdLease(EtcdClient& client, EtcdLeaseOptions options, int64_t id,
                     Clock::time_point valid_until)
    : client_(client),
      options_(options),
      id_(id),
      valid_until_(valid_until) {}

EtcdLease::~EtcdLease() {
  bool revoke = false;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    revoke = !lost_;
    if (stream_context_ != nullptr) stream_context_->TryCancel();
  }
  if (sender_.joinable()) sender_.join();
  if (revoke) client_.LeaseRevoke(id_).IgnoreError();
}

bool EtcdLease::Valid() const {
#ifdef LEASEKEEPER_FAILPOINT_UNGUARDED_APPEND
  return true;  // FAILPOINT unguarded-append: never self-fence (etcd_lease.h)
#else
  absl::MutexLock lock(&mu_);
  return !lost_ && Clock::now() < valid_until_;
#endif
}

void EtcdLease::ReadLoop(
    grpc::ClientReaderWriter<etcdserverpb::LeaseKeepAliveRequest,
                             etcdserverpb::LeaseKeepAliveResponse>* stream) {
  etcdserverpb::LeaseKeepAliveResponse response;
  while (stream->Read(&response)) {
    absl::MutexLock lock(&mu_);
    if (sent_.empty()) continue;
    const Clock::time_point sent = sent_.front();
    sent_.pop_front();
    if (response.ttl() <= 0) {
      // The lease is gone on etcd's side (expired or revoked).
      lost_ = true;
      continue;
    }
    // The smaller of etcd's TTL and ours (etcd may have raised it; ours is
    // what the cluster was tuned for).
    const auto ttl = std::min<std::chrono::milliseconds>(
        std::chrono::seconds(response.ttl()), options_.ttl);
    valid_until_ = std::max(valid_until_, sent + ttl - options_.margin);
  }
}

void EtcdLease::SendLoop() {
  const auto period = std::chrono::duration_cast<std::chrono::milliseconds>(
                          options_.ttl) /
                      4;
  while (true) {
    grpc::ClientContext context;
    auto stream = client_.lease_stub().LeaseKeepAlive(&context);
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) {
        context.TryCancel();
      }
      stream_context_ = &context;
      sent_.clear();
    }
    std::thread reader([this, s = stream.get()] { ReadLoop(s); });
    bool broken = false;
    while (!broken) {
      {
        absl::MutexLock lock(&mu_);
        if (stopping_) break;
        if (lost_ || Clock::now() >= valid_until_) break;
        sent_.push_back(Clock::now());
      }
      etcdserverpb::LeaseKeepAliveRequest request;
      request.set_id(id_);
      if (!stream->Write(request)) {
        broken = true;
        break;
      }
      // Sleep a period, waking early when stopping.
      absl::MutexLock lock(&mu_);
      mu_.AwaitWithTimeout(absl::Condition(&stopping_),
                           absl::FromChrono(period));
    }
    context.TryCancel();
    reader.join();
    stream->Finish().IgnoreError();
    {
      absl::MutexLock lock(&mu_);
      stream_context_ = nullptr;
      if (lost_ || Clock::now() >= valid_until_) {
        lost_ = true;
        return;
      }
      if (stopping_) return;
    }
    // A broken stream (the etcd member went away): reopen at once; the
    // channel picks another member.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace leasekeeper::storage
