// ServerRecord and ServerState: leasekeeperd's own durable state next to the
// core's, as plain data: which sessions exist (and for which client), the
// first answers of idempotent requests (the retry cache; each entry is
// opaque bytes, the server's encoding), and the holder label of each lease
// or wait that carried one. They are records of the same
// ordered log as the core's operations, replayed in that order by every
// OperationLog implementation (the local log and the etcd log alike). What
// is recorded and what is not: docs/design/durable-path.md.
//
// Thread-safety: plain values and pure functions; ServerStateReplay has one
// owner.
//
// Invariants of a ServerState built by ServerStateReplay:
//  1. Session ids are unique; retry keys (client, request_id) are unique;
//     label keys (client, lock) are unique and no label is empty.
//  2. retries are in the order their keys were first answered.
//  3. With a retry ttl, an answer older than the ttl at the tick of a newer
//     answer is gone, unless an older entry still in its ttl holds it
//     back (the server's RetryCache expires from the front the same way).
#ifndef LEASEKEEPER_STORAGE_SERVER_RECORDS_H_
#define LEASEKEEPER_STORAGE_SERVER_RECORDS_H_

#include <cstdint>
#include <deque>
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
// `client`'s lease on, or wait for, `lock` carries `label` (never empty):
// logged right after the Acquire that granted or queued it.
struct LabelSet {
  std::string client;
  std::string lock;
  std::string label;
};
// The label went with its lease or wait (released, lapsed, withdrawn, ...),
// logged right after the operation that ended it.
struct LabelCleared {
  std::string client;
  std::string lock;
};
}  // namespace srec

struct ServerRecord {
  using Body =
      std::variant<srec::SessionOpened, srec::SessionEnded, srec::RetryAnswered,
                   srec::RetryForgotten, srec::LabelSet, srec::LabelCleared>;
  Tick at = 0;
  Body body;
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
  struct Label {
    std::string client;
    std::string lock;
    std::string label;
  };
  // No meaning in the order (a replay gives opening order, a snapshot
  // taken by the server its table's order).
  std::vector<Session> sessions;
  std::vector<Retry> retries;  // invariant 2
  std::vector<Label> labels;   // a replay's by (client, lock)

  bool empty() const {
    return sessions.empty() && retries.empty() && labels.empty();
  }
};

// Field-by-field equality (tests, assertions).
bool SameServerRecord(const ServerRecord& a, const ServerRecord& b);
bool SameServerState(const ServerState& a, const ServerState& b);

// Builds a ServerState from a snapshot's state and the records after it.
// Apply is amortized O(size of the record) (hash maps, and a queue of
// answers in order for the expiry); Take is O(size of the state).
class ServerStateReplay {
 public:
  // `retry_ttl_ms` > 0: each answer recorded first drops the oldest
  // answers that are older than that at its tick (invariant 3), so a
  // replay kept up for a node's lifetime (a cluster follower's) holds about
  // one ttl of them. 0 keeps every answer until Take (local recovery: the
  // server's RetryCache drops the expired ones it is handed).
  explicit ServerStateReplay(int64_t retry_ttl_ms = 0)
      : retry_ttl_ms_(retry_ttl_ms) {}
  ServerStateReplay(const ServerStateReplay&) = delete;
  ServerStateReplay& operator=(const ServerStateReplay&) = delete;

  // Replaces the state with `state` (a snapshot's).
  void Restore(ServerState state);

  // Applies one record. Records are facts that already happened, so none is
  // refused: opening an id that exists replaces its client, ending or
  // forgetting something absent is a no-op, answering an existing key
  // replaces its entry and answer tick but keeps its place in the order
  // (and in the expiry's, invariant 3);
  // setting a label replaces the key's (an empty one clears it), clearing
  // an absent one is a no-op.
  void Apply(const ServerRecord& record);

  // The state built so far; the replay is left empty.
  ServerState Take();

  size_t session_count() const { return sessions_.size(); }
  size_t retry_count() const { return retries_.size(); }
  size_t label_count() const { return labels_.size(); }

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
  using RetryKey = std::pair<std::string, std::string>;  // (client, id)
  // Drops the answers at the front of retry_order_ older than the ttl at
  // `now` (invariant 3), and the keys there that were forgotten.
  void DropExpiredRetries(Tick now);

  const int64_t retry_ttl_ms_;
  uint64_t next_order_ = 0;
  // With a ttl: the retries' keys in their order, with that order; a key
  // forgotten (or forgotten and answered afresh) stays until it reaches
  // the front, where its order no longer matches its slot's.
  std::deque<std::pair<uint64_t, RetryKey>> retry_order_;
  absl::flat_hash_map<std::string, SessionSlot> sessions_;
  absl::flat_hash_map<RetryKey, RetrySlot> retries_;
  // (client, lock) -> label.
  absl::flat_hash_map<std::pair<std::string, std::string>, std::string> labels_;
};

}  // namespace leasekeeper::storage

#endif  // LEASEKEEPER_STORAGE_SERVER_RECORDS_H_
