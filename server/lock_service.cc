#include "server/lock_service.h"

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/errors.h"
#include "grpcpp/alarm.h"
#include "server/convert.h"
#include "server/grpc_status.h"
#include "server/server_errors.h"
#include "server/watch_stream.h"
#include "spdlog/spdlog.h"
#include "version/version.h"

namespace leasekeeper::server {
namespace {

namespace pb = ::leasekeeper::v1;

// Adds the error's trailing metadata and returns the status to finish with.
grpc::Status PrepareFinish(grpc::CallbackServerContext* context,
                           const absl::Status& status) {
  return server::PrepareFinish(*context, status);
}

// The peer of a call, as its transport proved it.
security::PeerIdentity PeerOf(grpc::CallbackServerContext* context) {
  return security::PeerIdentityFromAuthContext(context->auth_context().get());
}

// Acquire, Renew, Release: the caller acts as its own client and is granted
// the lock (security/authorizer.h). Checked before validation, so a caller
// without access learns nothing about the request's shape.
absl::Status AuthorizeLockCall(const security::Authorizer& authorizer,
                               grpc::CallbackServerContext* context,
                               const std::string& client,
                               const std::string& lock) {
  const security::PeerIdentity peer = PeerOf(context);
  if (absl::Status s = authorizer.CheckActAs(peer, client); !s.ok()) return s;
  return authorizer.CheckUseLock(peer, lock);
}

grpc::ServerUnaryReactor* FinishNow(grpc::CallbackServerContext* context,
                                    const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(PrepareFinish(context, status));
  return reactor;
}

// Finishes with `status` (the response already filled in) once everything
// the call applied, or observed, is durable; with UNAVAILABLE if it cannot
// become durable. No thread waits for the disk: the finish runs on the
// store's flusher thread (or right here when nothing is pending).
grpc::ServerUnaryReactor* FinishWhenDurable(CoreOwner& owner,
                                            grpc::CallbackServerContext* context,
                                            absl::Status status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  owner.AfterDurable([reactor, context, status = std::move(status)](
                         absl::Status durable) {
    reactor->Finish(PrepareFinish(context, durable.ok() ? status : durable));
  });
  return reactor;
}

// A query's answer (the response already filled in): finishes once the
// records up to its read barrier are durable (CoreOwner's queries).
grpc::ServerUnaryReactor* FinishWhenDurable(CoreOwner& owner,
                                            grpc::CallbackServerContext* context,
                                            absl::Status status,
                                            storage::LogPosition barrier) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  owner.AfterDurable(barrier, [reactor, context, status = std::move(status)](
                                  absl::Status durable) {
    reactor->Finish(PrepareFinish(context, durable.ok() ? status : durable));
  });
  return reactor;
}

// One Acquire call. Lives until OnDone; CoreOwner may hold it (parked) and
// complete it from any thread.
class AcquireReactor final : public grpc::ServerUnaryReactor,
                             public PendingAcquire {
 public:
  AcquireReactor(CoreOwner& owner, const Limits& limits,
                 grpc::CallbackServerContext* context,
                 const pb::AcquireRequest* request,
                 pb::AcquireResponse* response)
      : owner_(owner), context_(context), response_(response) {
    absl::StatusOr<AcquireArgs> args = ParseAcquire(*request, limits);
    if (!args.ok()) {
      FinishWith(AcquireReply{args.status()});
      return;
    }
    args_ = *std::move(args);
    parsed_ = true;
    // After this call another thread may complete (and so finish) us; touch
    // nothing but the returned value.
    std::optional<AcquireReply> reply = owner_.Acquire(args_, this);
    if (!reply.has_value()) return;
    // Answered at once: the answer waits until it is durable.
    owner_.AfterDurable(
        [this, reply = *std::move(reply)](absl::Status durable) mutable {
          if (!durable.ok()) reply.result = durable;
          FinishWith(std::move(reply));
        });
  }

  void Complete(AcquireReply reply) override { FinishWith(std::move(reply)); }

  void OnCancel() override {
    if (parsed_) owner_.CancelWait(args_.client, args_.lock, this);
  }

  void OnDone() override {
    if (parsed_) owner_.AcquireCallDone(args_, reply_, context_->IsCancelled());
    delete this;
  }

 private:
  void FinishWith(AcquireReply reply) {
    reply_ = std::move(reply);
    if (reply_.result.ok()) {
      ToProto(*reply_.result, response_);
      Finish(grpc::Status::OK);
    } else {
      Finish(PrepareFinish(context_, reply_.result.status()));
    }
  }

  CoreOwner& owner_;
  grpc::CallbackServerContext* const context_;
  pb::AcquireResponse* const response_;
  AcquireArgs args_;
  bool parsed_ = false;
  AcquireReply reply_{absl::UnknownError("not answered")};
};

// One Session stream. Owned by itself (self_) until OnDone, and shared with
// CoreOwner as the session's SessionSink, so a notice sent after the stream
// ended finds a live object that drops it.
//
// Reads: one StartRead at a time; the next read starts once a message has
// been dispatched, unless kMaxCallsInFlight calls await their answers (then
// it starts when one is answered: flow control, not an error). Writes go
// through an outbox so that at most one StartWrite is in flight; Finish is
// called once, after the outbox drains. gRPC runs OnReadDone, OnWriteDone
// and OnDone on its own threads (never inline), so StartRead, StartWrite and
// Finish may be called with mu_ held. mu_ is never held while calling
// CoreOwner.
//
// Calls (SessionCall): the same parsing and CoreOwner methods as the unary
// calls, after the request is bound to the session's client and id. A
// waiting Acquire is parked in CoreOwner as a ParkedAcquire, which keeps the
// reactor alive until CoreOwner completes it; when the stream ends, each is
// withdrawn (CancelWait). A call's answer that cannot be sent because the
// stream has finished is reported to CoreOwner::AcquireCallDone as not
// delivered; one lost in a broken connection after it was queued is not,
// and the session's grace, or the client's resume and retry, settles it.
class SessionReactor final
    : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>,
      public SessionSink,
      public std::enable_shared_from_this<SessionReactor> {
 public:
  // Bounds the outbox of a client that does not read its stream; beyond it
  // notices are dropped.
  static constexpr size_t kMaxOutbox = 4096;
  // Calls of one stream that may await their answers at once.
  static constexpr size_t kMaxCallsInFlight = 256;

  // `unopened` counts the streams that have not opened a session yet.
  static SessionReactor* Start(CoreOwner& owner, const Limits& limits,
                               const security::Authorizer& authorizer,
                               std::atomic<size_t>& unopened,
                               grpc::CallbackServerContext* context) {
    std::shared_ptr<SessionReactor> reactor(
        new SessionReactor(owner, limits, authorizer, unopened, context));
    reactor->self_ = reactor;
    if (reactor->AdmitUnopened()) reactor->ContinueReading();
    return reactor.get();
  }

  void OnReadDone(bool ok) override {
    {
      absl::MutexLock lock(&mu_);
      read_outstanding_ = false;
    }
    if (!ok) {
      // The client half-closed, or the stream broke, without `close`.
      EndStream(absl::OkStatus());
      return;
    }
    if (!grpc::SerializationTraits<pb::SessionRequest>::Deserialize(
             &read_buffer_, &request_)
             .ok()) {
      // Ends the stream, not the session: it is in its grace as after a
      // broken connection, so the client may resume it.
      EndStream(UndecodableMessage("Session message"));
      return;
    }
    switch (request_.kind_case()) {
      case pb::SessionRequest::kOpen:
        HandleOpen();
        return;
      case pb::SessionRequest::kKeepalive:
        HandleKeepalive();
        return;
      case pb::SessionRequest::kClose:
        HandleClose();
        return;
      case pb::SessionRequest::kCall:
        HandleCall();
        return;
      case pb::SessionRequest::KIND_NOT_SET:
        break;
    }
    EndStream(InvalidField(ErrorCode::kInvalidArguments, "kind"));
  }

  void OnWriteDone(bool ok) override {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    if (!ok) outbox_.clear();  // broken stream: OnReadDone/OnCancel follow
    if (!outbox_.empty()) {
      pb::SessionResponse next = std::move(outbox_.front());
      outbox_.pop_front();
      WriteLocked(next);
      return;
    }
    if (pending_finish_.has_value()) {
      Finish(*pending_finish_);
      pending_finish_.reset();
    }
  }

  void OnCancel() override { EndStream(absl::CancelledError("cancelled")); }

  void OnDone() override {
    LeaveUnopened();
    open_alarm_.Cancel();  // drops the alarm's reference to this reactor
    ReportStreamEnded();
    WithdrawParkedCalls();
    // Drops the self-reference last: CoreOwner may still hold the sink.
    std::shared_ptr<SessionReactor> keep = std::move(self_);
  }

  void Notify(const SessionNotice& notice) override {
    pb::SessionResponse message;
    ToProto(notice, message.mutable_notice());
    Send(std::move(message), /*droppable=*/true);
  }

  void End(const absl::Status& status) override { FinishOnce(status); }

 private:
  SessionReactor(CoreOwner& owner, const Limits& limits,
                 const security::Authorizer& authorizer,
                 std::atomic<size_t>& unopened,
                 grpc::CallbackServerContext* context)
      : owner_(owner),
        limits_(limits),
        authorizer_(authorizer),
        unopened_(unopened),
        context_(context) {}

  // A stream counts against --max-sessions from its start: one that never
  // sends `open` would otherwise hold a connection's resources unbounded.
  // False (and the stream finished) beyond the limit. Arms the open
  // timeout otherwise.
  bool AdmitUnopened() {
    const size_t unopened = unopened_.fetch_add(1) + 1;
    {
      absl::MutexLock lock(&mu_);
      counted_as_unopened_ = true;
    }
    if (unopened + owner_.GetStats().sessions > limits_.max_sessions) {
      LeaveUnopened();
      FinishOnce(LimitExceeded("max-sessions",
                               static_cast<int64_t>(limits_.max_sessions)));
      return false;
    }
    open_alarm_.Set(
        std::chrono::system_clock::now() +
            std::chrono::milliseconds(limits_.session_open_timeout_ms),
        [self = shared_from_this()](bool fired) {
          if (fired) self->OpenTimedOut();
        });
    return true;
  }

  // Once: the stream no longer counts as unopened (it opened, or ended).
  void LeaveUnopened() {
    {
      absl::MutexLock lock(&mu_);
      if (!counted_as_unopened_) return;
      counted_as_unopened_ = false;
    }
    unopened_.fetch_sub(1);
  }

  void OpenTimedOut() {
    {
      absl::MutexLock lock(&mu_);
      if (!counted_as_unopened_) return;  // it opened meanwhile
    }
    FinishOnce(SessionOpenTimedOut(limits_.session_open_timeout_ms));
  }

  // An Acquire sent on this stream that CoreOwner parked. Owned by parked_
  // until CoreOwner completes it; keeps the reactor alive until then.
  class ParkedAcquire final : public PendingAcquire {
   public:
    ParkedAcquire(std::shared_ptr<SessionReactor> stream, uint64_t call_id,
                  AcquireArgs args)
        : stream_(std::move(stream)), call_id_(call_id), args_(std::move(args)) {}
    void Complete(AcquireReply reply) override {
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

  void HandleOpen() {
    if (SessionId().has_value()) {
      EndStream(InvalidField(ErrorCode::kInvalidArguments, "open"));
      return;
    }
    // From here OpenSession counts it, as a session, against the limit.
    LeaveUnopened();
    if (absl::Status denied = authorizer_.CheckActAs(
            PeerOf(context_), request_.open().client_id());
        !denied.ok()) {
      FinishOnce(denied);
      return;
    }
    absl::StatusOr<OpenArgs> args = ParseOpen(request_.open(), limits_);
    if (!args.ok()) {
      FinishOnce(args.status());
      return;
    }
    absl::StatusOr<SessionOpenedAnswer> opened = owner_.OpenSession(
        args->client, args->resume_session_id, shared_from_this());
    if (!opened.ok()) {
      FinishOnce(opened.status());
      return;
    }
    {
      absl::MutexLock lock(&mu_);
      session_id_ = opened->session_id;
      client_ = args->client;
    }
    pb::SessionResponse message;
    pb::SessionOpened* proto = message.mutable_opened();
    proto->set_session_id(opened->session_id);
    proto->set_grace_ms(opened->grace_ms);
    proto->set_resumed(opened->resumed);
    SendWhenDurable(std::move(message));
    ContinueReading();
  }

  void HandleKeepalive() {
    std::optional<std::string> id = SessionId();
    if (!id.has_value()) {
      EndStream(InvalidField(ErrorCode::kInvalidArguments, "open"));
      return;
    }
    const uint64_t sequence = request_.keepalive().sequence();
    absl::StatusOr<int> renewed = owner_.Keepalive(*id, this);
    if (!renewed.ok()) {
      FinishOnce(renewed.status());
      return;
    }
    pb::SessionResponse message;
    message.mutable_keepalive_ack()->set_sequence(sequence);
    message.mutable_keepalive_ack()->set_renewed_leases(*renewed);
    SendWhenDurable(std::move(message));
    ContinueReading();
  }

  // A SessionCall: parsed and bound to the session here, so request_ is
  // free for the next read before the call is answered.
  void HandleCall() {
    Binding session;
    {
      absl::MutexLock lock(&mu_);
      if (session_id_.has_value()) {
        session = Binding{*session_id_, client_};
        ++calls_in_flight_;
      }
    }
    if (session.session_id.empty()) {  // session ids are never empty
      EndStream(InvalidField(ErrorCode::kInvalidArguments, "open"));
      return;
    }
    const pb::SessionCall& call = request_.call();
    const uint64_t call_id = call.call_id();
    switch (call.request_case()) {
      case pb::SessionCall::kAcquire: {
        pb::AcquireRequest request = call.acquire();
        ContinueReading();
        return AcquireCall(call_id, std::move(request), session);
      }
      case pb::SessionCall::kRenew: {
        pb::RenewRequest request = call.renew();
        ContinueReading();
        return AnswerCall(call_id, std::move(request), session, &ParseRenew,
                          &CoreOwner::Renew,
                          [](const RenewAnswer& answer,
                             pb::SessionCallResult& result) {
                            ToProto(answer, result.mutable_renew());
                          });
      }
      case pb::SessionCall::kRelease: {
        pb::ReleaseRequest request = call.release();
        ContinueReading();
        return AnswerCall(call_id, std::move(request), session, &ParseRelease,
                          &CoreOwner::Release,
                          [](const ReleaseOutcome& outcome,
                             pb::SessionCallResult& result) {
                            result.mutable_release()->set_result(
                                ToProto(outcome));
                          });
      }
      case pb::SessionCall::REQUEST_NOT_SET:
        break;
    }
    ContinueReading();
    AnswerWhenDurable(CallError(
        call_id, InvalidField(ErrorCode::kInvalidArguments, "request")));
  }

  // The session a call acts in (fixed once `open` has been answered).
  struct Binding {
    std::string session_id;
    std::string client;
  };

  // The session's client and id stand in for empty fields; other values
  // are refused, so a stream can act only for the client that opened it.
  template <typename Request>
  absl::Status BindToSession(Request& request, const Binding& session) {
    if (request.client_id().empty()) request.set_client_id(session.client);
    if (request.client_id() != session.client) {
      return InvalidField(ErrorCode::kInvalidArguments, "client_id");
    }
    if (request.session_id().empty()) {
      request.set_session_id(session.session_id);
    }
    if (request.session_id() != session.session_id) {
      return InvalidField(ErrorCode::kInvalidArguments, "session_id");
    }
    return authorizer_.CheckUseLock(PeerOf(context_), request.lock());
  }

  void AcquireCall(uint64_t call_id, pb::AcquireRequest request,
                   const Binding& session) {
    if (absl::Status s = BindToSession(request, session); !s.ok()) {
      return AnswerWhenDurable(CallError(call_id, s));
    }
    absl::StatusOr<AcquireArgs> args = ParseAcquire(request, limits_);
    if (!args.ok()) return AnswerWhenDurable(CallError(call_id, args.status()));
    auto parked = std::make_unique<ParkedAcquire>(shared_from_this(), call_id,
                                                  *std::move(args));
    ParkedAcquire* call = parked.get();
    {
      absl::MutexLock lock(&mu_);
      parked_.emplace(call, std::move(parked));
    }
    // From here CoreOwner may complete (and so destroy) `call` on another
    // thread; touch nothing of it but through AnswerParked.
    std::optional<AcquireReply> reply = owner_.Acquire(call->args(), call);
    if (!reply.has_value()) return;
    owner_.AfterDurable(
        [call, reply = *std::move(reply)](absl::Status durable) mutable {
          if (!durable.ok()) reply.result = durable;
          call->Complete(std::move(reply));
        });
  }

  // Renew and Release, which never wait: bind the request to the session,
  // parse it, apply it, and answer with what `fill` makes of the outcome,
  // or with the first error.
  template <typename Request, typename Parse, typename Apply, typename Fill>
  void AnswerCall(uint64_t call_id, Request request, const Binding& session,
                  Parse parse, Apply apply, Fill fill) {
    if (absl::Status s = BindToSession(request, session); !s.ok()) {
      return AnswerWhenDurable(CallError(call_id, s));
    }
    auto args = parse(request, limits_);
    if (!args.ok()) return AnswerWhenDurable(CallError(call_id, args.status()));
    auto outcome = std::invoke(apply, owner_, *args);
    if (!outcome.ok()) {
      return AnswerWhenDurable(CallError(call_id, outcome.status()));
    }
    pb::SessionResponse message;
    message.mutable_call_result()->set_call_id(call_id);
    fill(*outcome, *message.mutable_call_result());
    AnswerWhenDurable(std::move(message));
  }

  static pb::SessionResponse CallError(uint64_t call_id,
                                       const absl::Status& status) {
    pb::SessionResponse message;
    message.mutable_call_result()->set_call_id(call_id);
    ToSessionCallError(status, message.mutable_call_result()->mutable_error());
    return message;
  }

  // Sends a call's answer once what it reports is durable (an error result
  // of UNAVAILABLE if it cannot become durable), and counts the call done.
  void AnswerWhenDurable(pb::SessionResponse message) {
    owner_.AfterDurable([self = shared_from_this(),
                         message = std::move(message)](
                            absl::Status durable) mutable {
      if (!durable.ok()) {
        message = CallError(message.call_result().call_id(), durable);
      }
      self->Answer(std::move(message));
    });
  }

  // Sends a call's answer; false if the stream has finished. Reads resume
  // if they waited for a call to be answered.
  bool Answer(pb::SessionResponse message) {
    const bool sent = Send(std::move(message), /*droppable=*/false);
    {
      absl::MutexLock lock(&mu_);
      --calls_in_flight_;
    }
    ContinueReading();
    return sent;
  }

  // CoreOwner's answer to a parked Acquire (after it is durable).
  void AnswerParked(ParkedAcquire* call, AcquireReply reply) {
    pb::SessionResponse message;
    pb::SessionCallResult* result = message.mutable_call_result();
    result->set_call_id(call->call_id());
    if (reply.result.ok()) {
      ToProto(*reply.result, result->mutable_acquire());
    } else {
      ToSessionCallError(reply.result.status(), result->mutable_error());
    }
    const bool sent = Answer(std::move(message));
    owner_.AcquireCallDone(call->args(), reply, /*cancelled=*/!sent);
    std::unique_ptr<ParkedAcquire> done;
    {
      absl::MutexLock lock(&mu_);
      done = std::move(parked_.extract(call).mapped());
    }
    // Destroying `done` (last) may drop the last reference to this reactor.
  }

  // The stream has ended: every Acquire still parked is withdrawn (each is
  // then completed with WaitCancelled, which finds the stream finished).
  void WithdrawParkedCalls() {
    std::vector<std::pair<AcquireArgs, ParkedAcquire*>> parked;
    {
      absl::MutexLock lock(&mu_);
      for (const auto& [call, owned] : parked_) {
        parked.emplace_back(call->args(), call);
      }
    }
    // CancelWait compares `call` with what it has parked and touches nothing
    // else, so a call completed meanwhile is harmless here.
    for (const auto& [args, call] : parked) {
      owner_.CancelWait(args.client, args.lock, call);
    }
  }

  void HandleClose() {
    if (std::optional<std::string> id = SessionId()) {
      owner_.CloseSession(*id, this);
    }
    owner_.AfterDurable([self = shared_from_this()](absl::Status durable) {
      self->FinishOnce(durable);
    });
  }

  // Sends a reply (and reads the next request) once what it reports is
  // durable; ends the stream with UNAVAILABLE if it cannot become durable.
  void SendWhenDurable(pb::SessionResponse message) {
    owner_.AfterDurable([self = shared_from_this(),
                         message = std::move(message)](
                            absl::Status durable) mutable {
      if (!durable.ok()) {
        self->FinishOnce(durable);
        return;
      }
      self->Send(std::move(message), /*droppable=*/false);
    });
  }

  // Reads the next message unless a read is outstanding, the stream is
  // finishing, or kMaxCallsInFlight calls await their answers.
  void ContinueReading() {
    absl::MutexLock lock(&mu_);
    if (read_outstanding_ || finish_called_ ||
        calls_in_flight_ >= kMaxCallsInFlight) {
      return;
    }
    read_outstanding_ = true;
    StartRead(&read_buffer_);
  }

  std::optional<std::string> SessionId() {
    absl::MutexLock lock(&mu_);
    return session_id_;
  }

  // The stream is over from the client's side: start the session's grace
  // (once) and finish.
  void EndStream(const absl::Status& status) {
    ReportStreamEnded();
    FinishOnce(status);
  }

  void ReportStreamEnded() {
    std::optional<std::string> id;
    {
      absl::MutexLock lock(&mu_);
      if (stream_end_reported_ || !session_id_.has_value()) return;
      stream_end_reported_ = true;
      id = session_id_;
    }
    owner_.SessionStreamEnded(*id, this);
  }

  // Queues `message`; false if the stream has finished (or a droppable
  // message was dropped).
  bool Send(pb::SessionResponse message, bool droppable) {
    absl::MutexLock lock(&mu_);
    if (finish_called_) return false;
    if (writing_) {
      if (droppable && outbox_.size() >= kMaxOutbox) return false;
      outbox_.push_back(std::move(message));
      return true;
    }
    WriteLocked(message);
    return true;
  }

  void WriteLocked(const pb::SessionResponse& message)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    bool own_buffer = false;
    current_.Clear();  // the previous message's bytes (written by now)
    // Serializing a message we built cannot fail.
    (void)grpc::SerializationTraits<pb::SessionResponse>::Serialize(
        message, &current_, &own_buffer);
    writing_ = true;
    StartWrite(&current_);
  }

  void FinishOnce(const absl::Status& status) {
    absl::MutexLock lock(&mu_);
    if (finish_called_) return;
    finish_called_ = true;
    grpc::Status grpc_status = PrepareFinish(context_, status);
    if (writing_) {
      pending_finish_ = std::move(grpc_status);
    } else {
      Finish(grpc_status);
    }
  }

  CoreOwner& owner_;
  const Limits& limits_;
  const security::Authorizer& authorizer_;
  std::atomic<size_t>& unopened_;
  grpc::CallbackServerContext* const context_;
  grpc::ByteBuffer read_buffer_;  // owned by the read chain
  pb::SessionRequest request_;    // parsed from read_buffer_
  std::shared_ptr<SessionReactor> self_;
  // Ends a stream that sends no `open` in time; holds a reference to this
  // reactor until it fires or OnDone cancels it.
  grpc::Alarm open_alarm_;

  absl::Mutex mu_;
  std::optional<std::string> session_id_ ABSL_GUARDED_BY(mu_);
  std::string client_ ABSL_GUARDED_BY(mu_);  // the session's, once opened
  bool read_outstanding_ ABSL_GUARDED_BY(mu_) = false;
  size_t calls_in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<ParkedAcquire*, std::unique_ptr<ParkedAcquire>> parked_
      ABSL_GUARDED_BY(mu_);
  bool stream_end_reported_ ABSL_GUARDED_BY(mu_) = false;
  bool counted_as_unopened_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<pb::SessionResponse> outbox_ ABSL_GUARDED_BY(mu_);
  grpc::ByteBuffer current_ ABSL_GUARDED_BY(mu_);  // being written
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finish_called_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<grpc::Status> pending_finish_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

namespace {

absl::Status ValidateForceRelease(const pb::ForceReleaseRequest& request,
                                  const Limits& limits) {
  if (request.lock().empty()) {
    return InvalidField(ErrorCode::kInvalidArguments, "lock");
  }
  if (request.lock().size() > limits.max_lock_name_bytes) {
    return LimitExceeded("max-lock-name-bytes",
                         static_cast<int64_t>(limits.max_lock_name_bytes));
  }
  if (request.client_id().size() > limits.max_client_id_bytes) {
    return LimitExceeded("max-client-id-bytes",
                         static_cast<int64_t>(limits.max_client_id_bytes));
  }
  if (request.reason().size() > limits.max_label_bytes) {
    return LimitExceeded("max-label-bytes",
                         static_cast<int64_t>(limits.max_label_bytes));
  }
  return absl::OkStatus();
}

// A value for a logfmt line: quoted, with quotes and control bytes escaped.
std::string LogValue(absl::string_view text) {
  return absl::StrCat("\"", absl::CHexEscape(text), "\"");
}

const security::Authorizer& OpenAuthorizer() {
  static const security::Authorizer* const open =
      new security::Authorizer(security::Authorizer::Open());
  return *open;
}

}  // namespace

LockServiceImpl::LockServiceImpl(CoreOwner& owner, const Limits& limits,
                                 const security::Authorizer* authorizer)
    : owner_(owner),
      limits_(limits),
      authorizer_(authorizer != nullptr ? *authorizer : OpenAuthorizer()) {}

grpc::ServerUnaryReactor* LockServiceImpl::Acquire(
    grpc::CallbackServerContext* context, const pb::AcquireRequest* request,
    pb::AcquireResponse* response) {
  if (absl::Status denied = AuthorizeLockCall(
          authorizer_, context, request->client_id(), request->lock());
      !denied.ok()) {
    return FinishNow(context, denied);
  }
  return new AcquireReactor(owner_, limits_, context, request, response);
}

grpc::ServerUnaryReactor* LockServiceImpl::Renew(
    grpc::CallbackServerContext* context, const pb::RenewRequest* request,
    pb::RenewResponse* response) {
  if (absl::Status denied = AuthorizeLockCall(
          authorizer_, context, request->client_id(), request->lock());
      !denied.ok()) {
    return FinishNow(context, denied);
  }
  absl::StatusOr<RenewArgs> args = ParseRenew(*request, limits_);
  if (!args.ok()) return FinishNow(context, args.status());
  absl::StatusOr<RenewAnswer> answer = owner_.Renew(*args);
  if (answer.ok()) ToProto(*answer, response);
  return FinishWhenDurable(owner_, context, answer.status());
}

grpc::ServerUnaryReactor* LockServiceImpl::Release(
    grpc::CallbackServerContext* context, const pb::ReleaseRequest* request,
    pb::ReleaseResponse* response) {
  if (absl::Status denied = AuthorizeLockCall(
          authorizer_, context, request->client_id(), request->lock());
      !denied.ok()) {
    return FinishNow(context, denied);
  }
  absl::StatusOr<ReleaseArgs> args = ParseRelease(*request, limits_);
  if (!args.ok()) return FinishNow(context, args.status());
  absl::StatusOr<ReleaseOutcome> outcome = owner_.Release(*args);
  if (outcome.ok()) response->set_result(ToProto(*outcome));
  return FinishWhenDurable(owner_, context, outcome.status());
}

grpc::ServerUnaryReactor* LockServiceImpl::Write(
    grpc::CallbackServerContext* context, const pb::WriteRequest* request,
    pb::WriteResponse* /*response*/) {
  // A writer that names its client acts as that client, as for Acquire:
  // under mutual TLS it cannot write under another identity's lease. And
  // there every write is holder-checked, so that an identity granted the
  // lock's prefix cannot write with another holder's token either.
  if (absl::Status denied =
          request->client_id().empty()
              ? authorizer_.CheckUseLock(PeerOf(context), request->lock())
              : AuthorizeLockCall(authorizer_, context, request->client_id(),
                                  request->lock());
      !denied.ok()) {
    return FinishNow(context, denied);
  }
  if (authorizer_.requires_identity() && !request->require_held()) {
    return FinishNow(context,
                     absl::PermissionDeniedError(
                         "under mutual TLS a write must set require_held"));
  }
  absl::StatusOr<WriteArgs> args = ParseWrite(*request, limits_);
  if (!args.ok()) return FinishNow(context, args.status());
  return FinishWhenDurable(owner_, context, owner_.Write(*args));
}

grpc::ServerUnaryReactor* LockServiceImpl::Read(
    grpc::CallbackServerContext* context, const pb::ReadRequest* request,
    pb::ReadResponse* response) {
  if (absl::Status denied =
          authorizer_.CheckUseLock(PeerOf(context), request->lock());
      !denied.ok()) {
    return FinishNow(context, denied);
  }
  absl::StatusOr<ReadArgs> args = ParseRead(*request, limits_);
  if (!args.ok()) return FinishNow(context, args.status());
  storage::LogPosition barrier = 0;
  absl::StatusOr<std::optional<std::string>> value =
      owner_.Read(*args, &barrier);
  if (value.ok() && value->has_value()) {
    response->set_found(true);
    response->set_value(**value);
  }
  // A read may show what a write not yet durable wrote: it waits too.
  return FinishWhenDurable(owner_, context, value.status(), barrier);
}

grpc::ServerUnaryReactor* LockServiceImpl::Inspect(
    grpc::CallbackServerContext* context, const pb::InspectRequest* request,
    pb::InspectResponse* response) {
  if (absl::Status denied =
          authorizer_.CheckObserveLock(PeerOf(context), request->lock());
      !denied.ok()) {
    return FinishNow(context, denied);
  }
  absl::StatusOr<InspectQuery> query = ParseInspect(*request, limits_);
  if (!query.ok()) return FinishNow(context, query.status());
  storage::LogPosition barrier = 0;
  absl::StatusOr<InspectAnswer> answer =
      owner_.Inspect(query->lock, query->from, query->limit, &barrier);
  if (answer.ok()) ToProto(*answer, absl::Now(), response);
  return FinishWhenDurable(owner_, context, answer.status(), barrier);
}

grpc::ServerUnaryReactor* LockServiceImpl::Status(
    grpc::CallbackServerContext* context, const pb::StatusRequest* request,
    pb::StatusResponse* response) {
  if (absl::Status denied =
          authorizer_.CheckObserveClient(PeerOf(context), request->client_id());
      !denied.ok()) {
    return FinishNow(context, denied);
  }
  absl::StatusOr<StatusQuery> query = ParseStatus(*request, limits_);
  if (!query.ok()) return FinishNow(context, query.status());
  storage::LogPosition barrier = 0;
  absl::StatusOr<StatusAnswer> answer =
      owner_.Status(query->client, query->after, query->limit, &barrier);
  if (answer.ok()) ToProto(*answer, absl::Now(), response);
  return FinishWhenDurable(owner_, context, answer.status(), barrier);
}

grpc::ServerUnaryReactor* LockServiceImpl::ListLocks(
    grpc::CallbackServerContext* context, const pb::ListLocksRequest* request,
    pb::ListLocksResponse* response) {
  if (absl::Status denied =
          authorizer_.CheckListLocks(PeerOf(context), request->prefix());
      !denied.ok()) {
    return FinishNow(context, denied);
  }
  absl::StatusOr<ListLocksQuery> query = ParseListLocks(*request, limits_);
  if (!query.ok()) return FinishNow(context, query.status());
  storage::LogPosition barrier = 0;
  ListLocksAnswer answer =
      owner_.ListLocks(query->prefix, query->after, query->limit, &barrier);
  ToProto(answer, absl::Now(), response);
  return FinishWhenDurable(owner_, context, absl::OkStatus(), barrier);
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>*
LockServiceImpl::Session(grpc::CallbackServerContext* context) {
  return SessionReactor::Start(owner_, limits_, authorizer_, unopened_sessions_,
                               context);
}

grpc::ServerUnaryReactor* LockServiceImpl::ForceRelease(
    grpc::CallbackServerContext* context,
    const pb::ForceReleaseRequest* request,
    pb::ForceReleaseResponse* response) {
  const security::PeerIdentity peer = PeerOf(context);
  if (absl::Status denied = authorizer_.CheckAdmin(peer, "ForceRelease");
      !denied.ok()) {
    spdlog::warn(
        "event=forced_release_refused by={} peer={} lock={} client={} "
        "error={}",
        LogValue(peer.ToString()), LogValue(context->peer()),
        LogValue(request->lock()), LogValue(request->client_id()),
        LogValue(denied.message()));
    return FinishNow(context, denied);
  }
  if (absl::Status s = ValidateForceRelease(*request, limits_); !s.ok()) {
    return FinishNow(context, s);
  }
  absl::StatusOr<std::vector<CoreOwner::ForcedRelease>> released =
      owner_.ForceRelease(request->lock(), request->client_id());
  if (!released.ok()) {
    spdlog::warn(
        "event=forced_release_failed by={} peer={} lock={} client={} "
        "reason={} error={}",
        LogValue(peer.ToString()), LogValue(context->peer()),
        LogValue(request->lock()), LogValue(request->client_id()),
        LogValue(request->reason()), LogValue(released.status().message()));
    return FinishNow(context, released.status());
  }
  for (const CoreOwner::ForcedRelease& lease : *released) {
    // Who did it, from where, to whom, and why: the audit trail.
    spdlog::warn(
        "event=forced_release by={} peer={} lock={} client={} token={} "
        "reason={}",
        LogValue(peer.ToString()), LogValue(context->peer()),
        LogValue(request->lock()), LogValue(lease.client), lease.token,
        LogValue(request->reason()));
    pb::ReleasedLease* proto = response->add_released();
    proto->set_client_id(lease.client);
    proto->set_token(lease.token);
    proto->set_mode(lease.mode == LockMode::kShared ? pb::LOCK_MODE_SHARED
                                                    : pb::LOCK_MODE_EXCLUSIVE);
  }
  return FinishWhenDurable(owner_, context, absl::OkStatus());
}

namespace {

// The daemon's start, for ServerInfo's uptime: read once, during static
// initialisation (before main), from the monotonic clock.
const std::chrono::steady_clock::time_point kProcessStart =
    std::chrono::steady_clock::now();

}  // namespace

grpc::ServerUnaryReactor* LockServiceImpl::ServerInfo(
    grpc::CallbackServerContext* context,
    const pb::ServerInfoRequest* /*request*/,
    pb::ServerInfoResponse* response) {
  if (absl::Status denied = authorizer_.CheckTransportOnly(PeerOf(context));
      !denied.ok()) {
    return FinishNow(context, denied);
  }
  response->set_version(BuildVersion());
  response->set_commit(BuildCommit());
  response->set_grpc_version(grpc::Version());
  response->set_uptime_ms(
      std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::steady_clock::now() - kProcessStart)
          .count());
  return FinishNow(context, absl::OkStatus());
}

grpc::ServerWriteReactor<pb::WatchResponse>* LockServiceImpl::Watch(
    grpc::CallbackServerContext* context, const pb::WatchRequest* request) {
  const security::PeerIdentity peer = PeerOf(context);
  absl::Status denied =
      request->target_case() == pb::WatchRequest::kPrefix
          ? authorizer_.CheckListLocks(peer, request->prefix())
          : authorizer_.CheckObserveLock(peer, request->lock());
  if (!denied.ok()) return StartWatchStream(owner_, context, denied);
  return StartWatchStream(owner_, context, ParseWatch(*request, limits_));
}

}  // namespace leasekeeper::server
