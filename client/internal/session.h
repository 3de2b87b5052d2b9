// Session: one client's session stream with leasekeeperd, kept open and
// resumed by a thread of its own; ClientCore owns it and listens to it
// (internal). Its lifecycle: docs/design/clients.md ("The session").
//
// Invariants:
//   1. At most one stream exists at a time; its id is id() while the state is
//      open or resuming, and empty otherwise.
//   2. The listener is never called with the Session's mutex held, and
//      always from the session thread, in stream order.
//   3. Writes (SendKeepalive, Call, Close) are serialized by a mutex of their
//      own: one reader and one writer on a stream, as gRPC allows.
//   4. Every Call ends exactly once (its call_result, UNAVAILABLE once its
//      stream ended, or the caller gives up), and is written only on the
//      stream that was open when it started.
//
// Thread-safety: every method is thread-safe. Do not hold a lock the
// listener takes while calling SendKeepalive, Call, Close or Stop.
#ifndef LEASEKEEPER_CLIENT_INTERNAL_SESSION_H_
#define LEASEKEEPER_CLIENT_INTERNAL_SESSION_H_

#include <grpcpp/client_context.h>
#include <grpcpp/support/sync_stream.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/internal/backoff.h"
#include "client/internal/channel_set.h"
#include "client/lease_timer.h"
#include "leasekeeper/v1/lock_service.grpc.pb.h"

namespace leasekeeper::client::internal {

// Receives what happens on the stream. Called on the session thread only.
class SessionListener {
 public:
  virtual ~SessionListener() = default;
  // A session is open: a new one (resumed == false) or `session_id` resumed.
  virtual void OnSessionOpened(const std::string& session_id, bool resumed) = 0;
  // The server acknowledged keepalive `sequence`, renewing that many leases.
  virtual void OnKeepaliveAck(uint64_t sequence, int renewed_leases) = 0;
  // Something happened to one of the client's leases or waits.
  virtual void OnNotice(const leasekeeper::v1::LockNotice& notice) = 0;
  // The stream dropped; the session is being resumed. Unacknowledged
  // keepalives will never be acknowledged.
  virtual void OnSessionInterrupted(const absl::Status& status) = 0;
  // The session `session_id` ended at the server (resume refused, replaced
  // by a newer session of the same client, or the server restarted): every
  // lease it kept alive is gone.
  virtual void OnSessionLost(const std::string& session_id,
                             const absl::Status& status) = 0;
};

class Session {
 public:
  // With several endpoints, a stream whose node has not answered the open
  // within `open_timeout` is cut and reported to `channels` (a hung node).
  // REQUIRES: `channels` and `listener` outlive the Session;
  // open_timeout > 0.
  Session(ChannelSet& channels, std::string client_id,
          SessionListener& listener, absl::Duration open_timeout);
  // Stop().
  ~Session();

  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // The id of the open (or resuming) session, opening one if there is none.
  // Outcomes: the id; the last open failure (UNAVAILABLE when the server
  // cannot be reached, INVALID_ARGUMENT for a bad client id, ...) when no
  // session opened within `timeout`; CANCELLED if `stop` was requested.
  absl::StatusOr<std::string> EnsureOpen(absl::Duration timeout,
                                         std::stop_token stop);

  // The open (or resuming) session's id; empty when there is none.
  std::string id() const;
  // True while a stream is connected and opened.
  bool connected() const;

  // Sends keepalive `sequence`. False if no stream is connected or the write
  // failed (the stream is then dropping; OnSessionInterrupted follows).
  bool SendKeepalive(uint64_t sequence);

  // Ends the session: sends `close` (the server releases the client's
  // leases and withdraws its wait) and waits up to `timeout` for the server
  // to finish the stream. Returns true if the server confirmed with OK.
  // Afterwards the Session is idle; EnsureOpen opens a new session.
  bool Close(absl::Duration timeout);

  // Sends `call` (an Acquire, Renew or Release of this client; its call_id is
  // set here) on the stream of session `session_id` and waits for the
  // server's answer, up to `timeout` or until `stop` is requested.
  // Outcomes:
  //  - the call_result: the response, or the server's SessionCallError
  //    (FromSessionCallError makes it the unary call's status);
  //  - UNAVAILABLE: no stream of `session_id` is connected, the write
  //    failed, or the stream ended before the answer. The call may have been
  //    applied, and a waiting Acquire has been withdrawn by the server:
  //    retry with the same request_id, by either way;
  //  - DEADLINE_EXCEEDED after `timeout`, CANCELLED when `stop` is
  //    requested: the call may still be applied, or wait at the server, and
  //    its answer will be dropped. The caller withdraws what it abandons (a
  //    Release of the lock withdraws an Acquire).
  absl::StatusOr<leasekeeper::v1::SessionCallResult> Call(
      const std::string& session_id, leasekeeper::v1::SessionCall call,
      absl::Duration timeout, std::stop_token stop);

  // Cuts the stream as a dropped connection would; the session is resumed.
  // `why` non-OK: the node failed to answer in time, and the stream's end
  // is reported to the ChannelSet as that failure (the next attempt may go
  // elsewhere); OK: a cut of the client's own, which says nothing about it.
  void Interrupt(absl::Status why = absl::OkStatus());

  // The server said `session_id` has ended (a call naming it was refused
  // with SESSION_ENDED) before the stream told us. If it is the current
  // session, it is dropped without a resume attempt: the stream is cut, and
  // the next EnsureOpen opens a new session. OnSessionLost follows if the
  // stream was still connected.
  void Abandon(const std::string& session_id);

  // Testing: cuts the stream and does not try to resume for `duration`, so
  // the server's grace can run out, as it would for a crashed process.
  void SuspendForTesting(absl::Duration duration);

  // Stops the thread for good, cancelling the stream without `close` (the
  // server then keeps the session for its grace; Close() first for a clean
  // end). Afterwards the listener is not called again, EnsureOpen says
  // CANCELLED and Call UNAVAILABLE. Idempotent.
  void Stop();

 private:
  using Stream = grpc::ClientReaderWriter<leasekeeper::v1::SessionRequest,
                                          leasekeeper::v1::SessionResponse>;
  enum class State { kIdle, kOpening, kOpen, kResuming, kClosing, kStopped };

  void Run();
  // Opens a stream (resuming `resume_id` if not empty), reads it until it
  // ends and handles the end. Returns after the stream is gone.
  void RunOneStream(const std::string& resume_id);
  // How a stream's open went.
  struct OpenAttempt {
    std::unique_ptr<Stream> stream;
    leasekeeper::v1::SessionResponse first;  // the first message read
    bool answered = false;   // the open was written and a message read
    bool timed_out = false;  // no answer within open_timeout_ (cancelled)
  };
  // Makes `context` the current stream's; its epoch, or nullopt if stopped
  // or `resume_id` was abandoned meanwhile.
  std::optional<uint64_t> BeginStream(
      const std::string& resume_id,
      std::shared_ptr<grpc::ClientContext> context) ABSL_LOCKS_EXCLUDED(mu_);
  // Makes the stream and sends the open; waits for the first answer.
  OpenAttempt OpenStream(const ChannelSet::Pick& pick,
                         grpc::ClientContext& context,
                         const std::string& resume_id) ABSL_LOCKS_EXCLUDED(mu_);
  // Marks the session open, tells the listener and reads until the end.
  void ServeOpenStream(Stream& stream,
                       const leasekeeper::v1::SessionOpened& opened,
                       const std::string& resume_id, uint64_t epoch)
      ABSL_LOCKS_EXCLUDED(mu_, write_mu_);
  // Hands a call_result to the Call waiting for it (dropped if none is).
  void Answer(leasekeeper::v1::SessionCallResult result);
  // The stream `epoch` ended: the calls still waiting get UNAVAILABLE.
  void FailCallsOf(uint64_t epoch);
  // The stream ended with `status` after `opened` was (or was not) seen.
  // `moved`: the ChannelSet moved because of this end (try there at once).
  void HandleStreamEnd(const std::string& resume_id, bool opened,
                       const absl::Status& status, bool moved);

  ChannelSet& channels_;
  const absl::Duration open_timeout_;
  const std::string client_id_;
  SessionListener& listener_;
  std::thread thread_;

  mutable absl::Mutex mu_;
  absl::CondVar changed_;
  State state_ ABSL_GUARDED_BY(mu_) = State::kIdle;
  bool want_open_ ABSL_GUARDED_BY(mu_) = false;
  std::string id_ ABSL_GUARDED_BY(mu_);
  // The context of the current stream, for TryCancel.
  std::shared_ptr<grpc::ClientContext> context_ ABSL_GUARDED_BY(mu_);
  absl::Status last_open_error_ ABSL_GUARDED_BY(mu_);
  // Counts finished open attempts, so EnsureOpen can tell a new failure.
  uint64_t open_attempts_ ABSL_GUARDED_BY(mu_) = 0;
  Backoff backoff_ ABSL_GUARDED_BY(mu_);
  MonotonicTime next_attempt_at_ ABSL_GUARDED_BY(mu_);
  bool last_close_ok_ ABSL_GUARDED_BY(mu_) = false;
  // The id Abandon was told has ended; never handed out again.
  std::string abandoned_id_ ABSL_GUARDED_BY(mu_);
  // Why the current stream was cut by Interrupt; OK if it was not.
  absl::Status cut_reason_ ABSL_GUARDED_BY(mu_);
  // SuspendForTesting: no attempt before this.
  MonotonicTime suspended_until_ ABSL_GUARDED_BY(mu_);
  // Numbers the streams, so a call is written only on its own (invariant 4).
  uint64_t epoch_ ABSL_GUARDED_BY(mu_) = 0;
  // The Calls waiting for their answers, by call_id.
  struct PendingCall {
    uint64_t epoch = 0;  // of the stream it is for
    std::optional<absl::StatusOr<leasekeeper::v1::SessionCallResult>> answer;
  };
  uint64_t next_call_id_ ABSL_GUARDED_BY(mu_) = 1;
  absl::flat_hash_map<uint64_t, PendingCall> calls_ ABSL_GUARDED_BY(mu_);
  std::once_flag stopped_;

  // Guards writes to the stream (invariant 3). Never held with mu_.
  absl::Mutex write_mu_;
  Stream* stream_ ABSL_GUARDED_BY(write_mu_) = nullptr;
  uint64_t stream_epoch_ ABSL_GUARDED_BY(write_mu_) = 0;  // stream_'s
};

}  // namespace leasekeeper::client::internal

#endif  // LEASEKEEPER_CLIENT_INTERNAL_SESSION_H_
