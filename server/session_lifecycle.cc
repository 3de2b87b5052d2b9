#include "server/session_lifecycle.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
#include "core/errors.h"
#include "server/server_errors.h"

namespace leasekeeper::server {

SessionLifecycle::SessionLifecycle(Options options, const Limits& limits,
                                   DurableStateMachine& log)
    : options_(options), limits_(limits), log_(log) {}

absl::Status SessionLifecycle::Check(const std::string& session_id,
                                     const std::string& client) const {
  if (session_id.empty()) return absl::OkStatus();
  const SessionTable::Session* session = table_.Find(session_id);
  if (session == nullptr) return SessionEnded();
  if (session->client != client) {
    return InvalidField(ErrorCode::kInvalidArguments, "session_id");
  }
  return absl::OkStatus();
}

absl::StatusOr<SessionLifecycle::Resumed> SessionLifecycle::Resume(
    const std::string& client, const std::string& session_id,
    std::shared_ptr<SessionSink> sink) {
  const SessionTable::Session* session = table_.Find(session_id);
  if (session == nullptr) return SessionEnded();
  if (session->client != client) {
    return InvalidField(ErrorCode::kInvalidArguments, "open.resume_session_id");
  }
  return Resumed{
      .answer = SessionOpenedAnswer{.session_id = session_id,
                                    .grace_ms = options_.grace_ms,
                                    .resumed = true},
      .replaced = table_.Attach(session_id, std::move(sink))};
}

absl::StatusOr<SessionOpenedAnswer> SessionLifecycle::Open(
    const std::string& client, std::shared_ptr<SessionSink> sink, Tick now) {
  if (absl::Status refused = limits_.Sessions(table_.size()); !refused.ok()) {
    return refused;
  }
  std::string id;
  do {
    id = absl::StrFormat("s-%016x%016x", absl::Uniform<uint64_t>(ids_),
                         absl::Uniform<uint64_t>(ids_));
  } while (table_.contains(id));
  table_.Open(id, client, std::move(sink));
  log_.Log(storage::ServerRecord{now, storage::srec::SessionOpened{id, client}});
  return SessionOpenedAnswer{
      .session_id = id, .grace_ms = options_.grace_ms, .resumed = false};
}

bool SessionLifecycle::StreamLost(const std::string& session_id, Tick now) {
  if (options_.grace_ms <= 0) return false;
  table_.StartGrace(session_id, now + options_.grace_ms);
  return true;
}

std::optional<SessionTable::Session> SessionLifecycle::End(
    const std::string& session_id, Tick at) {
  std::optional<SessionTable::Session> ended = table_.End(session_id);
  if (ended.has_value()) {
    log_.Log(
        storage::ServerRecord{at, storage::srec::SessionEnded{session_id}});
  }
  return ended;
}

void SessionLifecycle::SaveTo(storage::ServerState& state) const {
  state.sessions.reserve(table_.size());
  table_.ForEach(
      [&](const std::string& id, const SessionTable::Session& session) {
        state.sessions.push_back(storage::ServerState::Session{
            .session_id = id, .client = session.client});
      });
}

void SessionLifecycle::Restore(
    const std::vector<storage::ServerState::Session>& sessions, Tick now) {
  const Tick deadline =
      now + std::max(options_.grace_ms, options_.restart_grace_ms);
  for (const storage::ServerState::Session& s : sessions) {
    table_.Restore(s.session_id, s.client, deadline);
  }
}

}  // namespace leasekeeper::server
