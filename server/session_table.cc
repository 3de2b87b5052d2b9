#include "server/session_table.h"

#include "absl/strings/str_cat.h"

namespace leasekeeper::server {

const SessionTable::Session* SessionTable::Find(const std::string& id) const {
  auto it = sessions_.find(id);
  return it == sessions_.end() ? nullptr : &it->second;
}

bool SessionTable::IsCarriedBy(const std::string& id,
                               const SessionSink* sink) const {
  const Session* session = Find(id);
  return session != nullptr && session->sink.get() == sink;
}

const std::string* SessionTable::SessionOf(const std::string& client) const {
  auto it = session_of_client_.find(client);
  return it == session_of_client_.end() ? nullptr : &it->second;
}

SessionState SessionTable::StateOf(const std::string& client) const {
  const std::string* id = SessionOf(client);
  const Session* session = id == nullptr ? nullptr : Find(*id);
  if (session == nullptr) return SessionState::kNone;
  return session->sink != nullptr ? SessionState::kOpen : SessionState::kGrace;
}

std::shared_ptr<SessionSink> SessionTable::SinkOf(
    const std::string& client) const {
  const std::string* id = SessionOf(client);
  const Session* session = id == nullptr ? nullptr : Find(*id);
  return session == nullptr ? nullptr : session->sink;
}

void SessionTable::Open(const std::string& id, const std::string& client,
                        std::shared_ptr<SessionSink> sink) {
  session_of_client_[client] = id;
  sessions_[id] = Session{.client = client, .sink = std::move(sink)};
}

void SessionTable::Restore(const std::string& id, const std::string& client,
                           Tick deadline) {
  session_of_client_[client] = id;
  grace_deadlines_.emplace(deadline, id);
  sessions_[id] =
      Session{.client = client, .sink = nullptr, .grace_deadline = deadline};
}

std::shared_ptr<SessionSink> SessionTable::Attach(
    const std::string& id, std::shared_ptr<SessionSink> sink) {
  Session& session = sessions_.at(id);
  if (session.sink == nullptr) {
    grace_deadlines_.erase({session.grace_deadline, id});
    session.grace_deadline = kMaxTick;
  }
  std::swap(session.sink, sink);
  return sink;
}

void SessionTable::StartGrace(const std::string& id, Tick deadline) {
  Session& session = sessions_.at(id);
  session.sink.reset();
  session.grace_deadline = deadline;
  grace_deadlines_.emplace(deadline, id);
}

std::optional<SessionTable::Session> SessionTable::End(const std::string& id) {
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return std::nullopt;
  Session session = std::move(it->second);
  sessions_.erase(it);
  if (session.sink == nullptr) {
    grace_deadlines_.erase({session.grace_deadline, id});
  }
  auto owner = session_of_client_.find(session.client);
  if (owner != session_of_client_.end() && owner->second == id) {
    session_of_client_.erase(owner);
  }
  return session;
}

Tick SessionTable::NextDeadline() const {
  return grace_deadlines_.empty() ? kMaxTick : grace_deadlines_.begin()->first;
}

std::optional<std::pair<Tick, std::string>> SessionTable::NextDue(
    Tick now) const {
  if (grace_deadlines_.empty() || grace_deadlines_.begin()->first > now) {
    return std::nullopt;
  }
  return *grace_deadlines_.begin();
}

std::vector<std::shared_ptr<SessionSink>> SessionTable::DetachAll() {
  std::vector<std::shared_ptr<SessionSink>> sinks;
  for (auto& [id, session] : sessions_) {
    if (session.sink != nullptr) sinks.push_back(std::move(session.sink));
    session.sink.reset();
    session.grace_deadline = kMaxTick;
  }
  grace_deadlines_.clear();
  return sinks;
}

absl::Status SessionTable::CheckInvariants(bool detached_all) const {
  size_t in_grace = 0;
  for (const auto& [id, session] : sessions_) {
    const std::string* named = SessionOf(session.client);
    if (named == nullptr || *named != id) {
      return absl::InternalError(
          absl::StrCat("session ", id, " is not its client's session"));
    }
    if (session.sink != nullptr || detached_all) continue;
    ++in_grace;
    if (!grace_deadlines_.contains({session.grace_deadline, id})) {
      return absl::InternalError(
          absl::StrCat("session ", id, " has neither stream nor grace"));
    }
  }
  if (in_grace != grace_deadlines_.size()) {
    return absl::InternalError("grace deadlines do not match sessions");
  }
  if (session_of_client_.size() != sessions_.size()) {
    return absl::InternalError("a client names a session that is gone");
  }
  return absl::OkStatus();
}

}  // namespace leasekeeper::server
