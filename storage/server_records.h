// ServerRecord and ServerState: leasekeeperd's own durable state next to the
// core's, as plain data: which sessions exist (and for which client), and
// the first answers of idempotent requests (the retry cache).
//
// Why here and not in the core. Sessions and the retry cache are the
// server's protocols, not the contract's: the core (and leasekeeper-replay)
// never sees them. Yet a restart must keep them, or a client that rides
// over the restart finds its session ended and its retries answered anew.
// So they are records of the same ordered log as the core's operations
// (operation_codec.h), written by the owner of the core under its lock at
// the point the change happened, and replayed in that order; a snapshot
// carries the state they build (snapshot_file.h). Any consumer of the log
// (the local WAL today, a replicated log later) replays them the same way:
// ApplyServerRecord is a pure function of the state and the record.
//
// What is not recorded, and why.
//  - A session's stream and its grace deadline: they belong to the process
//    that serves it. Whoever takes the state over (a restart, a failover)
//    has no stream for any session, so it gives every restored session a
//    fresh grace from its takeover (server/core_owner.h says how long).
//  - A resumption: it changes nothing here (same id, same client), only
//    the process's stream and deadline.
//  - A pending retry-cache entry (an Acquire still waiting): a restart
//    withdraws every wait, and a retry then starts afresh.
//  The retry-cache entry itself is opaque bytes here (the server's
//  encoding, server/retry_entry_codec.h): storage does not depend on the
//  server's answer types.
//
// Thread-safety: plain values and pure functions; ServerStateReplay has one
// owner.
//
// Invariants of a ServerState built by ServerStateReplay:
//  1. Session ids are unique; retry keys (client, request_id) are unique.
//  2. retries are in the order their keys were first answered.
#ifndef LEASEKEEPER_STORAGE_SERVER_RECORDS_H_
#define LEASEKEEPER_STORAGE_SERVER_RECORDS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "core/types.h"

namespace leasekeeper::storage {

namespace srec {
// A session was opened for `client`.
struct SessionOpened {
  std::string session_id;
  std::string client;
};
// A session ended (closed, replaced, or its grace ran out). The release of
// its leases is the core's op::ReleaseAll, logged right after.
struct SessionEnded {
  std::string session_id;
};
// The first answer of (client, request_id), or a later one replacing it
// (an Acquire retry that stopped waiting learns its queue position).
struct RetryAnswered {
  std::string client;
  std::string request_id;
  std::string entry;  // server/retry_entry_codec.h
};
// The entry was dropped (an answer no call delivered was undone).
struct RetryForgotten {
  std::string client;
  std::string request_id;
};
}  // namespace srec

struct ServerRecord {
  Tick at = 0;
  std::variant<srec::SessionOpened, srec::SessionEnded, srec::RetryAnswered,
               srec::RetryForgotten>
      body;
};

struct ServerState {
  struct Session {
    std::string session_id;
    std::string client;
  };
  struct Retry {
    std::string client;
    std::string request_id;
    std::string entry;
    Tick answered_at = 0;
  };
  std::vector<Session> sessions;  // in the order they were opened
  std::vector<Retry> retries;     // invariant 2

  bool empty() const { return sessions.empty() && retries.empty(); }
};

// Field-by-field equality (tests, assertions).
bool SameServerRecord(const ServerRecord& a, const ServerRecord& b);
bool SameServerState(const ServerState& a, const ServerState& b);

// Builds a ServerState from a snapshot's state and the records after it.
// Apply is O(size of the record) (hash maps); Take is O(size of the state).
class ServerStateReplay {
 public:
  ServerStateReplay() = default;
  ServerStateReplay(const ServerStateReplay&) = delete;
  ServerStateReplay& operator=(const ServerStateReplay&) = delete;

  // Replaces the state with `state` (a snapshot's).
  void Restore(ServerState state);

  // Applies one record. Records are facts that already happened, so none is
  // refused: opening an id that exists replaces its client, ending or
  // forgetting something absent is a no-op, answering an existing key
  // replaces its entry and answer tick but keeps its place in the order.
  void Apply(const ServerRecord& record);

  // The state built so far; the replay is left empty.
  ServerState Take();

  size_t session_count() const { return sessions_.size(); }
  size_t retry_count() const { return retries_.size(); }

 private:
  struct SessionSlot {
    uint64_t order = 0;
    std::string client;
  };
  struct RetrySlot {
    uint64_t order = 0;
    std::string entry;
    Tick answered_at = 0;
  };
  uint64_t next_order_ = 0;
  absl::flat_hash_map<std::string, SessionSlot> sessions_;
  absl::flat_hash_map<std::pair<std::string, std::string>, RetrySlot> retries_;
};

}  // namespace leasekeeper::storage

#endif  // LEASEKEEPER_STORAGE_SERVER_RECORDS_H_
