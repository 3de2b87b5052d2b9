// SessionLifecycle: the rules of leasekeeperd's sessions (open, resume,
// grace, end, restore after a restart) over their SessionTable, and the
// server records that make them durable. Ending a session's leases is the
// owner's (CoreOwner), which asks the table what is due and calls End.
// Thread-safety: none; CoreOwner's core mutex guards it and the
// DurableStateMachine it logs to.
#ifndef LEASEKEEPER_SERVER_SESSION_LIFECYCLE_H_
#define LEASEKEEPER_SERVER_SESSION_LIFECYCLE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/random/random.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/types.h"
#include "server/answers.h"
#include "server/durable_state_machine.h"
#include "server/limit_checks.h"
#include "server/session_table.h"
#include "storage/server_records.h"

namespace leasekeeper::server {

class SessionLifecycle {
 public:
  struct Options {
    int64_t grace_ms = 0;          // --session-grace
    int64_t restart_grace_ms = 0;  // --restart-grace
  };
  // `log` receives the session records; it and `limits` outlive the
  // lifecycle's use.
  SessionLifecycle(Options options, const Limits& limits,
                   DurableStateMachine& log);
  SessionLifecycle(const SessionLifecycle&) = delete;
  SessionLifecycle& operator=(const SessionLifecycle&) = delete;

  // The sessions, for queries (what is due, whose stream, which state).
  const SessionTable& table() const { return table_; }

  // Whether a request naming `session_id` may act for `client`. Outcomes:
  // OK (also for an empty id: no session named); SessionEnded for an id
  // that is no session (ended, or never issued: a late request of an ended
  // session must not take a lock); InvalidField("session_id") for another
  // client's.
  absl::Status Check(const std::string& session_id,
                     const std::string& client) const;

  // A resume of `session_id` by `client` over `sink`.
  struct Resumed {
    SessionOpenedAnswer answer{};
    std::shared_ptr<SessionSink> replaced{};  // a stream still attached
  };
  // Attaches `sink`, ending the grace. Outcomes: the answer and the stream
  // it replaced (null if none; the owner ends it); SessionEnded for an id
  // that is no session; InvalidField("open.resume_session_id") for another
  // client's.
  absl::StatusOr<Resumed> Resume(const std::string& client,
                                 const std::string& session_id,
                                 std::shared_ptr<SessionSink> sink);
  // Opens a new session for `client` carried by `sink`, with a fresh random
  // id, and logs it at `now`. REQUIRES: `client` has no session (the owner
  // ends the previous one first). Outcomes: the answer;
  // LimitExceeded("max-sessions") when that many are open.
  absl::StatusOr<SessionOpenedAnswer> Open(const std::string& client,
                                           std::shared_ptr<SessionSink> sink,
                                           Tick now);
  // The session's stream ended at `now` without close. Returns true if the
  // session is in grace now, false if it has no grace (grace_ms 0) and the
  // owner must end it at once. REQUIRES: the session is attached.
  bool StreamLost(const std::string& session_id, Tick now);
  // Removes the session and logs its end at `at`. Outcomes: the session
  // ended; nullopt if there was none (nothing logged).
  std::optional<SessionTable::Session> End(const std::string& session_id,
                                           Tick at);
  // Shutdown: detaches every stream and returns them (the owner ends them);
  // no session ends. O(sessions).
  std::vector<std::shared_ptr<SessionSink>> DetachAll() {
    return table_.DetachAll();
  }

  // The sessions, for a snapshot. O(sessions).
  void SaveTo(storage::ServerState& state) const;
  // Puts back the sessions recovered after a restart, without a stream: in
  // grace until now + max(grace, restart grace), as their clients could not
  // reconnect while the server was down. O(sessions).
  void Restore(const std::vector<storage::ServerState::Session>& sessions,
               Tick now);

 private:
  const Options options_;
  const LimitChecks limits_;
  SessionTable table_;
  absl::BitGen ids_;
  DurableStateMachine& log_;
};

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_SESSION_LIFECYCLE_H_
