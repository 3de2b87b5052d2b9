// ClientCore: the shared state behind a Client and its Leases (internal):
// the RpcClient, the Session, the live leases and a maintenance thread that
// expires, renews and retries releases. How: docs/design/clients.md.
//
// Invariants:
//   1. A lease is in leases_ iff its end_reason is unset.
//   2. end_reason is set once, under mu_, before its stop_source is
//      requested (outside mu_).
//   3. Nothing is called back, logged or sent while mu_ is held; the
//      Session's listener methods take mu_ and return quickly.
//   4. At most one release per lock is in flight, and an Acquire of a lock
//      first finishes any background release of that lock.
//   5. A core thread, never a gRPC one, destroys each asynchronous call
//      after its OnDone; Shutdown cancels the calls and waits for them.
//
// Thread-safety: thread-safe.
#ifndef LEASEKEEPER_CLIENT_INTERNAL_CLIENT_CORE_H_
#define LEASEKEEPER_CLIENT_INTERNAL_CLIENT_CORE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "client/internal/backoff.h"
#include "client/internal/channel_set.h"
#include "client/internal/session.h"
#include "client/lease_timer.h"
#include "client/rpc_client.h"
#include "client/types.h"

namespace leasekeeper::client::internal {

struct LeaseState {
  LeaseState(uint64_t id, std::string lock, FencingToken token, LockMode mode,
             absl::Duration ttl, std::string session_id, LeaseTimer timer)
      : id(id),
        lock(std::move(lock)),
        token(token),
        mode(mode),
        ttl(ttl),
        session_id(std::move(session_id)),
        timer(timer) {}

  const uint64_t id;  // unique within the ClientCore
  const std::string lock;
  const FencingToken token;
  const LockMode mode;
  const absl::Duration ttl;
  // The session it belongs to; empty without a session.
  const std::string session_id;

  // Guarded by ClientCore::mu_.
  LeaseTimer timer;
  enum class Renewal { kIdle, kKeepalive, kCall };
  Renewal renewal = Renewal::kIdle;
  // kKeepalive: the keepalive covering it.
  uint64_t keepalive_sequence = 0;
  // The next renewal goes by a Renew call (a keepalive did not account for
  // it, or its ack never came).
  bool renew_by_call = false;
  // Renew by call at once, whatever the timer says (a keepalive ack counted
  // fewer leases than this client holds: find out which one is gone).
  bool renew_now = false;
  // The request id of a background Renew call that failed for a transient
  // reason, reused by its retries (the server answers a repeat from its
  // retry cache, so it applies once), and when that id was first sent (a
  // success counts from there). Empty: the next call takes a new id.
  std::string renew_request_id;
  MonotonicTime renew_first_sent_at;
  // Release() or the destructor is releasing it; no more renewals.
  bool releasing = false;
  std::optional<LeaseEndReason> end_reason;

  // Requested once end_reason is set (invariant 2).
  std::stop_source ended;
};

class ClientCore : private SessionListener {
 public:
  ClientCore(std::shared_ptr<ChannelSet> channels, ClientOptions options);
  ~ClientCore() override;

  ClientCore(const ClientCore&) = delete;
  ClientCore& operator=(const ClientCore&) = delete;

  // Starts the maintenance thread. REQUIRES: called once, right after
  // construction.
  void Start();
  // Releases every live lease, closes the session, stops the threads and
  // cancels outstanding calls. Idempotent.
  void Shutdown();

  const std::string& client_id() const { return options_.client_id; }
  const RpcClient& rpc() const { return rpc_; }

  // Client::Acquire (try_only == false) and Client::TryAcquire (true). For a
  // busy lock with try_only, returns nullptr.
  absl::StatusOr<std::shared_ptr<LeaseState>> Acquire(
      absl::string_view lock, absl::Duration ttl, absl::Duration wait,
      const AcquireOptions& options, bool try_only);

  // Lease::Renew, Lease::Release and Client::Write for `lease`, with the
  // outcomes listed there.
  absl::Status Renew(LeaseState& lease);
  absl::Status Release(LeaseState& lease);
  absl::Status Write(LeaseState& lease, absl::string_view key,
                     absl::string_view value);

  // Client::Delete, with the outcomes listed there.
  absl::StatusOr<bool> Delete(LeaseState& lease, absl::string_view key);

  // Client::Read: the value or nullopt; INVALID_ARGUMENT; UNAVAILABLE.
  absl::StatusOr<std::optional<std::string>> Read(absl::string_view lock,
                                                  absl::string_view key) const;
  // Client::ListKeys: RpcClient::ListKeys within the call timeout.
  absl::StatusOr<KeysPage> ListKeys(absl::string_view lock,
                                    absl::string_view after,
                                    int32_t limit) const;

  // Lease::EndReason and Lease::TimeLeft.
  std::optional<LeaseEndReason> EndReason(const LeaseState& lease) const;
  absl::Duration TimeLeft(const LeaseState& lease) const;

  void PauseRenewalsForTesting(bool paused);
  void SuspendSessionForTesting(absl::Duration duration);

 private:
  // Write's and Delete's local check: OK while `lease` has not ended (an
  // expired one is ended here); else FAILED_PRECONDITION "not <doing> with
  // the token of the lease on <lock>: it has ended (<reason>)".
  absl::Status CheckLeaseLive(LeaseState& lease, absl::string_view doing);
  // One asynchronous unary call (a background Renew or Release); defined in
  // client_core.cc.
  class AsyncCall;
  template <typename Request, typename Response>
  class UnaryCall;

  // A background release is retried until the server answers it: after
  // 100 ms, doubling up to 5 s (jittered), and at once when the session is
  // resumed (the server is back).
  static constexpr absl::Duration kFirstReleaseRetryDelay =
      absl::Milliseconds(100);
  static constexpr absl::Duration kMaxReleaseRetryDelay = absl::Seconds(5);

  struct PendingRelease {
    std::string session_id;
    std::string request_id;
    bool in_flight = false;
    MonotonicTime next_attempt_at;
    Backoff backoff{kFirstReleaseRetryDelay, kMaxReleaseRetryDelay};
  };
  struct KeepaliveInFlight {
    MonotonicTime sent_at;
    // When its leases stop waiting for the ack and retry by call.
    MonotonicTime give_up_at;
    std::vector<std::weak_ptr<LeaseState>> leases;
  };
  // What the maintenance thread does after leaving mu_.
  struct Actions {
    std::optional<uint64_t> keepalive_sequence;
    std::vector<std::shared_ptr<LeaseState>> renew_by_call;
    std::vector<std::string> releases;  // locks
    bool interrupt_session = false;
  };

  // SessionListener (called on the session thread).
  void OnSessionOpened(const std::string& session_id, bool resumed) override;
  void OnKeepaliveAck(uint64_t sequence, int renewed_leases) override;
  void OnNotice(const leasekeeper::v1::LockNotice& notice) override;
  void OnSessionInterrupted(const absl::Status& status) override;
  void OnSessionLost(const std::string& session_id,
                     const absl::Status& status) override;

  void MaintenanceLoop();
  // Decides this round's work; returns how long to sleep at most.
  absl::Duration PlanLocked(MonotonicTime now, Actions& actions)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // PlanLocked's steps, in its order; each lowers `wake` to the next time
  // it has work. Leases past their deadline end (and are released):
  void EndExpiredLocked(MonotonicTime now, MonotonicTime& wake)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Keepalives whose ack is overdue fail:
  void FailOverdueKeepalivesLocked(MonotonicTime now, Actions& actions,
                                   MonotonicTime& wake)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Due leases renew, by keepalive on the session or by call (not paused):
  void PlanRenewalsLocked(MonotonicTime now, Actions& actions,
                          MonotonicTime& wake)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PlanKeepaliveLocked(MonotonicTime now, const std::string& session_id,
                           Actions& actions, MonotonicTime& wake)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Background releases whose retry is due go out:
  void PlanReleasesLocked(MonotonicTime now, Actions& actions,
                          MonotonicTime& wake)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Perform(Actions& actions) ABSL_LOCKS_EXCLUDED(mu_);
  void StartRenewCall(std::shared_ptr<LeaseState> lease)
      ABSL_LOCKS_EXCLUDED(mu_);
  void StartBackgroundRelease(const std::string& lock) ABSL_LOCKS_EXCLUDED(mu_);
  // `background`: the result of a renewal the maintenance thread started.
  void ApplyRenewResult(LeaseState& lease, MonotonicTime sent_at,
                        const absl::StatusOr<RenewResult>& result,
                        bool background) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FailKeepaliveLocked(uint64_t sequence, MonotonicTime now,
                           const absl::Status& status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Ends `lease` with `reason` (no-op if it has ended) and schedules its
  // stop. `release_at_server`: also queue a background release.
  void EndLocked(LeaseState& lease, LeaseEndReason reason,
                 bool release_at_server = false)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void EndAllLocked(LeaseEndReason reason,
                    const std::optional<std::string>& only_session)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void QueueReleaseLocked(const std::string& lock,
                          const std::string& session_id,
                          const std::string& request_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves a call that has finished from calls_ to finished_calls_.
  void RetireCallLocked(AsyncCall& call) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void EmitLocked(ClientEvent event) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Requests the stops and delivers the events queued under mu_.
  void Deliver() ABSL_LOCKS_EXCLUDED(mu_);

  // Finishes (synchronously) any background release of `lock` (invariant 4).
  absl::Status FlushReleaseOf(const std::string& lock, std::stop_token stop)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Withdraws a request TryAcquire left queued.
  void Withdraw(const std::string& lock, const std::string& session_id)
      ABSL_LOCKS_EXCLUDED(mu_);
  // One Acquire, Renew or Release (docs/design/clients.md, "Which way a
  // call travels"): on the
  // stream of call.session_id if connected, else (or after the stream
  // dropped, with what is left of options.timeout) by `unary`. Returns what
  // the unary call would. `abandoned` (optional) is set when the call was
  // given up on the stream (options.cancel, options.timeout) without an
  // answer: it may still be applied, or wait, at the server.
  template <typename Call, typename Result>
  absl::StatusOr<Result> Route(const Call& call, CallOptions options,
                               absl::StatusOr<Result> (RpcClient::*unary)(
                                   const Call&, const CallOptions&) const,
                               absl::StatusOr<Result> (*from_stream)(
                                   const leasekeeper::v1::SessionCallResult&),
                               bool* abandoned = nullptr)
      ABSL_LOCKS_EXCLUDED(mu_);
  // One Release call with retries of transient failures for up to
  // call_timeout.
  absl::StatusOr<ReleaseOutcome> ReleaseWithRetries(const ReleaseCall& call);
  // One Acquire's state across its attempts; defined in client_core.cc.
  struct AcquireAttempts;
  using LeaseOrStatus = absl::StatusOr<std::shared_ptr<LeaseState>>;
  // OK unless shut down or `lock` is held already (FAILED_PRECONDITION).
  absl::Status CheckNotHeld(const std::string& lock) ABSL_LOCKS_EXCLUDED(mu_);
  // Opens (or finds open) the session within what is left of the wait.
  absl::StatusOr<std::string> OpenSessionFor(const AcquireAttempts& attempts);
  // One attempt; withdraws it and renumbers the call if it was abandoned.
  absl::StatusOr<AcquireResult> SendAcquire(AcquireAttempts& attempts)
      ABSL_LOCKS_EXCLUDED(mu_);
  // What Acquire returns for the server's answer.
  LeaseOrStatus AnswerAcquire(const AcquireResult& result,
                              const AcquireAttempts& attempts)
      ABSL_LOCKS_EXCLUDED(mu_);
  // What Acquire returns after a failed attempt; nullopt: try again.
  std::optional<LeaseOrStatus> RecoverFromAcquireError(
      const absl::Status& status, AcquireAttempts& attempts)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Replaces a session the server ended by a new one for the next attempt.
  absl::Status ReopenSession(AcquireAttempts& attempts)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::shared_ptr<LeaseState>> RegisterLease(
      const std::string& lock, FencingToken token, LockMode mode,
      absl::Duration ttl, const std::string& session_id,
      MonotonicTime counted_from, absl::Duration lease_left)
      ABSL_LOCKS_EXCLUDED(mu_);
  // A lost grant answer: the server says CLIENT_BUSY because this client
  // already holds `lock`. Adopts that lease by renewing it.
  absl::StatusOr<std::shared_ptr<LeaseState>> AdoptHeldLease(
      const std::string& lock, absl::Duration ttl, LockMode mode,
      const std::string& session_id);

  std::string NewRequestId();
  // A unary call's options with a timeout of `budget` (at least 1 ms). A
  // `retry` (after a transient failure) waits for the channel to connect
  // within the budget instead of failing at once (CallOptions).
  CallOptions CallOptionsWithin(absl::Duration budget,
                                bool retry = false) const;

  const ClientOptions options_;
  RpcClient rpc_;
  // Created only when options_.use_session.
  std::unique_ptr<Session> session_;

  mutable absl::Mutex mu_;
  absl::CondVar changed_;
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  bool paused_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_lease_id_ ABSL_GUARDED_BY(mu_) = 1;
  absl::flat_hash_map<uint64_t, std::shared_ptr<LeaseState>> leases_
      ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, PendingRelease> pending_releases_
      ABSL_GUARDED_BY(mu_);
  uint64_t next_keepalive_sequence_ ABSL_GUARDED_BY(mu_) = 1;
  absl::flat_hash_map<uint64_t, KeepaliveInFlight> keepalives_
      ABSL_GUARDED_BY(mu_);
  MonotonicTime next_idle_keepalive_at_ ABSL_GUARDED_BY(mu_);
  // Asynchronous calls that have not finished, and finished ones a core
  // thread has yet to destroy (invariant 5).
  absl::flat_hash_map<AsyncCall*, std::unique_ptr<AsyncCall>> calls_
      ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<AsyncCall>> finished_calls_ ABSL_GUARDED_BY(mu_);
  // Ended leases whose stop is still to be requested, and events to deliver.
  std::vector<std::shared_ptr<LeaseState>> to_stop_ ABSL_GUARDED_BY(mu_);
  std::vector<ClientEvent> events_ ABSL_GUARDED_BY(mu_);
  const std::string request_id_prefix_;
  std::atomic<uint64_t> next_request_id_{1};

  std::thread maintenance_;
};

}  // namespace leasekeeper::client::internal

#endif  // LEASEKEEPER_CLIENT_INTERNAL_CLIENT_CORE_H_
