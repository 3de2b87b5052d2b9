// ConnectionTable: which of the /metrics server's connections may stay
// open, with time as a parameter (milliseconds of a steady clock). It holds
// no sockets; the server asks it whom to close and closes them.
//
// Thread-safety: none; one thread (the server's loop) owns it.
//
// Invariants:
//   1. At most `max_connections` connections are held.
//   2. Each connection has one deadline: `header_timeout_ms` after it was
//      admitted while it reads its request header, then `write_timeout_ms`
//      after its response started.
//   3. The oldest idle connection is the one whose last progress (admission
//      or bytes moved either way) is the earliest, ties by admission order.
#ifndef LEASEKEEPER_METRICS_CONNECTION_TABLE_H_
#define LEASEKEEPER_METRICS_CONNECTION_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace leasekeeper::metrics {

struct ConnectionLimits {
  // REQUIRES: >= 1 each.
  int max_connections = 256;
  int64_t header_timeout_ms = 2'000;
  int64_t write_timeout_ms = 10'000;
};

class ConnectionTable {
 public:
  using Id = uint64_t;

  // REQUIRES: every limit >= 1.
  explicit ConnectionTable(ConnectionLimits limits);
  ConnectionTable(const ConnectionTable&) = delete;
  ConnectionTable& operator=(const ConnectionTable&) = delete;

  struct Admission {
    Id id;  // the new connection's, increasing with each admission
    // Set when the table was full: the oldest idle connection, removed to
    // make room; the caller closes it.
    std::optional<Id> evicted;
  };
  // Admits a new connection at `now_ms`, its header deadline
  // now_ms + header_timeout_ms. Never refuses one. O(log n).
  Admission Admit(int64_t now_ms);

  // The connection moved bytes at `now_ms`: it becomes the youngest idle
  // one. Its deadline does not move (a trickle does not buy time).
  // An unknown id is ignored. O(log n).
  void Progress(Id id, int64_t now_ms);

  // The connection's request is complete and its response starts at
  // `now_ms`: its deadline becomes now_ms + write_timeout_ms. An unknown id
  // is ignored. O(log n).
  void StartResponse(Id id, int64_t now_ms);

  // Forgets the connection (closed by the server or by its peer). An
  // unknown id is ignored. O(log n).
  void Remove(Id id);

  // Removes and returns, earliest deadline first, every connection whose
  // deadline is at or before `now_ms`. O(k log n) for k returned.
  std::vector<Id> TakeExpired(int64_t now_ms);

  // The earliest deadline of any connection; nullopt when empty.
  std::optional<int64_t> NextDeadline() const;

  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    int64_t last_progress_ms;
    int64_t deadline_ms;
  };
  using Key = std::pair<int64_t, Id>;  // (time, id): ids break ties by age

  ConnectionLimits limits_;
  Id next_id_ = 1;
  absl::flat_hash_map<Id, Entry> entries_;
  std::set<Key> by_progress_;  // front: the oldest idle connection
  std::set<Key> by_deadline_;  // front: the next to expire
};

}  // namespace leasekeeper::metrics

#endif  // LEASEKEEPER_METRICS_CONNECTION_TABLE_H_
