#include "client/internal/session.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "client/errors.h"

namespace leasekeeper::client::internal {
namespace {

namespace pb = ::leasekeeper::v1;

constexpr absl::Duration kFirstRetryDelay = absl::Milliseconds(100);
constexpr absl::Duration kMaxRetryDelay = absl::Seconds(1);

}  // namespace

Session::Session(ChannelSet& channels, std::string client_id,
                 SessionListener& listener, absl::Duration open_timeout)
    : channels_(channels),
      open_timeout_(open_timeout),
      client_id_(std::move(client_id)),
      listener_(listener),
      backoff_(kFirstRetryDelay, kMaxRetryDelay),
      next_attempt_at_(MonotonicNow()),
      suspended_until_(MonotonicNow()) {
  thread_ = std::thread([this] { Run(); });
}

Session::~Session() { Stop(); }

void Session::Stop() {
  std::call_once(stopped_, [this] {
    {
      absl::MutexLock lock(&mu_);
      state_ = State::kStopped;
      if (context_ != nullptr) context_->TryCancel();
      changed_.SignalAll();
    }
    thread_.join();
  });
}

absl::StatusOr<std::string> Session::EnsureOpen(absl::Duration timeout,
                                                std::stop_token stop) {
  const MonotonicTime deadline = MonotonicNow() + timeout;
  // Declared before the lock so that it is destroyed after the lock is
  // released: its callback takes mu_.
  std::stop_callback wake_on_stop(stop, [this] {
    absl::MutexLock lock(&mu_);
    changed_.SignalAll();
  });
  absl::MutexLock lock(&mu_);
  const uint64_t attempts_at_start = open_attempts_;
  while (true) {
    if ((state_ == State::kOpen || state_ == State::kResuming) &&
        id_ != abandoned_id_) {
      return id_;
    }
    if (state_ == State::kStopped) {
      return absl::CancelledError("the client is shutting down");
    }
    if (state_ == State::kIdle && !want_open_) {
      if (open_attempts_ > attempts_at_start && !last_open_error_.ok()) {
        return last_open_error_;  // a failure that retrying will not fix
      }
      want_open_ = true;
      changed_.SignalAll();
    }
    if (stop.stop_requested()) {
      return absl::CancelledError("cancelled while opening the session");
    }
    const absl::Duration remaining = deadline - MonotonicNow();
    if (remaining <= absl::ZeroDuration()) {
      if (!last_open_error_.ok()) return last_open_error_;
      return absl::DeadlineExceededError("the session did not open in time");
    }
    changed_.WaitWithTimeout(&mu_, remaining);
  }
}

std::string Session::id() const {
  absl::MutexLock lock(&mu_);
  return id_;
}

bool Session::connected() const {
  absl::MutexLock lock(&mu_);
  return state_ == State::kOpen;
}

bool Session::SendKeepalive(uint64_t sequence) {
  pb::SessionRequest request;
  request.mutable_keepalive()->set_sequence(sequence);
  absl::MutexLock lock(&write_mu_);
  return stream_ != nullptr && stream_->Write(request);
}

absl::StatusOr<pb::SessionCallResult> Session::Call(
    const std::string& session_id, pb::SessionCall call, absl::Duration timeout,
    std::stop_token stop) {
  const MonotonicTime deadline = MonotonicNow() + timeout;
  // Declared before the locks so that it is destroyed after they are
  // released: its callback takes mu_.
  std::stop_callback wake_on_stop(stop, [this] {
    absl::MutexLock lock(&mu_);
    changed_.SignalAll();
  });
  uint64_t epoch = 0;
  {
    absl::MutexLock lock(&mu_);
    if (state_ != State::kOpen || id_ != session_id) {
      return absl::UnavailableError("the session stream is not connected");
    }
    epoch = epoch_;
    call.set_call_id(next_call_id_++);
    // Registered before the write: the answer may come before Write returns.
    calls_[call.call_id()].epoch = epoch;
  }
  const uint64_t call_id = call.call_id();
  pb::SessionRequest request;
  *request.mutable_call() = std::move(call);
  bool sent = false;
  {
    absl::MutexLock lock(&write_mu_);
    sent =
        stream_ != nullptr && stream_epoch_ == epoch && stream_->Write(request);
  }
  absl::MutexLock lock(&mu_);
  absl::StatusOr<pb::SessionCallResult> outcome;
  while (true) {
    PendingCall& pending = calls_.at(call_id);
    if (pending.answer.has_value()) {
      outcome = *std::move(pending.answer);
      break;
    }
    if (!sent) {
      outcome = absl::UnavailableError("the session stream dropped");
      break;
    }
    if (stop.stop_requested()) {
      outcome = absl::CancelledError("cancelled while waiting for the answer");
      break;
    }
    const absl::Duration remaining = deadline - MonotonicNow();
    if (remaining <= absl::ZeroDuration()) {
      outcome = absl::DeadlineExceededError(
          "no answer on the session stream in time");
      break;
    }
    changed_.WaitWithTimeout(&mu_, remaining);
  }
  calls_.erase(call_id);
  return outcome;
}

bool Session::Close(absl::Duration timeout) {
  {
    absl::MutexLock lock(&mu_);
    if (state_ != State::kOpen) return false;
    state_ = State::kClosing;
    want_open_ = false;
  }
  bool wrote = false;
  {
    pb::SessionRequest request;
    request.mutable_close();
    absl::MutexLock lock(&write_mu_);
    if (stream_ != nullptr) {
      wrote = stream_->Write(request);
      if (wrote) stream_->WritesDone();
      stream_ = nullptr;  // nothing may be written after WritesDone
    }
  }
  absl::MutexLock lock(&mu_);
  if (!wrote && context_ != nullptr) context_->TryCancel();
  const MonotonicTime deadline = MonotonicNow() + timeout;
  while (state_ == State::kClosing) {
    const absl::Duration remaining = deadline - MonotonicNow();
    if (remaining <= absl::ZeroDuration()) {
      // The server did not finish the stream in time: cut it. The thread
      // then sees the end and leaves kClosing promptly.
      if (context_ != nullptr) context_->TryCancel();
      changed_.Wait(&mu_);
      continue;
    }
    changed_.WaitWithTimeout(&mu_, remaining);
  }
  return last_close_ok_;
}

void Session::Interrupt(absl::Status why) {
  absl::MutexLock lock(&mu_);
  if (context_ == nullptr) return;
  cut_reason_ = std::move(why);
  context_->TryCancel();
}

void Session::Abandon(const std::string& session_id) {
  absl::MutexLock lock(&mu_);
  if (session_id.empty() || id_ != session_id) return;
  abandoned_id_ = session_id;
  if (context_ != nullptr) {
    // A stream (or a resume attempt) is under way: cut it; its end is then
    // handled as the loss of the session.
    context_->TryCancel();
  } else if (state_ == State::kResuming) {
    // Between resume attempts: forget the session now.
    state_ = State::kIdle;
    id_.clear();
    want_open_ = false;
    next_attempt_at_ = MonotonicNow();
    changed_.SignalAll();
  }
}

void Session::SuspendForTesting(absl::Duration duration) {
  absl::MutexLock lock(&mu_);
  suspended_until_ = MonotonicNow() + duration;
  if (context_ != nullptr) context_->TryCancel();
}

void Session::Run() {
  while (true) {
    std::string resume_id;
    {
      absl::MutexLock lock(&mu_);
      while (true) {
        if (state_ == State::kStopped) return;
        const bool has_work = (state_ == State::kIdle && want_open_) ||
                              state_ == State::kResuming;
        if (!has_work) {
          changed_.Wait(&mu_);
          continue;
        }
        const MonotonicTime start_at =
            std::max({next_attempt_at_, suspended_until_,
                      channels_.Current().not_before});
        const absl::Duration until_start = start_at - MonotonicNow();
        if (until_start <= absl::ZeroDuration()) break;
        changed_.WaitWithTimeout(&mu_, until_start);
      }
      if (state_ == State::kResuming) {
        resume_id = id_;
      } else {
        state_ = State::kOpening;
      }
    }
    RunOneStream(resume_id);
  }
}

void Session::RunOneStream(const std::string& resume_id) {
  auto context = std::make_shared<grpc::ClientContext>();
  const std::optional<uint64_t> epoch = BeginStream(resume_id, context);
  if (!epoch.has_value()) return;
  const ChannelSet::Pick pick = channels_.Current();
  // A resume waits for the channel to connect (gRPC's reconnect backoff is
  // bounded by MakeChannel) instead of failing at once while the server is
  // away; a waiting stream also drives the connection attempt. Not when the
  // service may be served elsewhere: there the stream fails fast and the
  // next attempt goes to the next endpoint.
  if (!resume_id.empty() && !pick.can_move) context->set_wait_for_ready(true);

  OpenAttempt open = OpenStream(pick, *context, resume_id);
  Stream& stream = *open.stream;
  const bool opened = open.answered && open.first.has_opened();
  if (opened) {
    ServeOpenStream(stream, open.first.opened(), resume_id, *epoch);
  } else if (open.answered) {
    // The server broke the protocol with a first message that is not
    // `opened`: cut the stream and drain it.
    context->TryCancel();
    pb::SessionResponse ignored;
    while (stream.Read(&ignored)) {
    }
  }
  // Otherwise the stream has ended (a refused resume: SESSION_ENDED), and
  // Finish says why. Cancelling it here would hide that answer.
  {
    absl::MutexLock lock(&write_mu_);
    stream_ = nullptr;
  }
  FailCallsOf(*epoch);
  const grpc::Status finish = stream.Finish();
  absl::Status status = FromGrpcStatus(*context, finish);
  if (open.timed_out) {
    status = absl::DeadlineExceededError(absl::StrCat(
        pick.target, " did not answer the session's open within ",
        absl::FormatDuration(open_timeout_)));
  } else if (!opened && (status.ok() || open.answered)) {
    status = absl::InternalError("the session stream did not open");
  }
  absl::Status cut_reason;
  {
    absl::MutexLock lock(&mu_);
    context_.reset();
    cut_reason = cut_reason_;
  }
  // How the stream ended says whether its node serves: a failure (gone,
  // NOT_LEADER, no answer) moves the choice.
  const bool moved = channels_.Report(pick, cut_reason.ok() ? status : cut_reason);
  HandleStreamEnd(resume_id, opened, status, moved);
}

std::optional<uint64_t> Session::BeginStream(
    const std::string& resume_id,
    std::shared_ptr<grpc::ClientContext> context) {
  absl::MutexLock lock(&mu_);
  if (state_ == State::kStopped) return std::nullopt;
  // Abandoned between the decision to resume and now.
  if (!resume_id.empty() && resume_id == abandoned_id_) return std::nullopt;
  context_ = std::move(context);
  cut_reason_ = absl::OkStatus();
  return ++epoch_;
}

Session::OpenAttempt Session::OpenStream(const ChannelSet::Pick& pick,
                                         grpc::ClientContext& context,
                                         const std::string& resume_id) {
  pb::SessionRequest request;
  request.mutable_open()->set_client_id(client_id_);
  request.mutable_open()->set_resume_session_id(resume_id);
  OpenAttempt open;
  // A node that accepts the connection but never answers (paused, hung)
  // must not hold the session: give up after open_timeout_ where another
  // node may serve. The watch starts before the stream is made, since
  // making it waits for the connection's handshake.
  absl::Notification first_read;
  std::thread watchdog;
  if (pick.can_move) {
    watchdog = std::thread([&] {
      if (!first_read.WaitForNotificationWithTimeout(open_timeout_)) {
        open.timed_out = true;
        context.TryCancel();
      }
    });
  }
  open.stream = pick.stub->Session(&context);
  open.answered = open.stream->Write(request) && open.stream->Read(&open.first);
  first_read.Notify();
  if (watchdog.joinable()) watchdog.join();
  return open;
}

void Session::ServeOpenStream(Stream& stream, const pb::SessionOpened& opened,
                              const std::string& resume_id, uint64_t epoch) {
  const std::string session_id = opened.session_id();
  {
    absl::MutexLock lock(&write_mu_);
    stream_ = &stream;
    stream_epoch_ = epoch;
  }
  bool stopped = false;
  {
    absl::MutexLock lock(&mu_);
    stopped = state_ == State::kStopped;
    if (!stopped) {
      state_ = State::kOpen;
      id_ = session_id;
      backoff_.Reset();
      last_open_error_ = absl::OkStatus();
      ++open_attempts_;
      changed_.SignalAll();
    }
  }
  if (!stopped) {
    if (!resume_id.empty() && !opened.resumed()) {
      // Asked to resume, given a new session: the old one is gone.
      listener_.OnSessionLost(resume_id,
                              absl::FailedPreconditionError("session ended"));
    }
    listener_.OnSessionOpened(session_id, opened.resumed());
  }
  pb::SessionResponse message;
  while (stream.Read(&message)) {
    switch (message.kind_case()) {
      case pb::SessionResponse::kKeepaliveAck:
        listener_.OnKeepaliveAck(message.keepalive_ack().sequence(),
                                 message.keepalive_ack().renewed_leases());
        break;
      case pb::SessionResponse::kNotice:
        listener_.OnNotice(message.notice());
        break;
      case pb::SessionResponse::kCallResult:
        Answer(std::move(*message.mutable_call_result()));
        break;
      default:
        break;  // a second `opened` or a kind this client does not know
    }
  }
}

void Session::Answer(pb::SessionCallResult result) {
  absl::MutexLock lock(&mu_);
  auto it = calls_.find(result.call_id());
  // None: the caller gave up on it.
  if (it == calls_.end() || it->second.answer.has_value()) return;
  it->second.answer = std::move(result);
  changed_.SignalAll();
}

void Session::FailCallsOf(uint64_t epoch) {
  absl::MutexLock lock(&mu_);
  for (auto& [call_id, pending] : calls_) {
    if (pending.epoch == epoch && !pending.answer.has_value()) {
      pending.answer =
          absl::UnavailableError("the session stream ended before the answer");
    }
  }
  changed_.SignalAll();
}

void Session::HandleStreamEnd(const std::string& resume_id, bool opened,
                              const absl::Status& status, bool moved) {
  enum class Tell { kNothing, kInterrupted, kLost } tell = Tell::kNothing;
  std::string lost_id;
  {
    absl::MutexLock lock(&mu_);
    const MonotonicTime now = MonotonicNow();
    switch (state_) {
      case State::kStopped:
        return;
      case State::kClosing:
        state_ = State::kIdle;
        id_.clear();
        last_close_ok_ = status.ok();
        changed_.SignalAll();
        return;
      default:
        break;
    }
    // Only the server ends a session: it said SESSION_ENDED, finished the
    // stream it had opened with OK, or refused the resume as not this
    // client's (INVALID_ARGUMENT); or the caller learnt one of these from a
    // call (Abandon). Anything else (unreachable, a restart under way, a
    // limit, our own cut) leaves the session to be resumed.
    const bool session_ended =
        HasErrorReason(status, ErrorReason::kSessionEnded) ||
        (opened && status.ok()) || (!id_.empty() && id_ == abandoned_id_) ||
        (!opened && status.code() == absl::StatusCode::kInvalidArgument);
    const bool first_open = resume_id.empty() && !opened;
    if (first_open) {
      ++open_attempts_;
      last_open_error_ = status;
      state_ = State::kIdle;
      if (IsTransient(status)) {
        next_attempt_at_ = moved ? now : now + backoff_.Next();
      } else {
        want_open_ = false;  // EnsureOpen reports it; retrying will not help
      }
    } else if (session_ended) {
      // The server refused the resume or ended the session: it is gone.
      tell = Tell::kLost;
      lost_id = id_;
      state_ = State::kIdle;
      id_.clear();
      want_open_ = false;  // the next EnsureOpen opens a new one
      backoff_.Reset();
      next_attempt_at_ = now;
    } else {
      // The stream dropped, or a resume could not reach the server.
      state_ = State::kResuming;
      if (opened) {
        tell = Tell::kInterrupted;
        backoff_.Reset();
        next_attempt_at_ = now;
      } else {
        next_attempt_at_ = moved ? now : now + backoff_.Next();
      }
    }
    changed_.SignalAll();
  }
  switch (tell) {
    case Tell::kInterrupted:
      listener_.OnSessionInterrupted(status);
      break;
    case Tell::kLost:
      if (!lost_id.empty()) listener_.OnSessionLost(lost_id, status);
      break;
    case Tell::kNothing:
      break;
  }
}

}  // namespace leasekeeper::client::internal
