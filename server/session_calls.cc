#include "server/session_calls.h"

#include <utility>
#include <variant>

#include "server/server_errors.h"

namespace leasekeeper::server {

absl::StatusOr<SessionOpenedAnswer> SessionCalls::Open(
    const std::string& client, const std::string& resume_id,
    std::shared_ptr<SessionSink> sink, Tick now, OwnerEffects& fx) {
  if (!resume_id.empty()) {
    absl::StatusOr<SessionLifecycle::Resumed> resumed =
        p_.sessions.Resume(client, resume_id, std::move(sink));
    if (!resumed.ok()) return resumed.status();
    if (resumed->replaced != nullptr) {
      // The old stream is still attached (its death not yet noticed).
      fx.stream_ends.emplace_back(std::move(resumed->replaced), SessionEnded());
    }
    if (ShouldLog(LogEvent::kSessionResumed)) {
      fx.logs.push_back(LogRecord{.event = LogEvent::kSessionResumed,
                                  .client = client,
                                  .session = resume_id});
    }
    return std::move(resumed->answer);
  }
  if (const std::string* previous = p_.sessions.table().SessionOf(client)) {
    const std::string previous_id = *previous;
    const int released = End(previous_id, now, now, SessionEnded(), fx);
    LogEnd(LogEvent::kSessionReplaced, client, previous_id, released, fx);
  }
  absl::StatusOr<SessionOpenedAnswer> opened =
      p_.sessions.Open(client, std::move(sink), now);
  if (opened.ok() && ShouldLog(LogEvent::kSessionOpened)) {
    fx.logs.push_back(LogRecord{.event = LogEvent::kSessionOpened,
                                .client = client,
                                .session = opened->session_id});
  }
  return opened;
}

absl::StatusOr<int> SessionCalls::Keepalive(const std::string& session_id,
                                            const SessionSink* sink, Tick now,
                                            OwnerEffects& fx) {
  if (!p_.sessions.table().IsCarriedBy(session_id, sink)) {
    return SessionEnded();
  }
  absl::StatusOr<Reply> renewed = p_.applier.Apply(Operation{
      now, op::RenewAll{p_.sessions.table().Find(session_id)->client}});
  p_.digest.DigestPending(now, fx);
  return renewed.ok() ? std::get<int>(*renewed) : 0;
}

void SessionCalls::Close(const std::string& session_id, const SessionSink* sink,
                         Tick now, OwnerEffects& fx) {
  if (!p_.sessions.table().IsCarriedBy(session_id, sink)) return;
  const std::string client = p_.sessions.table().Find(session_id)->client;
  const int released = End(session_id, now, now, std::nullopt, fx);
  LogEnd(LogEvent::kSessionClosed, client, session_id, released, fx);
}

void SessionCalls::StreamLost(const std::string& session_id, Tick now,
                              OwnerEffects& fx) {
  const std::string client = p_.sessions.table().Find(session_id)->client;
  if (!p_.sessions.StreamLost(session_id, now)) {
    const int released = End(session_id, now, now, std::nullopt, fx);
    LogEnd(LogEvent::kReleasedBySessionLoss, client, session_id, released, fx);
  } else if (ShouldLog(LogEvent::kSessionStreamLost)) {
    fx.logs.push_back(LogRecord{.event = LogEvent::kSessionStreamLost,
                                .client = client,
                                .session = session_id});
  }
}

void SessionCalls::GraceEnded(const std::string& session_id, Tick at, Tick now,
                              OwnerEffects& fx) {
  const std::string client = p_.sessions.table().Find(session_id)->client;
  const int released = End(session_id, at, now, std::nullopt, fx);
  p_.counters.CountSessionLost();
  LogEnd(LogEvent::kReleasedBySessionLoss, client, session_id, released, fx);
}

int SessionCalls::End(const std::string& session_id, Tick at, Tick now,
                      std::optional<absl::Status> stream_status,
                      OwnerEffects& fx) {
  std::optional<SessionTable::Session> ended = p_.sessions.End(session_id, at);
  if (!ended.has_value()) return 0;
  SessionTable::Session& session = *ended;
  absl::StatusOr<Reply> released =
      p_.applier.Apply(Operation{at, op::ReleaseAll{session.client}});
  // Idle from the end of its session on, not from its last lease.
  p_.machine.RestartIdleClock(session.client, at);
  p_.digest.DigestPending(now, fx);
  if (session.sink != nullptr && stream_status.has_value()) {
    fx.stream_ends.emplace_back(std::move(session.sink),
                                *std::move(stream_status));
  }
  return released.ok() ? std::get<int>(*released) : 0;
}

void SessionCalls::LogEnd(LogEvent event, const std::string& client,
                          const std::string& session_id, int released,
                          OwnerEffects& fx) {
  if (!ShouldLog(event)) return;
  fx.logs.push_back(LogRecord{.event = event,
                              .client = client,
                              .session = session_id,
                              .count = released});
}

}  // namespace leasekeeper::server
