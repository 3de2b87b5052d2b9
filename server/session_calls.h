// SessionCalls: what the session calls and a session's end do to the core,
// beside the session rules (SessionLifecycle). Opening a new session ends
// the client's previous one at once; a resume attaches the stream and ends
// one still attached; keepalive renews every lease of the session's client;
// close, a lost stream without grace, and a grace that ran out end the
// session: its leases released, its wait withdrawn, the client idle from
// then on. Each is logged (server/event_log.h).
// Thread-safety: none; CoreOwner's core mutex guards it and its parts.
#ifndef LEASEKEEPER_SERVER_SESSION_CALLS_H_
#define LEASEKEEPER_SERVER_SESSION_CALLS_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/answers.h"
#include "server/durable_state_machine.h"
#include "server/event_digest.h"
#include "server/operation_applier.h"
#include "server/owner_counters.h"
#include "server/owner_effects.h"
#include "server/session_lifecycle.h"

namespace leasekeeper::server {

class SessionCalls {
 public:
  // Every part outlives the calls.
  struct Parts {
    SessionLifecycle& sessions;
    DurableStateMachine& machine;  // a client's idle clock
    OperationApplier& applier;
    EventDigest& digest;
    OwnerCounters& counters;
  };
  explicit SessionCalls(Parts parts) : p_(parts) {}
  SessionCalls(const SessionCalls&) = delete;
  SessionCalls& operator=(const SessionCalls&) = delete;

  // Opens a session for `client` (ending its previous one), or resumes
  // `resume_id` (ending the stream still attached to it, SessionEnded).
  // Outcomes: the session; SessionLifecycle's refusals (SessionEnded,
  // InvalidField, LimitExceeded).
  absl::StatusOr<SessionOpenedAnswer> Open(const std::string& client,
                                           const std::string& resume_id,
                                           std::shared_ptr<SessionSink> sink,
                                           Tick now, OwnerEffects& fx);
  // Outcomes: the number of leases renewed; SessionEnded unless `sink`
  // carries the session.
  absl::StatusOr<int> Keepalive(const std::string& session_id,
                                const SessionSink* sink, Tick now,
                                OwnerEffects& fx);
  // Ends the session if `sink` carries it; nothing otherwise.
  void Close(const std::string& session_id, const SessionSink* sink, Tick now,
             OwnerEffects& fx);
  // The stream of the session ended without close: its grace starts, or
  // (grace 0) it ends at once. REQUIRES: `session_id` attached.
  void StreamLost(const std::string& session_id, Tick now, OwnerEffects& fx);
  // The session's grace ran out at `at` (<= now): it ends then, counted
  // as lost.
  void GraceEnded(const std::string& session_id, Tick at, Tick now,
                  OwnerEffects& fx);

 private:
  // Ends a session at `at`; `stream_status`: end its attached stream with
  // it. Returns the leases released.
  int End(const std::string& session_id, Tick at, Tick now,
          std::optional<absl::Status> stream_status, OwnerEffects& fx);
  // Logs `event` for a session ended with `released` leases.
  void LogEnd(LogEvent event, const std::string& client,
              const std::string& session_id, int released, OwnerEffects& fx);

  Parts p_;
};

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_SESSION_CALLS_H_
