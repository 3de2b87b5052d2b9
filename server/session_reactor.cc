#include "server/session_reactor.h"

#include <chrono>
#include <functional>
#include <utility>
#include <vector>

#include "core/errors.h"
#include "leasekeeper/v1/lock_service.grpc.pb.h"
#include "server/convert.h"
#include "server/grpc_status.h"
#include "server/limit_checks.h"
#include "server/server_errors.h"

namespace leasekeeper::server {
namespace {

namespace pb = ::leasekeeper::v1;

// The peer of a call, as its transport proved it.
security::PeerIdentity PeerOf(grpc::CallbackServerContext* context) {
  return security::PeerIdentityFromAuthContext(context->auth_context().get());
}

// AnswerCall's `apply` for Renew and Release: the owner's lease entry.
auto AskLease() {
  return [](CoreOwner& owner, const auto& args, auto done) {
    owner.Lease(Ask(args, std::move(done)));
  };
}

}  // namespace

SessionReactor* SessionReactor::Start(CoreOwner& owner, const Limits& limits,
                                      const security::Authorizer& authorizer,
                                      std::atomic<size_t>& unopened,
                                      const RpcMetrics* metrics,
                                      grpc::CallbackServerContext* context) {
  std::shared_ptr<SessionReactor> reactor(new SessionReactor(
      owner, limits, authorizer, unopened, metrics, context));
  reactor->self_ = reactor;
  if (reactor->AdmitUnopened()) reactor->ContinueReading();
  return reactor.get();
}

void SessionReactor::OnReadDone(bool ok) {
  // read_outstanding_ stays set until the message is dispatched (ReadNext):
  // a read started meanwhile would overwrite read_buffer_ and request_.
  if (!ok) {
    // The client half-closed, or the stream broke, without `close`.
    EndStream(absl::OkStatus());
    return;
  }
  if (!grpc::SerializationTraits<pb::SessionRequest>::Deserialize(&read_buffer_,
                                                                  &request_)
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

void SessionReactor::OnWriteDone(bool ok) {
  bool was_full = false;
  {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    if (!ok) outbox_.clear();  // broken stream: OnReadDone/OnCancel follow
    if (outbox_.empty()) {
      if (pending_finish_.has_value()) {
        Finish(*pending_finish_);
        pending_finish_.reset();
      }
      return;
    }
    was_full = outbox_.size() >= kMaxUnsent;
    PrepareWriteLocked(outbox_.front());
    outbox_.pop_front();
  }
  StartWrite(&current_);
  // Reads paused while the outbox was full resume now that it is not.
  if (was_full) ContinueReading();
}

void SessionReactor::OnCancel() {
  EndStream(absl::CancelledError("cancelled"));
}

void SessionReactor::OnDone() {
  LeaveUnopened();
  open_alarm_.Cancel();
  ReportStreamEnded();
  WithdrawParkedCalls();
  // Drops the self-reference last: CoreOwner may still hold the sink.
  std::shared_ptr<SessionReactor> keep = std::move(self_);
}

void SessionReactor::Notify(const SessionNotice& notice) {
  pb::SessionResponse message;
  ToProto(notice, message.mutable_notice());
  Send(std::move(message), /*droppable=*/true);
}

void SessionReactor::End(const absl::Status& status) { FinishOnce(status); }

SessionReactor::SessionReactor(CoreOwner& owner, const Limits& limits,
                               const security::Authorizer& authorizer,
                               std::atomic<size_t>& unopened,
                               const RpcMetrics* metrics,
                               grpc::CallbackServerContext* context)
    : owner_(owner),
      limits_(limits),
      authorizer_(authorizer),
      unopened_(unopened),
      metrics_(metrics),
      context_(context) {}

bool SessionReactor::AdmitUnopened() {
  const size_t unopened = unopened_.fetch_add(1) + 1;
  {
    absl::MutexLock lock(&mu_);
    counted_as_unopened_ = true;
  }
  // The streams and sessions beside this one.
  if (absl::Status refused = LimitChecks(limits_).Sessions(
          unopened - 1 + owner_.GetStats().sessions);
      !refused.ok()) {
    LeaveUnopened();
    FinishOnce(std::move(refused));
    return false;
  }
  open_alarm_.Set(
      std::chrono::system_clock::now() +
          std::chrono::milliseconds(limits_.session_open_timeout_ms),
      weak_from_this(), &SessionReactor::OpenTimedOut);
  return true;
}

void SessionReactor::LeaveUnopened() {
  {
    absl::MutexLock lock(&mu_);
    if (!counted_as_unopened_) return;
    counted_as_unopened_ = false;
  }
  unopened_.fetch_sub(1);
}

void SessionReactor::OpenTimedOut() {
  {
    absl::MutexLock lock(&mu_);
    if (!counted_as_unopened_) return;  // it opened meanwhile
  }
  FinishOnce(SessionOpenTimedOut(limits_.session_open_timeout_ms));
}

void SessionReactor::HandleOpen() {
  if (SessionId().has_value()) {
    EndStream(InvalidField(ErrorCode::kInvalidArguments, "open"));
    return;
  }
  // From here OpenSession counts it, as a session, against the limit.
  LeaveUnopened();
  // Parsed before the authorization, whose refusal echoes the client id.
  absl::StatusOr<OpenArgs> args = ParseOpen(request_.open(), limits_);
  if (!args.ok()) {
    FinishOnce(args.status());
    return;
  }
  if (absl::Status denied = authorizer_.CheckActAs(PeerOf(context_), args->client);
      !denied.ok()) {
    FinishOnce(denied);
    return;
  }
  // The next message is read once the session is open (and durable):
  // a client sends nothing before it learns its session.
  owner_.Session(Ask(OpenSessionArgs{.client = args->client,
                                     .resume_id = args->resume_session_id,
                                     .sink = shared_from_this()},
                     Completion<absl::StatusOr<SessionOpenedAnswer>>(
                         [self = shared_from_this(), client = args->client](
                             absl::StatusOr<SessionOpenedAnswer> opened) {
                           self->Opened(client, std::move(opened));
                         })));
}

void SessionReactor::Opened(const std::string& client,
                            absl::StatusOr<SessionOpenedAnswer> opened) {
  if (!opened.ok()) {
    FinishOnce(opened.status());
    return;
  }
  bool ended_meanwhile = false;
  {
    absl::MutexLock lock(&mu_);
    session_id_ = opened->session_id;
    client_ = client;
    // The stream ended while the open was on its way to the disk: its
    // end could not be reported without the id, so it is reported now.
    ended_meanwhile = stream_end_reported_;
  }
  if (ended_meanwhile) {
    owner_.Session(SessionStreamEnded{opened->session_id, this});
    return;
  }
  pb::SessionResponse message;
  pb::SessionOpened* proto = message.mutable_opened();
  proto->set_session_id(opened->session_id);
  proto->set_grace_ms(opened->grace_ms);
  proto->set_resumed(opened->resumed);
  Send(std::move(message), /*droppable=*/false);
  ReadNext();
}

void SessionReactor::HandleKeepalive() {
  std::optional<std::string> id = SessionId();
  if (!id.has_value()) {
    EndStream(InvalidField(ErrorCode::kInvalidArguments, "open"));
    return;
  }
  const uint64_t sequence = request_.keepalive().sequence();
  {
    absl::MutexLock lock(&mu_);
    ++calls_in_flight_;
  }
  owner_.Session(Ask(
      KeepaliveArgs{std::move(*id), this},
      Completion<absl::StatusOr<int>>(
          [self = shared_from_this(), sequence](absl::StatusOr<int> renewed) {
            if (!renewed.ok()) {
              self->FinishOnce(renewed.status());
            } else {
              pb::SessionResponse message;
              message.mutable_keepalive_ack()->set_sequence(sequence);
              message.mutable_keepalive_ack()->set_renewed_leases(*renewed);
              self->Send(std::move(message), /*droppable=*/false);
            }
            self->CallAnswered();
          })));
  ReadNext();
}

void SessionReactor::HandleCall() {
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
      ReadNext();
      return AcquireCall(call_id, std::move(request), session);
    }
    case pb::SessionCall::kRenew: {
      pb::RenewRequest request = call.renew();
      ReadNext();
      return AnswerCall(
          call_id, std::move(request), session, &ParseRenew, AskLease(),
          [](const RenewAnswer& answer, pb::SessionCallResult& result) {
            ToProto(answer, result.mutable_renew());
          });
    }
    case pb::SessionCall::kRelease: {
      pb::ReleaseRequest request = call.release();
      ReadNext();
      return AnswerCall(
          call_id, std::move(request), session, &ParseRelease, AskLease(),
          [](const ReleaseAnswer& outcome, pb::SessionCallResult& result) {
            result.mutable_release()->set_result(ToProto(outcome));
          });
    }
    case pb::SessionCall::REQUEST_NOT_SET:
      break;
  }
  ReadNext();
  AnswerWhenDurable(CallError(
      call_id, InvalidField(ErrorCode::kInvalidArguments, "request")));
}

template <typename Request>
absl::Status SessionReactor::BindToSession(Request& request,
                                           const Binding& session) {
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
  return absl::OkStatus();
}

void SessionReactor::AcquireCall(uint64_t call_id, pb::AcquireRequest request,
                                 const Binding& session) {
  if (absl::Status s = BindToSession(request, session); !s.ok()) {
    return AnswerWhenDurable(CallError(call_id, s));
  }
  absl::StatusOr<AcquireArgs> args = ParseAcquire(request, limits_);
  if (!args.ok()) return AnswerWhenDurable(CallError(call_id, args.status()));
  if (absl::Status s = authorizer_.CheckUseLock(PeerOf(context_), args->lock);
      !s.ok()) {
    return AnswerWhenDurable(CallError(call_id, s));
  }
  auto parked = std::make_unique<ParkedAcquire>(shared_from_this(), call_id,
                                                *std::move(args));
  ParkedAcquire* call = parked.get();
  {
    absl::MutexLock lock(&mu_);
    parked_.emplace(call, std::move(parked));
  }
  // CoreOwner completes (and so destroys) `call` exactly once, possibly
  // before this returns or on another thread; touch nothing of it after.
  owner_.Acquire(call->args(), call);
}

template <typename Request, typename Parse, typename Apply, typename Fill>
void SessionReactor::AnswerCall(uint64_t call_id, Request request,
                                const Binding& session, Parse parse,
                                Apply apply, Fill fill) {
  if (absl::Status s = BindToSession(request, session); !s.ok()) {
    return AnswerWhenDurable(CallError(call_id, s));
  }
  auto args = parse(request, limits_);
  if (!args.ok()) return AnswerWhenDurable(CallError(call_id, args.status()));
  if (absl::Status s = authorizer_.CheckUseLock(PeerOf(context_), args->lock);
      !s.ok()) {
    return AnswerWhenDurable(CallError(call_id, s));
  }
  std::invoke(apply, owner_, *args,
              [self = shared_from_this(), call_id,
               fill = std::move(fill)](auto outcome) {
                if (!outcome.ok()) {
                  self->Answer(CallError(call_id, outcome.status()));
                  return;
                }
                pb::SessionResponse message;
                message.mutable_call_result()->set_call_id(call_id);
                fill(*outcome, *message.mutable_call_result());
                self->Answer(std::move(message));
              });
}

pb::SessionResponse SessionReactor::CallError(uint64_t call_id,
                                              const absl::Status& status) {
  pb::SessionResponse message;
  message.mutable_call_result()->set_call_id(call_id);
  ToSessionCallError(status, message.mutable_call_result()->mutable_error());
  return message;
}

void SessionReactor::AnswerWhenDurable(pb::SessionResponse message) {
  owner_.durability().WhenAllDurable(
      [self = shared_from_this(),
       message = std::move(message)](absl::Status durable) mutable {
        if (!durable.ok()) {
          message = CallError(message.call_result().call_id(), durable);
        }
        self->Answer(std::move(message));
      });
}

bool SessionReactor::Answer(pb::SessionResponse message) {
  // Every call result leaves through here; a refusal by a limit is counted
  // as it is sent (a stream's end status is the interceptor's).
  const bool refused = metrics_ != nullptr &&
                       message.call_result().has_error() &&
                       message.call_result().error().has_detail();
  const pb::ErrorDetail detail =
      refused ? message.call_result().error().detail() : pb::ErrorDetail();
  const bool sent = Send(std::move(message), /*droppable=*/false);
  if (sent && refused) metrics_->CountRefusal(detail);
  CallAnswered();
  return sent;
}

void SessionReactor::CallAnswered() {
  {
    absl::MutexLock lock(&mu_);
    --calls_in_flight_;
  }
  ContinueReading();
}

void SessionReactor::AnswerParked(ParkedAcquire* call,
                                  AcquireCallAnswer reply) {
  pb::SessionResponse message;
  pb::SessionCallResult* result = message.mutable_call_result();
  result->set_call_id(call->call_id());
  if (reply.result.ok()) {
    ToProto(*reply.result, result->mutable_acquire());
  } else {
    ToSessionCallError(reply.result.status(), result->mutable_error());
  }
  const bool sent = Answer(std::move(message));
  owner_.ReportAcquireCall(
      AcquireCallFinished{call->args(), reply, /*cancelled=*/!sent});
  std::unique_ptr<ParkedAcquire> done;
  {
    absl::MutexLock lock(&mu_);
    done = std::move(parked_.extract(call).mapped());
  }
  // Destroying `done` (last) may drop the last reference to this reactor.
}

void SessionReactor::WithdrawParkedCalls() {
  std::vector<std::pair<AcquireArgs, ParkedAcquire*>> parked;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [call, owned] : parked_) {
      parked.emplace_back(call->args(), call);
    }
  }
  // A cancelled wait compares `call` with what is parked and touches nothing
  // else, so a call completed meanwhile is harmless here.
  for (const auto& [args, call] : parked) {
    owner_.ReportAcquireCall(
        AcquireWaitCancelled{args.client, args.lock, call});
  }
}

void SessionReactor::HandleClose() {
  std::optional<std::string> id = SessionId();
  if (!id.has_value()) {
    FinishOnce(absl::OkStatus());  // nothing of this stream was applied
    return;
  }
  owner_.Session(Ask(CloseSessionArgs{std::move(*id), this},
                     Completion<absl::Status>(
                         [self = shared_from_this()](absl::Status closed) {
                           self->FinishOnce(closed);
                         })));
}

void SessionReactor::ReadNext() {
  {
    absl::MutexLock lock(&mu_);
    read_outstanding_ = false;
  }
  ContinueReading();
}

void SessionReactor::ContinueReading() {
  absl::MutexLock lock(&mu_);
  if (read_outstanding_ || finish_called_ ||
      calls_in_flight_ >= kMaxCallsInFlight || outbox_.size() >= kMaxUnsent) {
    return;
  }
  read_outstanding_ = true;
  StartRead(&read_buffer_);
}

std::optional<std::string> SessionReactor::SessionId() {
  absl::MutexLock lock(&mu_);
  return session_id_;
}

void SessionReactor::EndStream(const absl::Status& status) {
  ReportStreamEnded();
  FinishOnce(status);
}

void SessionReactor::ReportStreamEnded() {
  std::optional<std::string> id;
  {
    absl::MutexLock lock(&mu_);
    if (stream_end_reported_) return;
    stream_end_reported_ = true;
    // Without an id (none opened, or the open not answered yet) there is
    // nothing to report; an open answered later reports it (Opened).
    if (!session_id_.has_value()) return;
    id = session_id_;
  }
  owner_.Session(SessionStreamEnded{std::move(*id), this});
}

bool SessionReactor::Send(pb::SessionResponse message, bool droppable) {
  {
    absl::MutexLock lock(&mu_);
    if (finish_called_) return false;
    if (writing_) {
      if (droppable && outbox_.size() >= kMaxOutbox) return false;
      outbox_.push_back(std::move(message));
      return true;
    }
    PrepareWriteLocked(message);
  }
  // Nothing else touches current_ or calls Finish until this write's
  // OnWriteDone: writing_ holds them back.
  StartWrite(&current_);
  return true;
}

void SessionReactor::PrepareWriteLocked(const pb::SessionResponse& message) {
  bool own_buffer = false;
  current_.Clear();  // the previous message's bytes (written by now)
  // Serializing a message we built cannot fail.
  (void)grpc::SerializationTraits<pb::SessionResponse>::Serialize(
      message, &current_, &own_buffer);
  writing_ = true;
}

void SessionReactor::FinishOnce(const absl::Status& status) {
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

}  // namespace leasekeeper::server
