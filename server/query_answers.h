// QueryAnswers: the read-only answers (Inspect, Status, ListLocks, a
// watch's snapshot) built from the core, the holders' labels and the
// sessions as of one instant. CoreOwner makes one for a call, under its
// mutex. Thread-safety: none; it holds references only and must not
// outlive that hold of the mutex.
#ifndef LEASEKEEPER_SERVER_QUERY_ANSWERS_H_
#define LEASEKEEPER_SERVER_QUERY_ANSWERS_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/state_machine.h"
#include "server/answers.h"
#include "server/durable_state_machine.h"
#include "server/holder_labels.h"
#include "server/session_table.h"
#include "server/watch_hub.h"

namespace leasekeeper::server {

// A watch's first answer: the matching locks with a holder or a waiter, by
// name, and where the watcher's events start.
struct WatchStart {
  struct Lock {
    std::string name{};
    std::vector<HolderInfo> holders{};  // by token
    std::vector<WaiterInfo> queue{};    // oldest first
  };
  WatchHub::WatcherId id = 0;
  uint64_t sequence = 0;  // of the last event before the snapshot
  std::vector<Lock> locks{};
};

// What surely remains at `now` of a lease ending at `expires_at` once
// `rounding_ticks` (the grant rounding of a reading inside a tick) are
// taken off; never negative.
inline int64_t SureLeftMs(Tick expires_at, Tick now, int64_t rounding_ticks) {
  return std::max<int64_t>(0, expires_at - now - rounding_ticks);
}

class QueryAnswers {
 public:
  // The answers as of `now`; `rounding_ticks` is taken off every holder's
  // remaining time (what surely remains of a lease granted inside a tick).
  // The core may retire lapses due by `now` while answering: their events
  // stay pending in `machine` for the owner to digest.
  QueryAnswers(DurableStateMachine& machine, const HolderLabels& labels,
               const SessionTable& sessions, Tick now, int64_t rounding_ticks)
      : machine_(machine),
        labels_(labels),
        sessions_(sessions),
        now_(now),
        rounding_ticks_(rounding_ticks) {}
  QueryAnswers(const QueryAnswers&) = delete;
  QueryAnswers& operator=(const QueryAnswers&) = delete;

  // A page of at most `limit` (>= 1) holders and waiters of `lock` from
  // `from` on (LockTable::InspectPage), waiters numbered from the page's
  // first position. Outcomes: the page; InvalidArguments (core error) for
  // an empty name. Cost: O(log n + the page + queue positions skipped).
  absl::StatusOr<InspectAnswer> Inspect(const std::string& lock,
                                        const InspectCursor& from,
                                        size_t limit);
  // The client's state with a page of at most `limit` holds whose lock
  // name comes after `after` (empty: from the first) and its session's
  // state. Outcomes: the page; InvalidArguments for an empty name.
  // Cost: O(log n + the page).
  absl::StatusOr<StatusAnswer> Status(const std::string& client,
                                      const std::string& after, size_t limit);
  // Locks with a holder or waiter whose name starts with `prefix`, after
  // `after`, at most max(limit, 1); next_after set when more follow.
  // Cost: O(log n + holders and queues of the listed locks).
  ListLocksAnswer ListLocks(const std::string& prefix, const std::string& after,
                            size_t limit);
  // The locks `target` matches that have a holder or a waiter, by name,
  // each with all its holders and its whole queue (id and sequence are
  // left for the hub). Cost: O(log n + holders and waiters listed).
  std::vector<WatchStart::Lock> WatchSnapshot(const WatchTarget& target);

 private:
  HolderInfo Holder(const HolderView& view) const;
  std::string Label(const std::string& client, const std::string& lock) const;
  // The waiters numbered from `first_position` on, with their labels.
  std::vector<WaiterInfo> Waiters(const std::string& lock,
                                  std::vector<WaiterView> queue,
                                  int64_t first_position) const;

  DurableStateMachine& machine_;
  const HolderLabels& labels_;
  const SessionTable& sessions_;
  const Tick now_;
  const int64_t rounding_ticks_;
};

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_QUERY_ANSWERS_H_
