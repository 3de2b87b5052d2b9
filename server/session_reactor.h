// SessionReactor: one Session stream of leasekeeperd (gRPC's callback API,
// raw byte buffers), forwarding open, keepalive, close and the session's
// calls to CoreOwner and writing its answers and notices back
// (docs/design/server.md). Owns itself until OnDone; shared with CoreOwner
// as the session's SessionSink.
// Thread-safety: gRPC's callbacks and CoreOwner's completions arrive on any
// thread; mu_ guards the stream, is never held while calling CoreOwner, and
// never across StartWrite.
#ifndef LEASEKEEPER_SERVER_SESSION_REACTOR_H_
#define LEASEKEEPER_SERVER_SESSION_REACTOR_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"
#include "leasekeeper/v1/lock_service.pb.h"
#include "security/authorizer.h"
#include "server/answers.h"
#include "server/core_owner.h"
#include "server/reactor_alarm.h"
#include "server/rpc_metrics.h"
#include "server/server_config.h"

namespace leasekeeper::server {

class SessionReactor final
    : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>,
      public SessionSink,
      public std::enable_shared_from_this<SessionReactor> {
 public:
  // Bounds the outbox of a client that does not read its stream; beyond it
  // notices are dropped.
  static constexpr size_t kMaxOutbox = 4096;
  // Calls and keepalives of one stream that may await their answers at
  // once, and messages that may wait unsent in its outbox: beyond either,
  // the stream reads no more until one is answered or written (flow
  // control, not an error). So a client that writes without reading holds
  // at most this many answers, and gRPC's flow control then stops its
  // writes.
  static constexpr size_t kMaxCallsInFlight = 256;
  static constexpr size_t kMaxUnsent = 256;

  // `unopened` counts the streams that have not opened a session yet;
  // `metrics` (null: none) counts the limit refusals the stream answers
  // calls with.
  static SessionReactor* Start(CoreOwner& owner, const Limits& limits,
                               const security::Authorizer& authorizer,
                               std::atomic<size_t>& unopened,
                               const RpcMetrics* metrics,
                               grpc::CallbackServerContext* context);

  // gRPC's reactor callbacks.
  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

  // SessionSink: a notice for the session's client (dropped beyond
  // kMaxOutbox), and the end of the stream.
  void Notify(const SessionNotice& notice) override;
  void End(const absl::Status& status) override;

 private:
  SessionReactor(CoreOwner& owner, const Limits& limits,
                 const security::Authorizer& authorizer,
                 std::atomic<size_t>& unopened, const RpcMetrics* metrics,
                 grpc::CallbackServerContext* context);

  // A stream counts against --max-sessions from its start: one that never
  // sends `open` would otherwise hold a connection's resources unbounded.
  // False (and the stream finished) beyond the limit. Arms the open
  // timeout otherwise.
  bool AdmitUnopened();

  // Once: the stream no longer counts as unopened (it opened, or ended).
  void LeaveUnopened();

  void OpenTimedOut();

  // An Acquire sent on this stream that CoreOwner parked. Owned by parked_
  // until CoreOwner completes it; keeps the reactor alive until then.
  class ParkedAcquire final : public PendingAcquire {
   public:
    ParkedAcquire(std::shared_ptr<SessionReactor> stream, uint64_t call_id,
                  AcquireArgs args)
        : stream_(std::move(stream)),
          call_id_(call_id),
          args_(std::move(args)) {}
    void Complete(AcquireCallAnswer reply) override {
      // The last statement: it may destroy this object and the reactor.
      stream_->AnswerParked(this, std::move(reply));
    }
    uint64_t call_id() const { return call_id_; }
    const AcquireArgs& args() const { return args_; }

   private:
    const std::shared_ptr<SessionReactor> stream_;
    const uint64_t call_id_;
    const AcquireArgs args_;
  };

  void HandleOpen();

  // OpenSession's answer (durable).
  void Opened(const std::string& client,
              absl::StatusOr<SessionOpenedAnswer> opened);

  void HandleKeepalive();

  // A SessionCall: parsed and bound to the session here, so request_ is
  // free for the next read before the call is answered.
  void HandleCall();

  // The session a call acts in (fixed once `open` has been answered).
  struct Binding {
    std::string session_id;
    std::string client;
  };

  // The session's client and id stand in for empty fields; other values
  // are refused, so a stream can act only for the client that opened it.
  // The call's lock is authorized after the parse (its sizes) by the
  // caller.
  template <typename Request>
  absl::Status BindToSession(Request& request, const Binding& session);

  void AcquireCall(uint64_t call_id, v1::AcquireRequest request,
                   const Binding& session);

  // Renew and Release, which never wait: bind the request to the session,
  // parse it, apply it, and answer with what `fill` makes of the outcome,
  // or with the first error.
  template <typename Request, typename Parse, typename Apply, typename Fill>
  void AnswerCall(uint64_t call_id, Request request, const Binding& session,
                  Parse parse, Apply apply, Fill fill);

  static v1::SessionResponse CallError(uint64_t call_id,
                                       const absl::Status& status);

  // Sends the answer to a call refused before it reached CoreOwner once
  // the answers to earlier calls are durable (so it never overtakes them;
  // an error result of UNAVAILABLE if they cannot become durable), and
  // counts the call done.
  void AnswerWhenDurable(v1::SessionResponse message);

  // Sends a call's answer; false if the stream has finished. Reads resume
  // if they waited for a call to be answered.
  bool Answer(v1::SessionResponse message);

  // CoreOwner's answer to a parked Acquire (after it is durable).
  void AnswerParked(ParkedAcquire* call, AcquireCallAnswer reply);

  // The stream has ended: every Acquire still parked is withdrawn (each is
  // then completed with WaitCancelled, which finds the stream finished).
  void WithdrawParkedCalls();

  void HandleClose();

  // Reads the next message unless a read is outstanding, the stream is
  // finishing, kMaxCallsInFlight calls await their answers or kMaxUnsent
  // messages wait in the outbox.
  void ContinueReading();

  // The message read is dispatched (nothing reads request_ any more): the
  // next one may be read, as ContinueReading decides.
  void ReadNext();

  // A call or keepalive is answered (its answer queued, or the stream
  // finished): it no longer counts in calls_in_flight_.
  void CallAnswered();

  std::optional<std::string> SessionId();

  // The stream is over from the client's side: start the session's grace
  // (once) and finish.
  void EndStream(const absl::Status& status);

  void ReportStreamEnded();

  // Queues `message`; false if the stream has finished (or a droppable
  // message was dropped).
  bool Send(v1::SessionResponse message, bool droppable);

  // Serializes `message` into current_ and marks a write in flight; the
  // caller calls StartWrite(&current_) once it has released mu_.
  void PrepareWriteLocked(const v1::SessionResponse& message)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  void FinishOnce(const absl::Status& status);

  CoreOwner& owner_;
  const Limits& limits_;
  const security::Authorizer& authorizer_;
  std::atomic<size_t>& unopened_;
  const RpcMetrics* const metrics_;
  grpc::CallbackServerContext* const context_;
  grpc::ByteBuffer read_buffer_;  // owned by the read chain
  v1::SessionRequest request_;    // parsed from read_buffer_
  std::shared_ptr<SessionReactor> self_;
  // Ends a stream that sends no `open` in time.
  ReactorAlarm<SessionReactor> open_alarm_;

  absl::Mutex mu_;
  std::optional<std::string> session_id_ ABSL_GUARDED_BY(mu_);
  std::string client_ ABSL_GUARDED_BY(mu_);  // the session's, once opened
  // A read is in flight, or the message it read is being dispatched.
  bool read_outstanding_ ABSL_GUARDED_BY(mu_) = false;
  size_t calls_in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<ParkedAcquire*, std::unique_ptr<ParkedAcquire>> parked_
      ABSL_GUARDED_BY(mu_);
  bool stream_end_reported_ ABSL_GUARDED_BY(mu_) = false;
  bool counted_as_unopened_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<v1::SessionResponse> outbox_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  // The message being written: filled under mu_ while writing_ is false,
  // then gRPC's until the write's OnWriteDone.
  grpc::ByteBuffer current_;
  bool finish_called_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<grpc::Status> pending_finish_ ABSL_GUARDED_BY(mu_);
};

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_SESSION_REACTOR_H_
