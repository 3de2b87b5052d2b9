// WatchPublisher: turns each operation the core applied into the WatchEvents
// a watcher sees, in the order the changes happened, and publishes them to
// the WatchHub with the log position of the operation's record. Without a
// watcher it only counts them, so the sequence rises the same either way.
// Owned by CoreOwner, which feeds it every operation it applies (Begin
// before, Publish after). Thread-safety: none; CoreOwner's core mutex guards
// it (the hub has its own).
#ifndef LEASEKEEPER_SERVER_WATCH_PUBLISHER_H_
#define LEASEKEEPER_SERVER_WATCH_PUBLISHER_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/state_machine.h"
#include "server/watch_hub.h"
#include "storage/operation_log.h"

namespace leasekeeper::server {

class WatchPublisher {
 public:
  explicit WatchPublisher(WatchHub& hub) : hub_(hub) {}
  WatchPublisher(const WatchPublisher&) = delete;
  WatchPublisher& operator=(const WatchPublisher&) = delete;

  // Where the core's pending events stood before an operation applied,
  // whether anybody watches, and (only then) what it is about to end: a
  // Release's lease, a withdrawn wait.
  struct Scope {
    size_t events_before = 0;
    bool watched = false;
    std::optional<HolderView> lease{};
    std::optional<WaiterView> wait{};
  };
  // Takes the scope of `op` before it applies to `table`. O(log n).
  Scope Begin(const Operation& op, const LockTable& table) const;

  // The clock as the owner read it for the operation: the latest tick, and
  // whether the reading lay inside it (a grant then got kGrantRoundingTicks
  // more, which watchers are not shown). `wall` is the same instant on the
  // wall clock.
  struct Moment {
    Tick now = 0;
    bool inside_tick = false;
    absl::Time wall{};
  };
  // Publishes what `op` (answered `reply`) changed, given the core's
  // `events` (its pending events, those from scope.events_before on being
  // the operation's): a Release's or Withdraw's own change first, then the
  // core's events, then an Acquire's own grant or queueing (its aborts come
  // first). A change the core itself reported is not published twice.
  void Publish(const Scope& scope, const Operation& op,
               const absl::StatusOr<Reply>& reply,
               const std::vector<Event>& events, const Moment& moment,
               storage::LogPosition position);

  // While set, a Release is published as kForcedRelease (an operator's),
  // else as kReleased.
  void set_forced_release(bool forced) { forced_release_ = forced; }

 private:
  class Batch;
  void PublishOwnEnd(const Scope& scope, const Operation& op,
                     const Reply& reply, const std::vector<Event>& events,
                     Batch& batch) const;
  void PublishOwnStart(const Scope& scope, const Operation& op,
                       const Reply& reply, const std::vector<Event>& events,
                       Batch& batch) const;

  WatchHub& hub_;
  bool forced_release_ = false;
};

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_WATCH_PUBLISHER_H_
