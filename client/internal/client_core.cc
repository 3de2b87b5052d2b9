#include "client/internal/client_core.h"

#include <grpcpp/client_context.h>
#include <grpcpp/support/client_callback.h>

#include <algorithm>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/errors.h"
#include "client/internal/backoff.h"
#include "client/internal/call_messages.h"
#include "client/internal/call_timing.h"

namespace leasekeeper::client::internal {
namespace {

namespace pb = ::leasekeeper::v1;

constexpr absl::Duration kFirstRetryDelay = absl::Milliseconds(100);
constexpr absl::Duration kMaxAcquireRetryDelay = absl::Seconds(1);
// The maintenance thread wakes at least this often.
constexpr absl::Duration kMaxSleep = absl::Seconds(1);

std::string RandomHex(int digits) {
  absl::BitGen random;
  std::string hex;
  for (int i = 0; i < digits; ++i) {
    hex.push_back("0123456789abcdef"[absl::Uniform(random, 0, 16)]);
  }
  return hex;
}

absl::Status EndedError(const LeaseState& lease, LeaseEndReason reason) {
  return absl::FailedPreconditionError(
      absl::StrCat("the lease on ", lease.lock, " (token ", lease.token,
                   ") has ended: ", LeaseEndReasonName(reason)));
}

}  // namespace

// Invariant 5: gRPC's ClientCallbackUnaryImpl drops its reference to the
// call before OnDone and touches nothing after it, so once OnDone has retired
// the call under mu_ a core thread may destroy it. (With the plain callback
// form, the callback's captures outlive the callback and are destroyed by
// gRPC, which would destroy a ClientContext, and maybe the last reference to
// the channel, on a gRPC thread.)
class ClientCore::AsyncCall : public grpc::ClientUnaryReactor {
 public:
  explicit AsyncCall(ClientCore& core) : core_(core) {}

  grpc::ClientContext context;
  // The endpoint it went to, told how it went.
  ChannelSet::Pick pick;
  // Runs with core.mu_ held, once, when the call has finished.
  std::function<void(const grpc::Status&)> finish_locked;

  void OnDone(const grpc::Status& status) override {
    absl::MutexLock guard(&core_.mu_);
    // The ChannelSet's mutex is a leaf: fine under mu_.
    core_.rpc_.channels().Report(pick, FromGrpcStatus(context, status));
    finish_locked(status);
    core_.RetireCallLocked(*this);
    core_.changed_.SignalAll();
  }

 private:
  ClientCore& core_;
};

template <typename Request, typename Response>
class ClientCore::UnaryCall final : public ClientCore::AsyncCall {
 public:
  using AsyncCall::AsyncCall;
  Request request;
  Response response;
};

ClientCore::ClientCore(std::shared_ptr<ChannelSet> channels,
                       ClientOptions options)
    : options_(std::move(options)),
      rpc_(std::move(channels)),
      request_id_prefix_(RandomHex(12)) {
  next_idle_keepalive_at_ = MonotonicNow() + options_.idle_keepalive_interval;
  if (options_.use_session) {
    SessionListener& listener = *this;
    session_ =
        // Half a call timeout: a hung node is left while the Acquire that
        // wanted the session still has time to open it on the next one.
        std::make_unique<Session>(
            rpc_.channels(), options_.client_id, listener,
            std::max(options_.call_timeout / 2, absl::Milliseconds(1)));
  }
}

ClientCore::~ClientCore() { Shutdown(); }

void ClientCore::Start() {
  maintenance_ = std::thread([this] { MaintenanceLoop(); });
}

void ClientCore::Shutdown() {
  std::vector<std::shared_ptr<LeaseState>> live;
  std::vector<std::pair<std::string, PendingRelease>> pending;
  {
    absl::MutexLock lock(&mu_);
    if (shutting_down_) return;
    shutting_down_ = true;
    for (auto& [id, lease] : leases_) {
      lease->releasing = true;
      live.push_back(lease);
    }
    for (auto& [lock_name, release] : pending_releases_) {
      if (!release.in_flight) pending.emplace_back(lock_name, release);
    }
    changed_.SignalAll();
  }
  if (maintenance_.joinable()) maintenance_.join();

  // Release at the server: closing the session releases everything at once;
  // without a session (or if the close fails) release lease by lease, all
  // within one call timeout.
  const bool closed =
      session_ != nullptr && session_->Close(options_.call_timeout);
  if (!closed) {
    const MonotonicTime give_up_at = MonotonicNow() + options_.call_timeout;
    for (const auto& lease : live) {
      ReleaseCall call{options_.client_id, lease->lock, NewRequestId(),
                       lease->session_id};
      (void)rpc_.Release(call, CallOptionsWithin(give_up_at - MonotonicNow()));
    }
    for (const auto& [lock_name, release] : pending) {
      ReleaseCall call{options_.client_id, lock_name, release.request_id,
                       release.session_id};
      (void)rpc_.Release(call, CallOptionsWithin(give_up_at - MonotonicNow()));
    }
  }

  std::vector<AsyncCall*> outstanding;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& lease : live) EndLocked(*lease, LeaseEndReason::kReleased);
    pending_releases_.clear();
    keepalives_.clear();
    for (const auto& [call, owned] : calls_) outstanding.push_back(call);
  }
  // Only this thread destroys calls now (the maintenance thread has ended),
  // so the pointers stay valid even if the calls finish meanwhile.
  for (AsyncCall* call : outstanding) call->context.TryCancel();
  std::vector<std::unique_ptr<AsyncCall>> finished;
  {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](absl::flat_hash_map<AsyncCall*, std::unique_ptr<AsyncCall>>* calls) {
          return calls->empty();
        },
        &calls_));
    finished.swap(finished_calls_);
  }
  finished.clear();
  Deliver();
  // Stopped, not destroyed: a Lease's Renew or Release on another thread may
  // still be asking it for a stream (it then goes unary).
  if (session_ != nullptr) session_->Stop();
}

// ---------------------------------------------------------------------------
// Acquire

namespace {

// Acquire's checks of its arguments, before anything else.
absl::Status CheckAcquireArguments(const std::string& lock, absl::Duration ttl,
                                   absl::Duration wait,
                                   const std::string& label) {
  if (lock.empty()) {
    return absl::InvalidArgumentError("the lock name must not be empty");
  }
  if (ttl < kMinTtl || ttl > kMaxTtl) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid ttl ", absl::FormatDuration(ttl),
                     ": it must be within 1ms..24h"));
  }
  if (wait < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("the wait must not be negative");
  }
  if (label.size() > kMaxHolderLabelBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the holder label is longer than ", kMaxHolderLabelBytes, " bytes"));
  }
  return absl::OkStatus();
}

absl::Status AcquireCancelled(const std::string& lock) {
  return absl::CancelledError(absl::StrCat("acquire of ", lock, " cancelled"));
}

}  // namespace

struct ClientCore::AcquireAttempts {
  AcquireAttempts(const std::string& lock, absl::Duration ttl,
                  absl::Duration wait, const AcquireOptions& options,
                  bool try_only, absl::Duration call_timeout)
      : lock(lock), ttl(ttl), wait(wait), options(options), try_only(try_only) {
    const MonotonicTime started = MonotonicNow();
    wait_deadline =
        try_only ? started
                 : (wait == absl::InfiniteDuration() ? absl::InfiniteDuration()
                                                     : started + wait);
    // Transient failures are retried for at least one call timeout.
    retry_deadline = std::max(wait_deadline, started + call_timeout);
  }

  // The next attempt is a new request (`request_id`): its answer counts
  // from its own first send.
  void Restart(std::string request_id) {
    call.request_id = std::move(request_id);
    first_sent_at.reset();
  }

  const std::string lock;
  const absl::Duration ttl;
  const absl::Duration wait;
  const AcquireOptions& options;
  const bool try_only;
  MonotonicTime wait_deadline;
  MonotonicTime retry_deadline;
  std::string session_id;
  AcquireCall call;
  std::optional<MonotonicTime> first_sent_at;
  Backoff backoff{kFirstRetryDelay, kMaxAcquireRetryDelay};
  bool retried = false;
  int session_reopens = 0;
};

absl::StatusOr<std::shared_ptr<LeaseState>> ClientCore::Acquire(
    absl::string_view lock_view, absl::Duration ttl, absl::Duration wait,
    const AcquireOptions& options, bool try_only) {
  const std::string lock(lock_view);
  const std::string& label = options.holder_label.has_value()
                                 ? *options.holder_label
                                 : options_.holder_label;
  if (absl::Status valid = CheckAcquireArguments(lock, ttl, wait, label);
      !valid.ok()) {
    return valid;
  }
  if (absl::Status free = CheckNotHeld(lock); !free.ok()) return free;
  AcquireAttempts attempts(lock, ttl, wait, options, try_only,
                           options_.call_timeout);
  if (session_ != nullptr) {
    absl::StatusOr<std::string> opened = OpenSessionFor(attempts);
    if (!opened.ok()) return opened.status();
    attempts.session_id = *opened;
  }

  AcquireCall& call = attempts.call;
  call.client_id = options_.client_id;
  call.lock = lock;
  call.ttl = ttl;
  call.mode = options.mode;
  call.capacity = options.capacity;
  call.wait = try_only ? absl::ZeroDuration() : std::min(wait, kMaxServerWait);
  call.request_id = NewRequestId();
  call.session_id = attempts.session_id;
  call.holder_label = label;

  while (true) {
    // Before every attempt, since an attempt given up on the stream may
    // leave a background release of the lock behind.
    if (absl::Status flushed = FlushReleaseOf(lock, options.stop);
        !flushed.ok()) {
      return flushed;
    }
    absl::StatusOr<AcquireResult> result = SendAcquire(attempts);
    if (result.ok()) return AnswerAcquire(*result, attempts);
    std::optional<LeaseOrStatus> answer =
        RecoverFromAcquireError(result.status(), attempts);
    if (answer.has_value()) return *std::move(answer);
  }
}

absl::Status ClientCore::CheckNotHeld(const std::string& lock) {
  absl::MutexLock guard(&mu_);
  if (shutting_down_) {
    return absl::FailedPreconditionError("the client is shut down");
  }
  for (const auto& [id, lease] : leases_) {
    if (lease->lock == lock) {
      return absl::FailedPreconditionError(
          absl::StrCat("client busy: this client already holds ", lock,
                       " (token ", lease->token, ")"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ClientCore::OpenSessionFor(
    const AcquireAttempts& attempts) {
  // Opening the session (and reopening it) is part of the wait, with at
  // least one call timeout: a first endpoint that never answers costs the
  // stream's open timeout, after which the next one is tried within the
  // same budget.
  return session_->EnsureOpen(
      std::max(attempts.retry_deadline - MonotonicNow(), options_.call_timeout),
      attempts.options.stop);
}

absl::StatusOr<AcquireResult> ClientCore::SendAcquire(
    AcquireAttempts& attempts) {
  const MonotonicTime sent_at = MonotonicNow();
  if (!attempts.first_sent_at.has_value()) attempts.first_sent_at = sent_at;
  CallOptions call_options;
  call_options.cancel = attempts.options.stop;
  call_options.wait_for_ready = attempts.retried;
  call_options.timeout =
      options_.call_timeout +
      (attempts.try_only
           ? absl::ZeroDuration()
           : std::clamp(attempts.wait_deadline - sent_at, absl::ZeroDuration(),
                        attempts.call.wait));
  bool abandoned = false;
  absl::StatusOr<AcquireResult> result =
      Route(attempts.call, call_options, &RpcClient::Acquire, &AcquireResultOf,
            &abandoned);
  if (abandoned) {
    // Nothing may stay queued, nor granted to nobody: withdraw it, as the
    // server does for a cancelled unary Acquire. Its request id is
    // answered `withdrawn` from now on, so a retry needs a new one.
    Withdraw(attempts.lock, attempts.session_id);
    attempts.Restart(NewRequestId());
  }
  return result;
}

ClientCore::LeaseOrStatus ClientCore::AnswerAcquire(
    const AcquireResult& result, const AcquireAttempts& attempts) {
  const std::string& lock = attempts.lock;
  switch (result.outcome) {
    case AcquireOutcome::kGranted:
      // The server produced the answer after the request arrived and
      // after it waited `waited` in the queue, both after the first
      // send; the lease lasts `ttl` from the answer (rule 1 of
      // LeaseTimer, with the wait added as a duration, never a clock).
      return RegisterLease(lock, result.token, attempts.options.mode,
                           attempts.ttl, attempts.session_id,
                           *attempts.first_sent_at + result.waited, result.ttl);
    case AcquireOutcome::kQueued:
      // Only with a zero wait: leave nothing in the queue.
      Withdraw(lock, attempts.session_id);
      if (attempts.try_only) return std::shared_ptr<LeaseState>();
      return absl::DeadlineExceededError(
          absl::StrCat(lock, " is busy and the wait is zero"));
    case AcquireOutcome::kWithdrawn:
      if (result.withdraw_reason == WithdrawReason::kSessionEnded) {
        return absl::UnavailableError(
            absl::StrCat("the session ended while waiting for ", lock));
      }
      return absl::AbortedError(
          absl::StrCat("the wait for ", lock,
                       " was withdrawn by a release with this client id"));
  }
  return absl::InternalError(
      absl::StrCat("an acquire outcome this client does not know for ", lock));
}

std::optional<ClientCore::LeaseOrStatus> ClientCore::RecoverFromAcquireError(
    const absl::Status& status, AcquireAttempts& attempts) {
  const std::string& lock = attempts.lock;
  if (attempts.options.stop.stop_requested()) return AcquireCancelled(lock);
  if (HasErrorReason(status, ErrorReason::kWaitTimeout)) {
    // The server waits at most kMaxServerWait per call: go on waiting if
    // the caller's wait is longer.
    if (!attempts.try_only && MonotonicNow() < attempts.wait_deadline) {
      attempts.Restart(NewRequestId());
      return std::nullopt;
    }
    return status;
  }
  if (HasErrorReason(status, ErrorReason::kDeadlockVictim)) {
    {
      absl::MutexLock guard(&mu_);
      EndAllLocked(LeaseEndReason::kDeadlockVictim, std::nullopt);
    }
    Deliver();
    return status;
  }
  if (HasErrorReason(status, ErrorReason::kSessionEnded) &&
      session_ != nullptr && attempts.session_reopens < 2) {
    absl::Status reopened = ReopenSession(attempts);
    if (!reopened.ok()) return reopened;
    return std::nullopt;
  }
  if (HasErrorReason(status, ErrorReason::kClientBusy) && attempts.retried) {
    // A retry after a lost answer: the first attempt may have been
    // granted. If this client holds the lock, that is our lease.
    absl::StatusOr<std::shared_ptr<LeaseState>> adopted = AdoptHeldLease(
        lock, attempts.ttl, attempts.options.mode, attempts.session_id);
    if (adopted.ok()) return adopted;
    return status;
  }
  const bool retryable =
      IsTransient(status) ||
      HasErrorReason(status, ErrorReason::kSupersededByRetry);
  if (!retryable) return status;
  const absl::Duration retry_delay = attempts.backoff.Next();
  if (MonotonicNow() + retry_delay >= attempts.retry_deadline) {
    if (status.code() == absl::StatusCode::kDeadlineExceeded) {
      return absl::DeadlineExceededError(
          absl::StrCat("not granted ", lock, " within ",
                       absl::FormatDuration(attempts.wait)));
    }
    return status;
  }
  if (!SleepUnlessStopped(retry_delay, attempts.options.stop)) {
    return AcquireCancelled(lock);
  }
  attempts.retried = true;
  return std::nullopt;
}

absl::Status ClientCore::ReopenSession(AcquireAttempts& attempts) {
  // The server ended the session before this client heard of it. Its
  // leases are gone; the stream will report the loss. Open a new one.
  ++attempts.session_reopens;
  {
    absl::MutexLock guard(&mu_);
    EndAllLocked(LeaseEndReason::kSessionLost, attempts.session_id);
  }
  Deliver();
  session_->Abandon(attempts.session_id);
  absl::StatusOr<std::string> reopened = OpenSessionFor(attempts);
  if (!reopened.ok()) return reopened.status();
  attempts.session_id = *reopened;
  attempts.call.session_id = attempts.session_id;
  attempts.Restart(NewRequestId());
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<LeaseState>> ClientCore::RegisterLease(
    const std::string& lock, FencingToken token, LockMode mode,
    absl::Duration ttl, const std::string& session_id,
    MonotonicTime counted_from, absl::Duration lease_left) {
  std::shared_ptr<LeaseState> lease;
  {
    absl::MutexLock guard(&mu_);
    if (shutting_down_) {
      // The session's close (or the release of Shutdown) frees it.
      return absl::CancelledError("the client shut down during the acquire");
    }
    lease = std::make_shared<LeaseState>(
        next_lease_id_++, lock, token, mode, ttl, session_id,
        LeaseTimer(ttl, counted_from, lease_left));
    leases_[lease->id] = lease;
    if (lease->timer.ExpiredAt(MonotonicNow())) {
      // The answer took longer than the lease to arrive.
      EndLocked(*lease, LeaseEndReason::kExpired, /*release_at_server=*/true);
    }
    changed_.SignalAll();
  }
  Deliver();
  return lease;
}

absl::StatusOr<std::shared_ptr<LeaseState>> ClientCore::AdoptHeldLease(
    const std::string& lock, absl::Duration ttl, LockMode mode,
    const std::string& session_id) {
  const MonotonicTime sent_at = MonotonicNow();
  absl::StatusOr<RenewResult> renewed = Route(
      RenewCall{options_.client_id, lock, ttl, NewRequestId(), session_id},
      CallOptionsWithin(options_.call_timeout), &RpcClient::Renew,
      &RenewResultOf);
  if (!renewed.ok()) return renewed.status();
  return RegisterLease(lock, renewed->token, mode, ttl, session_id, sent_at,
                       renewed->ttl);
}

void ClientCore::Withdraw(const std::string& lock,
                          const std::string& session_id) {
  ReleaseCall call{options_.client_id, lock, NewRequestId(), session_id};
  absl::StatusOr<ReleaseOutcome> outcome = ReleaseWithRetries(call);
  // Withdrawn, or released because it was granted in between, or gone
  // (NOT_HOLDER, SESSION_ENDED): nothing is left queued. Otherwise keep
  // trying in the background.
  if (outcome.ok() || !IsTransient(outcome.status())) return;
  absl::MutexLock guard(&mu_);
  QueueReleaseLocked(lock, session_id, call.request_id);
  changed_.SignalAll();
}

absl::Status ClientCore::FlushReleaseOf(const std::string& lock,
                                        std::stop_token stop) {
  PendingRelease release;
  {
    absl::MutexLock guard(&mu_);
    while (true) {
      auto it = pending_releases_.find(lock);
      if (it == pending_releases_.end()) return absl::OkStatus();
      if (!it->second.in_flight) {
        it->second.in_flight = true;
        release = it->second;
        break;
      }
      if (stop.stop_requested()) {
        return absl::CancelledError(
            absl::StrCat("acquire of ", lock, " cancelled"));
      }
      changed_.WaitWithTimeout(&mu_, absl::Milliseconds(50));
    }
  }
  absl::StatusOr<ReleaseOutcome> outcome = ReleaseWithRetries(ReleaseCall{
      options_.client_id, lock, release.request_id, release.session_id});
  absl::MutexLock guard(&mu_);
  auto it = pending_releases_.find(lock);
  if (outcome.ok() || !IsTransient(outcome.status())) {
    if (it != pending_releases_.end()) pending_releases_.erase(it);
    changed_.SignalAll();
    return absl::OkStatus();
  }
  if (it != pending_releases_.end()) it->second.in_flight = false;
  changed_.SignalAll();
  return absl::UnavailableError(
      absl::StrCat("could not release this client's previous lease on ", lock,
                   " first: ", outcome.status().message()));
}

template <typename Call, typename Result>
absl::StatusOr<Result> ClientCore::Route(
    const Call& call, CallOptions options,
    absl::StatusOr<Result> (RpcClient::*unary)(const Call&, const CallOptions&)
        const,
    absl::StatusOr<Result> (*from_stream)(const pb::SessionCallResult&),
    bool* abandoned) {
  // A call stopped before it started is not sent at all (the unary call
  // refuses it), so there is nothing to withdraw.
  if (session_ != nullptr && !call.session_id.empty() &&
      !options.cancel.stop_requested()) {
    const MonotonicTime started = MonotonicNow();
    absl::StatusOr<pb::SessionCallResult> answer = session_->Call(
        call.session_id, ToSessionCall(call), options.timeout, options.cancel);
    if (answer.ok()) return from_stream(*answer);
    if (answer.status().code() != absl::StatusCode::kUnavailable) {
      if (abandoned != nullptr) *abandoned = true;
      return answer.status();
    }
    // Not connected, or dropped before the answer: the unary call is the
    // call, or its retry with the same request id.
    options.timeout = std::max(options.timeout - (MonotonicNow() - started),
                               absl::Milliseconds(1));
  }
  return (rpc_.*unary)(call, options);
}

absl::StatusOr<ReleaseOutcome> ClientCore::ReleaseWithRetries(
    const ReleaseCall& call) {
  const MonotonicTime give_up_at = MonotonicNow() + options_.call_timeout;
  Backoff backoff(kFirstRetryDelay, kMaxAcquireRetryDelay);
  for (bool retry = false;; retry = true) {
    absl::StatusOr<ReleaseOutcome> outcome =
        Route(call, CallOptionsWithin(give_up_at - MonotonicNow(), retry),
              &RpcClient::Release, &ReleaseOutcomeOf);
    if (outcome.ok() || !IsTransient(outcome.status())) return outcome;
    const absl::Duration delay = backoff.Next();
    if (MonotonicNow() + delay >= give_up_at) return outcome;
    absl::SleepFor(delay);
  }
}

// ---------------------------------------------------------------------------
// Lease operations

absl::Status ClientCore::Renew(LeaseState& lease) {
  const RenewCall call{options_.client_id, lease.lock, lease.ttl,
                       NewRequestId(), lease.session_id};
  // Every attempt repeats the first's request id, so a success counts from
  // the first send.
  const MonotonicTime first_sent_at = MonotonicNow();
  Backoff backoff(kFirstRetryDelay, kMaxAcquireRetryDelay);
  absl::StatusOr<RenewResult> result;
  bool attempted = false;
  while (true) {
    absl::Duration budget;
    std::optional<LeaseEndReason> ended;
    {
      absl::MutexLock guard(&mu_);
      const MonotonicTime now = MonotonicNow();
      if (!lease.end_reason.has_value() && lease.timer.ExpiredAt(now)) {
        // Also when transient failures ran this call into the deadline.
        EndLocked(lease, LeaseEndReason::kExpired,
                  /*release_at_server=*/!lease.releasing);
      }
      ended = lease.end_reason;
      if (!ended.has_value() && shutting_down_) {
        return absl::CancelledError("the client is shutting down");
      }
      budget = std::min(options_.call_timeout, lease.timer.deadline() - now);
    }
    if (ended.has_value()) {
      Deliver();
      return EndedError(lease, *ended);
    }
    result = Route(call, CallOptionsWithin(budget, /*retry=*/attempted),
                   &RpcClient::Renew, &RenewResultOf);
    attempted = true;
    if (result.ok() || !IsTransient(result.status())) break;
    // Retried until the lease's own deadline: a renewal after it is no use.
    absl::SleepFor(std::min(backoff.Next(), TimeLeft(lease)));
  }
  std::optional<LeaseEndReason> ended;
  {
    absl::MutexLock guard(&mu_);
    ApplyRenewResult(lease, first_sent_at, result, /*background=*/false);
    ended = lease.end_reason;
  }
  Deliver();
  if (ended.has_value()) return EndedError(lease, *ended);
  return result.status();
}

absl::Status ClientCore::Release(LeaseState& lease) {
  {
    absl::MutexLock guard(&mu_);
    if (lease.end_reason.has_value()) {
      return EndedError(lease, *lease.end_reason);
    }
    lease.releasing = true;
  }
  const ReleaseCall call{options_.client_id, lease.lock, NewRequestId(),
                         lease.session_id};
  absl::StatusOr<ReleaseOutcome> outcome = ReleaseWithRetries(call);
  absl::Status result;
  {
    absl::MutexLock guard(&mu_);
    const absl::Status& status = outcome.status();
    if (outcome.ok()) {
      EndLocked(lease, LeaseEndReason::kReleased);
    } else if (HasErrorReason(status, ErrorReason::kNotHolder)) {
      EndLocked(lease, LeaseEndReason::kForced);
      result = absl::FailedPreconditionError(
          absl::StrCat("not holder: the lease on ", lease.lock, " (token ",
                       lease.token, ") was lost before the release"));
    } else if (HasErrorReason(status, ErrorReason::kSessionEnded)) {
      EndLocked(lease, LeaseEndReason::kSessionLost);
      result = absl::FailedPreconditionError(
          absl::StrCat("the session of the lease on ", lease.lock,
                       " ended before the release"));
    } else {
      EndLocked(lease, LeaseEndReason::kReleased);
      if (IsTransient(status)) {
        QueueReleaseLocked(lease.lock, lease.session_id, call.request_id);
        EmitLocked(ClientEvent{ClientEvent::Kind::kReleaseFailed, lease.lock,
                               lease.token, std::nullopt, status});
      }
      result = status;
    }
  }
  Deliver();
  return result;
}

absl::Status ClientCore::CheckLeaseLive(LeaseState& lease,
                                        absl::string_view doing) {
  std::optional<LeaseEndReason> ended;
  {
    absl::MutexLock guard(&mu_);
    if (!lease.end_reason.has_value() &&
        lease.timer.ExpiredAt(MonotonicNow())) {
      EndLocked(lease, LeaseEndReason::kExpired,
                /*release_at_server=*/!lease.releasing);
    }
    ended = lease.end_reason;
  }
  if (ended.has_value()) {
    Deliver();
    return absl::FailedPreconditionError(
        absl::StrCat("not ", doing, " with the token of the lease on ",
                     lease.lock,
                     ": it has ended (", LeaseEndReasonName(*ended), ")"));
  }
  return absl::OkStatus();
}

absl::Status ClientCore::Write(LeaseState& lease, absl::string_view key,
                               absl::string_view value) {
  if (absl::Status live = CheckLeaseLive(lease, "writing"); !live.ok()) {
    return live;
  }
  return rpc_.Write(WriteCall{.lock = lease.lock,
                              .key = std::string(key),
                              .value = std::string(value),
                              .token = lease.token,
                              .client_id = options_.client_id,
                              .require_held = true},
                    CallOptionsWithin(options_.call_timeout));
}

absl::StatusOr<bool> ClientCore::Delete(LeaseState& lease,
                                        absl::string_view key) {
  if (absl::Status live = CheckLeaseLive(lease, "deleting"); !live.ok()) {
    return live;
  }
  return rpc_.Delete(DeleteCall{.lock = lease.lock,
                                .key = std::string(key),
                                .token = lease.token,
                                .client_id = options_.client_id},
                     CallOptionsWithin(options_.call_timeout));
}

absl::StatusOr<KeysPage> ClientCore::ListKeys(absl::string_view lock,
                                              absl::string_view after,
                                              int32_t limit) const {
  return rpc_.ListKeys(lock, after, limit,
                       CallOptionsWithin(options_.call_timeout));
}

absl::StatusOr<std::optional<std::string>> ClientCore::Read(
    absl::string_view lock, absl::string_view key) const {
  return rpc_.Read(lock, key, CallOptionsWithin(options_.call_timeout));
}

std::optional<LeaseEndReason> ClientCore::EndReason(
    const LeaseState& lease) const {
  absl::MutexLock guard(&mu_);
  return lease.end_reason;
}

absl::Duration ClientCore::TimeLeft(const LeaseState& lease) const {
  absl::MutexLock guard(&mu_);
  if (lease.end_reason.has_value()) return absl::ZeroDuration();
  return std::max(absl::ZeroDuration(),
                  lease.timer.deadline() - MonotonicNow());
}

void ClientCore::PauseRenewalsForTesting(bool paused) {
  absl::MutexLock guard(&mu_);
  paused_ = paused;
  changed_.SignalAll();
}

void ClientCore::SuspendSessionForTesting(absl::Duration duration) {
  if (session_ != nullptr) session_->SuspendForTesting(duration);
}

// ---------------------------------------------------------------------------
// Maintenance

void ClientCore::MaintenanceLoop() {
  while (true) {
    Actions actions;
    // Destroyed at the end of the round, outside mu_ (invariant 5).
    std::vector<std::unique_ptr<AsyncCall>> finished;
    {
      absl::MutexLock guard(&mu_);
      finished.swap(finished_calls_);
      if (shutting_down_) return;
      const absl::Duration sleep = PlanLocked(MonotonicNow(), actions);
      const bool idle =
          !actions.keepalive_sequence.has_value() &&
          actions.renew_by_call.empty() && actions.releases.empty() &&
          !actions.interrupt_session && to_stop_.empty() && events_.empty();
      if (idle) {
        changed_.WaitWithTimeout(&mu_, sleep);
        continue;
      }
    }
    Perform(actions);
  }
}

absl::Duration ClientCore::PlanLocked(MonotonicTime now, Actions& actions) {
  MonotonicTime wake = now + kMaxSleep;
  EndExpiredLocked(now, wake);
  FailOverdueKeepalivesLocked(now, actions, wake);
  if (!paused_) PlanRenewalsLocked(now, actions, wake);
  PlanReleasesLocked(now, actions, wake);
  return std::max(wake - now, absl::ZeroDuration());
}

void ClientCore::EndExpiredLocked(MonotonicTime now, MonotonicTime& wake) {
  // Leases past their client-side deadline end; release them at the server
  // too, so that no later keepalive renews them there.
  std::vector<std::shared_ptr<LeaseState>> expired;
  for (const auto& [id, lease] : leases_) {
    if (lease->timer.ExpiredAt(now)) {
      expired.push_back(lease);
    } else {
      wake = std::min(wake, lease->timer.deadline());
    }
  }
  for (const auto& lease : expired) {
    EndLocked(*lease, LeaseEndReason::kExpired,
              /*release_at_server=*/!lease->releasing);
  }
}

void ClientCore::FailOverdueKeepalivesLocked(MonotonicTime now,
                                             Actions& actions,
                                             MonotonicTime& wake) {
  std::vector<uint64_t> overdue;
  for (const auto& [sequence, keepalive] : keepalives_) {
    if (now >= keepalive.give_up_at) {
      overdue.push_back(sequence);
      if (now - keepalive.sent_at >= options_.call_timeout) {
        actions.interrupt_session = true;  // the stream looks wedged
      }
    } else {
      wake = std::min(wake, keepalive.give_up_at);
    }
  }
  for (uint64_t sequence : overdue) {
    FailKeepaliveLocked(sequence, now,
                        absl::DeadlineExceededError("no keepalive ack"));
  }
}

void ClientCore::PlanRenewalsLocked(MonotonicTime now, Actions& actions,
                                    MonotonicTime& wake) {
  const bool session_up = session_ != nullptr && session_->connected();
  const std::string session_id = session_up ? session_->id() : std::string();
  bool keepalive_due = session_up && now >= next_idle_keepalive_at_;
  for (const auto& [id, lease] : leases_) {
    if (lease->releasing || lease->renewal != LeaseState::Renewal::kIdle) {
      continue;
    }
    const bool due = lease->renew_now || now >= lease->timer.next_attempt_at();
    if (!due) {
      wake = std::min(wake, lease->timer.next_attempt_at());
      continue;
    }
    if (session_up && !lease->renew_by_call &&
        lease->session_id == session_id) {
      keepalive_due = true;
    } else {
      lease->renewal = LeaseState::Renewal::kCall;
      lease->renew_now = false;
      actions.renew_by_call.push_back(lease);
    }
  }
  if (keepalive_due) PlanKeepaliveLocked(now, session_id, actions, wake);
  if (session_up) wake = std::min(wake, next_idle_keepalive_at_);
}

void ClientCore::PlanKeepaliveLocked(MonotonicTime now,
                                     const std::string& session_id,
                                     Actions& actions, MonotonicTime& wake) {
  // One keepalive renews every lease of the client at the server, so it
  // counts as a renewal of every idle lease of this session.
  const uint64_t sequence = next_keepalive_sequence_++;
  KeepaliveInFlight keepalive;
  keepalive.sent_at = now;
  absl::Duration patience = options_.call_timeout;
  for (const auto& [id, lease] : leases_) {
    if (lease->releasing || lease->renew_by_call ||
        lease->renewal != LeaseState::Renewal::kIdle ||
        lease->session_id != session_id) {
      continue;
    }
    lease->renewal = LeaseState::Renewal::kKeepalive;
    lease->keepalive_sequence = sequence;
    keepalive.leases.push_back(lease);
    patience = std::min(patience, LeaseTimer::RenewInterval(lease->ttl));
  }
  keepalive.give_up_at = now + patience;
  wake = std::min(wake, keepalive.give_up_at);
  keepalives_[sequence] = std::move(keepalive);
  actions.keepalive_sequence = sequence;
  next_idle_keepalive_at_ = now + options_.idle_keepalive_interval;
}

void ClientCore::PlanReleasesLocked(MonotonicTime now, Actions& actions,
                                    MonotonicTime& wake) {
  for (auto& [lock, release] : pending_releases_) {
    if (release.in_flight) continue;
    if (now >= release.next_attempt_at) {
      release.in_flight = true;
      actions.releases.push_back(lock);
    } else {
      wake = std::min(wake, release.next_attempt_at);
    }
  }
}

void ClientCore::Perform(Actions& actions) {
  Deliver();
  if (actions.interrupt_session && session_ != nullptr) {
    session_->Interrupt(
        absl::DeadlineExceededError("a keepalive was not acknowledged in time"));
  }
  if (actions.keepalive_sequence.has_value()) {
    if (!session_->SendKeepalive(*actions.keepalive_sequence)) {
      absl::MutexLock guard(&mu_);
      FailKeepaliveLocked(
          *actions.keepalive_sequence, MonotonicNow(),
          absl::UnavailableError("the session stream is not connected"));
    }
  }
  for (auto& lease : actions.renew_by_call) StartRenewCall(std::move(lease));
  for (const std::string& lock : actions.releases) StartBackgroundRelease(lock);
  Deliver();
}

void ClientCore::StartRenewCall(std::shared_ptr<LeaseState> lease) {
  auto owned =
      std::make_unique<UnaryCall<pb::RenewRequest, pb::RenewResponse>>(*this);
  auto* call = owned.get();
  call->pick = rpc_.channels().Current();
  {
    absl::MutexLock guard(&mu_);
    if (shutting_down_) {
      lease->renewal = LeaseState::Renewal::kIdle;
      return;
    }
    const MonotonicTime now = MonotonicNow();
    if (lease->renew_request_id.empty()) {
      lease->renew_request_id = NewRequestId();
      lease->renew_first_sent_at = now;
    } else if (!call->pick.can_move) {
      call->context.set_wait_for_ready(true);  // a retry (CallOptions)
    }
    call->request =
        ToRequest(RenewCall{options_.client_id, lease->lock, lease->ttl,
                            lease->renew_request_id, lease->session_id});
    // A retry's answer may be the first attempt's (from the retry cache):
    // count from the first send.
    const MonotonicTime sent_at = lease->renew_first_sent_at;
    call->finish_locked = [this, call, lease,
                           sent_at](const grpc::Status& status) {
      mu_.AssertHeld();  // finish_locked runs under mu_ (AsyncCall::OnDone)
      const absl::StatusOr<RenewResult> result =
          status.ok()
              ? absl::StatusOr<RenewResult>(FromResponse(call->response))
              : absl::StatusOr<RenewResult>(
                    FromGrpcStatus(call->context, status));
      ApplyRenewResult(*lease, sent_at, result, /*background=*/true);
    };
    // No point waiting past the lease's deadline.
    SetDeadlineAfter(std::clamp(lease->timer.deadline() - now,
                                absl::Milliseconds(1), options_.call_timeout),
                     call->context);
    calls_.emplace(call, std::move(owned));
  }
  call->pick.stub->async()->Renew(&call->context, &call->request,
                                  &call->response, call);
  call->StartCall();
}

void ClientCore::ApplyRenewResult(LeaseState& lease, MonotonicTime sent_at,
                                  const absl::StatusOr<RenewResult>& result,
                                  bool background) {
  if (background && lease.renewal == LeaseState::Renewal::kCall) {
    lease.renewal = LeaseState::Renewal::kIdle;
  }
  if (lease.end_reason.has_value()) return;
  // A transient failure leaves the background renewal's request id to its
  // retry; anything else is an answer about the lease.
  if (result.ok() || !IsTransient(result.status())) {
    lease.renew_request_id.clear();
  }
  if (result.ok()) {
    if (result->token != lease.token) {
      // The client holds the lock under another grant: this lease is gone.
      EndLocked(lease, LeaseEndReason::kNotHolder);
      return;
    }
    lease.timer.OnRenewed(sent_at);
    lease.renew_by_call = false;
    return;
  }
  const absl::Status& status = result.status();
  if (HasErrorReason(status, ErrorReason::kNotHolder)) {
    EndLocked(lease, LeaseEndReason::kForced);
  } else if (HasErrorReason(status, ErrorReason::kSessionEnded)) {
    EndLocked(lease, LeaseEndReason::kSessionLost);
  } else if (background && !shutting_down_) {
    lease.timer.OnTransientFailure(MonotonicNow());
    EmitLocked(ClientEvent{ClientEvent::Kind::kRenewalFailed, lease.lock,
                           lease.token, std::nullopt, status});
  }
}

void ClientCore::StartBackgroundRelease(const std::string& lock) {
  auto owned =
      std::make_unique<UnaryCall<pb::ReleaseRequest, pb::ReleaseResponse>>(
          *this);
  auto* call = owned.get();
  call->pick = rpc_.channels().Current();
  call->finish_locked = [this, call, lock](const grpc::Status& grpc_status) {
    mu_.AssertHeld();  // finish_locked runs under mu_ (AsyncCall::OnDone)
    const absl::Status status = FromGrpcStatus(call->context, grpc_status);
    auto it = pending_releases_.find(lock);
    if (it == pending_releases_.end()) return;
    PendingRelease& release = it->second;
    if (status.ok() || !IsTransient(status)) {
      // Released, withdrawn, or nothing left to release.
      pending_releases_.erase(it);
      return;
    }
    release.in_flight = false;
    release.next_attempt_at = MonotonicNow() + release.backoff.Next();
    EmitLocked(ClientEvent{ClientEvent::Kind::kReleaseFailed, lock, 0,
                           std::nullopt, status});
  };
  {
    absl::MutexLock guard(&mu_);
    auto it = pending_releases_.find(lock);
    if (it == pending_releases_.end()) return;
    if (shutting_down_) {
      it->second.in_flight = false;
      return;
    }
    call->request =
        ToRequest(ReleaseCall{options_.client_id, lock, it->second.request_id,
                              it->second.session_id});
    SetDeadlineAfter(options_.call_timeout, call->context);
    // Every background release follows a failure or an outage: wait for
    // the channel within the deadline (CallOptions::wait_for_ready), unless
    // the service may answer elsewhere.
    call->context.set_wait_for_ready(!call->pick.can_move);
    calls_.emplace(call, std::move(owned));
  }
  call->pick.stub->async()->Release(&call->context, &call->request,
                                    &call->response, call);
  call->StartCall();
}

void ClientCore::FailKeepaliveLocked(uint64_t sequence, MonotonicTime now,
                                     const absl::Status& status) {
  auto it = keepalives_.find(sequence);
  if (it == keepalives_.end()) return;
  KeepaliveInFlight keepalive = std::move(it->second);
  keepalives_.erase(it);
  for (const auto& weak : keepalive.leases) {
    std::shared_ptr<LeaseState> lease = weak.lock();
    if (lease == nullptr || lease->end_reason.has_value() ||
        lease->renewal != LeaseState::Renewal::kKeepalive ||
        lease->keepalive_sequence != sequence) {
      continue;
    }
    lease->renewal = LeaseState::Renewal::kIdle;
    lease->renew_by_call = true;
    lease->timer.OnTransientFailure(now);
    EmitLocked(ClientEvent{ClientEvent::Kind::kRenewalFailed, lease->lock,
                           lease->token, std::nullopt, status});
  }
  changed_.SignalAll();
}

// ---------------------------------------------------------------------------
// Session events

void ClientCore::OnSessionOpened(const std::string& /*session_id*/,
                                 bool resumed) {
  absl::MutexLock guard(&mu_);
  if (resumed) {
    // The server is back. Renew everything at once (renewals may have
    // failed meanwhile) and retry the releases that failed.
    const MonotonicTime now = MonotonicNow();
    next_idle_keepalive_at_ = now;
    for (auto& [lock, release] : pending_releases_) {
      release.next_attempt_at = std::min(release.next_attempt_at, now);
    }
  }
  EmitLocked(ClientEvent{resumed ? ClientEvent::Kind::kSessionResumed
                                 : ClientEvent::Kind::kSessionOpened,
                         "", 0, std::nullopt, absl::OkStatus()});
  changed_.SignalAll();
}

void ClientCore::OnKeepaliveAck(uint64_t sequence, int renewed_leases) {
  absl::MutexLock guard(&mu_);
  // Acks come in order: older keepalives still waiting will get none.
  std::vector<uint64_t> older;
  for (const auto& [other, keepalive] : keepalives_) {
    if (other < sequence) older.push_back(other);
  }
  const MonotonicTime now = MonotonicNow();
  for (uint64_t other : older) {
    FailKeepaliveLocked(other, now,
                        absl::UnavailableError("keepalive not acknowledged"));
  }
  auto it = keepalives_.find(sequence);
  if (it == keepalives_.end()) return;
  KeepaliveInFlight keepalive = std::move(it->second);
  keepalives_.erase(it);

  std::vector<std::shared_ptr<LeaseState>> covered;
  for (const auto& weak : keepalive.leases) {
    std::shared_ptr<LeaseState> lease = weak.lock();
    if (lease == nullptr || lease->end_reason.has_value() || lease->releasing) {
      continue;
    }
    covered.push_back(std::move(lease));
  }
  // The server renewed `renewed_leases` leases of this client. If that is
  // fewer than this client holds, one of them is gone at the server: renew
  // each by call at once to learn which (NOT_HOLDER ends it).
  const bool all_renewed =
      renewed_leases >= static_cast<int64_t>(covered.size());
  for (const auto& lease : covered) {
    const bool mine = lease->renewal == LeaseState::Renewal::kKeepalive &&
                      lease->keepalive_sequence == sequence;
    if (all_renewed) {
      lease->timer.OnRenewed(keepalive.sent_at);
      lease->renew_request_id.clear();  // a later call renews anew
      if (mine) lease->renewal = LeaseState::Renewal::kIdle;
    } else if (mine) {
      lease->renewal = LeaseState::Renewal::kIdle;
      lease->renew_by_call = true;
      lease->renew_now = true;
    }
  }
  changed_.SignalAll();
}

void ClientCore::OnNotice(const pb::LockNotice& notice) {
  absl::MutexLock guard(&mu_);
  std::optional<LeaseEndReason> reason;
  switch (notice.kind()) {
    case pb::NOTICE_KIND_LEASE_LAPSED:
      reason = LeaseEndReason::kNotHolder;
      break;
    case pb::NOTICE_KIND_ABORTED_DEADLOCK_VICTIM:
      reason = LeaseEndReason::kDeadlockVictim;
      break;
    default:
      // GRANTED_FROM_QUEUE concerns only requests TryAcquire withdraws.
      return;
  }
  if (notice.token() == 0) return;  // a wait, not a lease: Acquire answers
  std::shared_ptr<LeaseState> match;
  for (const auto& [id, lease] : leases_) {
    if (lease->lock == notice.lock() && lease->token == notice.token()) {
      match = lease;
      break;
    }
  }
  if (match != nullptr) EndLocked(*match, *reason);
}

void ClientCore::OnSessionInterrupted(const absl::Status& status) {
  absl::MutexLock guard(&mu_);
  std::vector<uint64_t> sequences;
  for (const auto& [sequence, keepalive] : keepalives_) {
    sequences.push_back(sequence);
  }
  const MonotonicTime now = MonotonicNow();
  for (uint64_t sequence : sequences) {
    FailKeepaliveLocked(sequence, now, status);
  }
  EmitLocked(ClientEvent{ClientEvent::Kind::kSessionInterrupted, "", 0,
                         std::nullopt, status});
  changed_.SignalAll();
}

void ClientCore::OnSessionLost(const std::string& session_id,
                               const absl::Status& status) {
  absl::MutexLock guard(&mu_);
  EndAllLocked(LeaseEndReason::kSessionLost, session_id);
  // The server released everything the session held.
  for (auto it = pending_releases_.begin(); it != pending_releases_.end();) {
    if (it->second.session_id == session_id && !it->second.in_flight) {
      pending_releases_.erase(it++);
    } else {
      ++it;
    }
  }
  std::vector<uint64_t> sequences;
  for (const auto& [sequence, keepalive] : keepalives_) {
    sequences.push_back(sequence);
  }
  for (uint64_t sequence : sequences) {
    FailKeepaliveLocked(sequence, MonotonicNow(), status);
  }
  EmitLocked(ClientEvent{ClientEvent::Kind::kSessionLost, "", 0, std::nullopt,
                         status});
  changed_.SignalAll();
}

// ---------------------------------------------------------------------------
// Helpers

void ClientCore::EndLocked(LeaseState& lease, LeaseEndReason reason,
                           bool release_at_server) {
  if (lease.end_reason.has_value()) return;
  if ((reason == LeaseEndReason::kNotHolder ||
       reason == LeaseEndReason::kForced) &&
      lease.timer.ExpiredAt(MonotonicNow())) {
    // The client's deadline passed first (the server's lapse, which follows
    // it, is what the notice or the answer reports): the lease expired.
    reason = LeaseEndReason::kExpired;
  }
  lease.end_reason = reason;
  auto it = leases_.find(lease.id);
  if (it != leases_.end()) {
    to_stop_.push_back(it->second);
    leases_.erase(it);
  }
  if (release_at_server) {
    QueueReleaseLocked(lease.lock, lease.session_id, NewRequestId());
  }
  if (reason != LeaseEndReason::kReleased) {
    EmitLocked(ClientEvent{ClientEvent::Kind::kLeaseLost, lease.lock,
                           lease.token, reason, absl::OkStatus()});
  }
  changed_.SignalAll();
}

void ClientCore::EndAllLocked(LeaseEndReason reason,
                              const std::optional<std::string>& only_session) {
  std::vector<std::shared_ptr<LeaseState>> ending;
  for (const auto& [id, lease] : leases_) {
    if (!only_session.has_value() || lease->session_id == *only_session) {
      ending.push_back(lease);
    }
  }
  for (const auto& lease : ending) EndLocked(*lease, reason);
}

void ClientCore::QueueReleaseLocked(const std::string& lock,
                                    const std::string& session_id,
                                    const std::string& request_id) {
  if (shutting_down_ || pending_releases_.contains(lock)) return;
  PendingRelease release;
  release.session_id = session_id;
  release.request_id = request_id;
  release.next_attempt_at = MonotonicNow();
  pending_releases_.emplace(lock, std::move(release));
  changed_.SignalAll();
}

void ClientCore::RetireCallLocked(AsyncCall& call) {
  auto it = calls_.find(&call);
  finished_calls_.push_back(std::move(it->second));
  calls_.erase(it);
}

void ClientCore::EmitLocked(ClientEvent event) {
  if (options_.on_event) events_.push_back(std::move(event));
}

void ClientCore::Deliver() {
  std::vector<std::shared_ptr<LeaseState>> stops;
  std::vector<ClientEvent> events;
  {
    absl::MutexLock guard(&mu_);
    stops.swap(to_stop_);
    events.swap(events_);
  }
  for (const auto& lease : stops) lease->ended.request_stop();
  for (const ClientEvent& event : events) options_.on_event(event);
}

std::string ClientCore::NewRequestId() {
  return absl::StrCat(request_id_prefix_, "-", next_request_id_++);
}

CallOptions ClientCore::CallOptionsWithin(absl::Duration budget,
                                          bool retry) const {
  CallOptions options;
  options.timeout = std::max(budget, absl::Milliseconds(1));
  options.wait_for_ready = retry;
  return options;
}

}  // namespace leasekeeper::client::internal
