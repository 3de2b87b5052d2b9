// SessionTable: leasekeeperd's sessions, and when their graces end.
//
// A session belongs to one client and is either attached (a stream carries
// it: its SessionSink) or in grace (its stream ended, or the server
// restarted) until a deadline, after which the owner ends it and releases
// the client's leases. A client has at most one session. The table only
// keeps this bookkeeping; ending a session's leases, logging and telling
// streams are the owner's (CoreOwner), which asks "what is due at now?"
// (NextDue) and acts on it.
//
// Time is a parameter: deadlines are ticks the caller computes; the table
// never reads a clock.
//
// Thread-safety: none; the owner guards it (CoreOwner's core mutex).
//
// Invariants (checked by CheckInvariants):
//  1. Every session is attached or in grace: a session without a sink has
//     exactly one entry in the deadline index, at its grace_deadline; an
//     attached one has none. After DetachAll (shutdown) sessions have
//     neither: a stopping server ends none.
//  2. SessionOf(client) names a session of that client; every session is
//     named by its client.
//
// Cost: every method is O(log sessions) or better, except ForEach,
// DetachAll and CheckInvariants (O(sessions)).
#ifndef LEASEKEEPER_SERVER_SESSION_TABLE_H_
#define LEASEKEEPER_SERVER_SESSION_TABLE_H_

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "core/types.h"
#include "server/answers.h"

namespace leasekeeper::server {

// A session stream (the gRPC layer's reactor).
class SessionSink {
 public:
  virtual ~SessionSink() = default;
  // Pushes a notice to the client. Never called under the core mutex.
  virtual void Notify(const SessionNotice& notice) = 0;
  // The server ends the stream with `status` (replaced, resumed elsewhere,
  // shutdown). Never called under the core mutex.
  virtual void End(const absl::Status& status) = 0;
};

class SessionTable {
 public:
  struct Session {
    std::string client{};
    std::shared_ptr<SessionSink> sink{};  // null while in grace
    Tick grace_deadline = kMaxTick;       // meaningful while in grace
  };

  SessionTable() = default;
  SessionTable(const SessionTable&) = delete;
  SessionTable& operator=(const SessionTable&) = delete;

  // The session, or nullptr.
  const Session* Find(const std::string& id) const;
  bool contains(const std::string& id) const { return sessions_.contains(id); }
  // True iff the session exists and `sink` is the stream attached to it
  // (a stale stream's calls are then refused or ignored).
  bool IsCarriedBy(const std::string& id, const SessionSink* sink) const;
  // The id of the client's session, or nullptr.
  const std::string* SessionOf(const std::string& client) const;
  // kNone, kOpen (attached) or kGrace.
  SessionState StateOf(const std::string& client) const;
  // The stream of the client's session; null if none or in grace.
  std::shared_ptr<SessionSink> SinkOf(const std::string& client) const;

  // A new attached session. REQUIRES: `id` is not a session and `client`
  // has none (end it first).
  void Open(const std::string& id, const std::string& client,
            std::shared_ptr<SessionSink> sink);
  // A session recovered after a restart, in grace until `deadline`.
  // REQUIRES as for Open.
  void Restore(const std::string& id, const std::string& client,
               Tick deadline);
  // Attaches `sink` (a resume): cancels the grace, or replaces the stream
  // still attached, which is returned (the owner ends it); null if the
  // session was in grace. REQUIRES: contains(id).
  std::shared_ptr<SessionSink> Attach(const std::string& id,
                                      std::shared_ptr<SessionSink> sink);
  // The stream ended: the session is in grace until `deadline`.
  // REQUIRES: contains(id) and the session is attached.
  void StartGrace(const std::string& id, Tick deadline);
  // Removes the session (and its grace, and its client's entry); returns
  // it, or nullopt if there was none.
  std::optional<Session> End(const std::string& id);

  // The earliest grace deadline; kMaxTick if none.
  Tick NextDeadline() const;
  // The session whose grace ends first (deadline, then id), if its
  // deadline is <= now; nullopt otherwise. It stays until End.
  std::optional<std::pair<Tick, std::string>> NextDue(Tick now) const;

  // Shutdown: detaches every stream and returns them (the owner ends them);
  // the sessions stay, with no deadline.
  std::vector<std::shared_ptr<SessionSink>> DetachAll();

  size_t size() const { return sessions_.size(); }

  // fn(id, session) for every session, in no particular order.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (const auto& [id, session] : sessions_) fn(id, session);
  }

  // Invariants 1 and 2 (`detached_all`: DetachAll was called).
  absl::Status CheckInvariants(bool detached_all) const;

 private:
  absl::flat_hash_map<std::string, Session> sessions_;
  absl::flat_hash_map<std::string, std::string> session_of_client_;
  absl::btree_set<std::pair<Tick, std::string>> grace_deadlines_;
};

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_SESSION_TABLE_H_
