#include "etcd_lock_client.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "grpc_channel.h"

namespace leasekeeper::bench {
namespace {

constexpr absl::Duration kCallTimeout = absl::Seconds(10);

using etcdserverpb::Compare;
using etcdserverpb::TxnRequest;
using etcdserverpb::TxnResponse;

}  // namespace

EtcdLockClient::EtcdLockClient(GrpcLoop& loop, const std::string& target,
                               std::string client_id)
    : loop_(loop),
      client_id_(std::move(client_id)),
      channel_(OwnConnection(target)),
      kv_(etcdserverpb::KV::NewStub(channel_)),
      lease_(etcdserverpb::Lease::NewStub(channel_)),
      watch_(etcdserverpb::Watch::NewStub(channel_)),
      stream_(
          loop,
          [this](etcdserverpb::WatchResponse& response) {
            OnWatchResponse(response);
          },
          [this](const grpc::Status&) {
            if (on_stream_finished_) on_stream_finished_();
          }) {}

void EtcdLockClient::Grant(
    int64_t ttl_ms,
    absl::AnyInvocable<void(std::string, int64_t, int64_t, int64_t)> done) {
  etcdserverpb::LeaseGrantRequest request;
  request.set_ttl((ttl_ms + 999) / 1000);
  int64_t sent_ns = NowNs();
  StartUnary<etcdserverpb::LeaseGrantResponse>(
      loop_,
      [this](grpc::ClientContext* c, const etcdserverpb::LeaseGrantRequest& r,
             grpc::CompletionQueue* cq) {
        return lease_->PrepareAsyncLeaseGrant(c, r, cq);
      },
      request, kCallTimeout,
      [sent_ns, done = std::move(done)](
          const grpc::Status& status,
          etcdserverpb::LeaseGrantResponse& response) mutable {
        if (!status.ok()) {
          done(StatusText(status), 0, 0, sent_ns);
        } else if (!response.error().empty()) {
          done("etcd lease: " + response.error(), 0, 0, sent_ns);
        } else {
          done("", response.id(), response.ttl() * 1000, sent_ns);
        }
      });
}

void EtcdLockClient::Start(Done done) {
  Grant(kSessionTtlMs,
        [this, done = std::move(done)](std::string error, int64_t lease_id,
                                       int64_t, int64_t sent_ns) mutable {
          session_lease_id_ = lease_id;
          session_lease_start_ns_ = sent_ns;
          done(std::move(error));
        });
}

void EtcdLockClient::Acquire(const std::string& lock, int64_t ttl_ms, bool wait,
                             absl::AnyInvocable<void()> on_waiting,
                             AcquireDone done) {
  auto attempt = std::make_unique<Attempt>();
  attempt->lock = lock;
  attempt->wait = wait;
  attempt->on_waiting = std::move(on_waiting);
  attempt->done = std::move(done);
  auto go = [this, ttl_ms, attempt = std::move(attempt)]() mutable {
    if (ttl_ms == kSessionTtlMs) {
      attempt->lease_id = session_lease_id_;
      attempt->lease_start_ns = session_lease_start_ns_;
      attempt->ttl_ms = kSessionTtlMs;
      TryTxn(std::move(attempt));
      return;
    }
    Attempt* raw = attempt.get();
    Grant(ttl_ms, [this, raw, attempt = std::move(attempt)](
                      std::string error, int64_t lease_id, int64_t granted_ms,
                      int64_t sent_ns) mutable {
      if (!error.empty()) {
        AcquireResult result;
        result.error = std::move(error);
        raw->done(std::move(result));
        return;
      }
      attempt->lease_id = lease_id;
      attempt->lease_start_ns = sent_ns;
      attempt->ttl_ms = granted_ms;
      TryTxn(std::move(attempt));
    });
  };
  if (wait) {
    EnsureWatch(lock, std::move(go));
  } else {
    go();
  }
}

void EtcdLockClient::TryTxn(std::unique_ptr<Attempt> attempt) {
  TxnRequest request;
  Compare* compare = request.add_compare();
  compare->set_result(Compare::EQUAL);
  compare->set_target(Compare::CREATE);
  compare->set_key(attempt->lock);
  compare->set_create_revision(0);
  etcdserverpb::PutRequest* put = request.add_success()->mutable_request_put();
  put->set_key(attempt->lock);
  put->set_value(client_id_);
  put->set_lease(attempt->lease_id);
  request.add_failure()->mutable_request_range()->set_key(attempt->lock);
  StartUnary<TxnResponse>(
      loop_,
      [this](grpc::ClientContext* c, const TxnRequest& r,
             grpc::CompletionQueue* cq) {
        return kv_->PrepareAsyncTxn(c, r, cq);
      },
      request, kCallTimeout,
      [this, attempt = std::move(attempt)](const grpc::Status& status,
                                           TxnResponse& response) mutable {
        AcquireResult result;
        result.lease_start_ns = attempt->lease_start_ns;
        result.ttl_ms = attempt->ttl_ms;
        if (!status.ok()) {
          result.error = StatusText(status);
          attempt->done(std::move(result));
          return;
        }
        int64_t revision = response.header().revision();
        if (response.succeeded()) {
          held_[attempt->lock] = revision;
          result.granted = true;
          attempt->done(std::move(result));
          return;
        }
        if (!attempt->wait) {
          attempt->done(std::move(result));
          return;
        }
        if (attempt->first) {
          attempt->first = false;
          if (attempt->on_waiting) attempt->on_waiting();
        }
        KeyWatch& watch = watches_[attempt->lock];
        if (watch.last_delete_revision > revision) {
          TryTxn(std::move(attempt));
          return;
        }
        watch.park_revision = revision;
        watch.parked = [this, attempt = std::move(attempt)]() mutable {
          TryTxn(std::move(attempt));
        };
      });
}

void EtcdLockClient::Release(const std::string& lock, Done done) {
  auto it = held_.find(lock);
  if (it == held_.end()) {
    done("not holder");
    return;
  }
  TxnRequest request;
  Compare* compare = request.add_compare();
  compare->set_result(Compare::EQUAL);
  compare->set_target(Compare::CREATE);
  compare->set_key(lock);
  compare->set_create_revision(it->second);
  request.add_success()->mutable_request_delete_range()->set_key(lock);
  held_.erase(it);
  StartUnary<TxnResponse>(
      loop_,
      [this](grpc::ClientContext* c, const TxnRequest& r,
             grpc::CompletionQueue* cq) {
        return kv_->PrepareAsyncTxn(c, r, cq);
      },
      request, kCallTimeout,
      [done = std::move(done)](const grpc::Status& status,
                               TxnResponse& response) mutable {
        if (!status.ok()) {
          done(StatusText(status));
        } else {
          done(response.succeeded() ? "" : "not holder");
        }
      });
}

void EtcdLockClient::EnsureWatch(const std::string& lock,
                                 absl::AnyInvocable<void()> then) {
  auto [it, inserted] = watches_.try_emplace(lock);
  KeyWatch& watch = it->second;
  if (watch.created) {
    then();
    return;
  }
  watch.on_created.push_back(std::move(then));
  if (!inserted && watch.on_created.size() > 1) return;  // create already sent
  if (!stream_.started()) {
    stream_.Start([this](grpc::ClientContext* context,
                         grpc::CompletionQueue* cq) {
      return watch_->PrepareAsyncWatch(context, cq);
    });
  }
  etcdserverpb::WatchRequest request;
  etcdserverpb::WatchCreateRequest* create = request.mutable_create_request();
  create->set_key(lock);
  create->add_filters(etcdserverpb::WatchCreateRequest::NOPUT);
  creating_.push_back(lock);
  stream_.Send(std::move(request));
}

void EtcdLockClient::OnWatchResponse(
    const etcdserverpb::WatchResponse& response) {
  if (response.created()) {
    if (creating_.empty()) return;
    std::string lock = std::move(creating_.front());
    creating_.pop_front();
    lock_of_watch_[response.watch_id()] = lock;
    KeyWatch& watch = watches_[lock];
    watch.created = true;
    auto waiting = std::move(watch.on_created);
    watch.on_created.clear();
    for (auto& then : waiting) then();
    return;
  }
  auto it = lock_of_watch_.find(response.watch_id());
  if (it == lock_of_watch_.end()) return;
  KeyWatch& watch = watches_[it->second];
  for (const mvccpb::Event& event : response.events()) {
    if (event.type() != mvccpb::Event::DELETE) continue;
    watch.last_delete_revision =
        std::max(watch.last_delete_revision, event.kv().mod_revision());
  }
  if (watch.parked && watch.last_delete_revision > watch.park_revision) {
    auto retry = std::move(watch.parked);
    watch.parked = nullptr;
    retry();
  }
}

void EtcdLockClient::Stop(absl::AnyInvocable<void()> done) {
  if (!stream_.started() || stream_.finished()) {
    done();
    return;
  }
  on_stream_finished_ = std::move(done);
  stream_.Cancel();
}

}  // namespace leasekeeper::bench
