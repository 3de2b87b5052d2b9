// WatchHub: fans the lock table's changes out to Watch streams, each with a
// bounded buffer, never making the table wait for a watcher; a watcher sees
// every change or is cut (docs/design/server.md). Owned by CoreOwner.
// Thread-safety: every method is thread-safe; the hub's mutex is a leaf
// under the core's, and sinks are woken only outside it.
#ifndef LEASEKEEPER_SERVER_WATCH_HUB_H_
#define LEASEKEEPER_SERVER_WATCH_HUB_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/types.h"
#include "server/server_config.h"
#include "storage/operation_log.h"

namespace leasekeeper::server {

// One change of a lock, as a watcher sees it.
struct WatchEvent {
  enum class Kind {
    kGranted,        // client holds the lock: mode, token, ttl_ms
    kQueued,         // client joined the queue: mode, ttl_ms asked for
    kReleased,       // client's lease (token) ended by a release
    kLapsed,         // client's lease (token) reached its end
    kWithdrawn,      // client's wait ended without a grant
    kForcedRelease,  // an operator ended client's lease (token)
    kDeadlockAbort,  // client lost this lease (token > 0) or wait (0)
  };
  Kind kind = Kind::kGranted;
  std::string lock{};
  std::string client{};
  LockMode mode = LockMode::kExclusive;
  FencingToken token = 0;
  int64_t ttl_ms = 0;
  Tick at = 0;            // when it took effect
  absl::Time wall_time{};  // the same instant on the wall clock, for humans
  uint64_t sequence = 0;  // set by Publish: 1, 2, ...
};

// What a watcher follows: one lock, or every lock whose name starts with
// `name` (an empty prefix matches every lock).
struct WatchTarget {
  std::string name{};
  bool prefix = false;
};

// The side of a watcher that sends: a Watch stream.
class WatchSink {
 public:
  virtual ~WatchSink() = default;
  // Take would now answer something after answering nothing (an event
  // became durable), or the watcher was cut or ended even while it was
  // busy sending. Called at most once per such change; never with the
  // hub's mutex held.
  virtual void Wake() = 0;
};

class WatchHub {
 public:
  struct Options {
    size_t max_watchers = 10'000;        // --max-watchers
    size_t max_prefix_watchers = 1'000;  // --max-prefix-watchers
    size_t buffer_events = 1'024;        // --watch-buffer-events (>= 1)
  };
  using WatcherId = uint64_t;

  explicit WatchHub(Options options);
  WatchHub(const WatchHub&) = delete;
  WatchHub& operator=(const WatchHub&) = delete;

  // Registers a watcher of `target`. REQUIRES: the caller took the
  // watcher's snapshot in the same hold of the core's mutex (see above).
  // Outcomes: the watcher's id and the sequence of the last event published
  // before it (0 if none); LimitExceeded("max-watchers") or
  // LimitExceeded("max-prefix-watchers"); after EndAll, EndAll's status.
  // A refusal registers nothing.
  struct Subscribed {
    WatcherId id = 0;
    uint64_t sequence = 0;
  };
  absl::StatusOr<Subscribed> Subscribe(WatchTarget target,
                                       std::shared_ptr<WatchSink> sink);

  // Appends `event` (its sequence set here) to the buffer of every watcher
  // whose target matches event.lock; cuts a watcher whose buffer is full.
  // `position`: the log record the change is in (0 without a log); the
  // event is taken only after MarkDurable covers it. Calls no sink. Cost:
  // see above.
  void Publish(WatchEvent event, storage::LogPosition position);

  // Whether some watcher is neither cut nor ended. Read without the hub's
  // mutex: the owner asks under the core's mutex, under which Subscribe is
  // called, so no watcher comes between the answer false and the
  // PublishUnwatched of the same hold. O(1).
  bool Watched() const;

  // What `count` Publishes do when nobody watches: the sequence rises by
  // `count`, no event is built. REQUIRES: Watched() answered false in the
  // same hold of the core's mutex. O(1), without the hub's mutex.
  void PublishUnwatched(uint64_t count);

  // Records that every record up to `position` is durable (positions only
  // rise; a lower one changes nothing) and wakes the watchers that waited
  // and now have an event to take, and those cut since the last call.
  // Cost: O(watchers with undelivered wakes).
  void MarkDurable(storage::LogPosition position);

  // True if an event was published beyond the durable position, or a
  // watcher is owed a wake: the owner then calls MarkDurable even after a
  // call with nothing else to perform. O(1).
  bool AwaitsDurable();

  // What the watcher `id` sends next:
  //  - an event (the oldest buffered one that is durable);
  //  - an end status: WatchFellBehind (server_errors.h; cut), EndAll's status, or
  //    NOT_FOUND for an id unknown or unsubscribed; the stream finishes
  //    with it (Take keeps answering it);
  //  - nothing for now (both empty): Wake follows once there is something.
  struct Next {
    std::optional<WatchEvent> event{};
    std::optional<absl::Status> end{};
  };
  Next Take(WatcherId id);

  // Forgets the watcher (its stream finished). Unknown ids are ignored.
  void Unsubscribe(WatcherId id);

  // Ends every watcher with `status` (non-OK: shutdown, a failed store),
  // waking each; later Subscribes are refused with it. The first status
  // wins.
  void EndAll(absl::Status status);

  struct Stats {
    size_t watchers = 0;         // neither cut nor ended
    size_t prefix_watchers = 0;  // of those, by prefix
    uint64_t cut = 0;            // watchers cut since the start
    uint64_t sequence = 0;       // the last event's
  };
  Stats GetStats();

  // Checks invariants 1 to 3. O(watchers + buffered events); for tests.
  absl::Status CheckInvariants();

 private:
  struct Buffered {
    std::shared_ptr<const WatchEvent> event;
    storage::LogPosition position = 0;
  };
  struct Watcher {
    WatchTarget target;
    std::shared_ptr<WatchSink> sink;
    std::deque<Buffered> buffer;
    // The status Take ends with; set when cut or ended (then the watcher is
    // out of the indexes).
    std::optional<absl::Status> end;
    // The last Take answered nothing: MarkDurable owes it a Wake.
    bool waiting = false;
  };

  // Adds or removes the watcher from the index of its target.
  void IndexLocked(WatcherId id, const WatchTarget& target)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void UnindexLocked(WatcherId id, const WatchTarget& target)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Appends the event to one watcher's buffer, or cuts the watcher.
  void DeliverLocked(WatcherId id, const std::shared_ptr<const WatchEvent>& e,
                     storage::LogPosition position)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends a watcher with `status`: leaves the indexes, drops its buffer, is
  // owed a Wake.
  void EndLocked(WatcherId id, Watcher& watcher, absl::Status status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  // The watcher limits of options_, for LimitChecks.
  const Limits limits_;

  absl::Mutex mu_;
  WatcherId next_id_ ABSL_GUARDED_BY(mu_) = 1;
  // Raised under mu_ by Publish, without it by PublishUnwatched (the
  // core's mutex orders the two).
  std::atomic<uint64_t> sequence_{0};
  storage::LogPosition durable_ ABSL_GUARDED_BY(mu_) = 0;
  storage::LogPosition published_ ABSL_GUARDED_BY(mu_) = 0;  // the highest
  std::optional<absl::Status> ended_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<WatcherId, std::unique_ptr<Watcher>> watchers_
      ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, absl::flat_hash_set<WatcherId>> by_lock_
      ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, absl::flat_hash_set<WatcherId>> by_prefix_
      ABSL_GUARDED_BY(mu_);
  // Prefix length -> how many keys of by_prefix_ have it: a lock name is
  // looked up once per distinct length, not once per prefix watcher.
  absl::btree_map<size_t, size_t> prefix_lengths_ ABSL_GUARDED_BY(mu_);
  // Written under mu_, read without it by Watched().
  std::atomic<size_t> indexed_{0};
  size_t indexed_prefix_ ABSL_GUARDED_BY(mu_) = 0;
  // Watchers owed a Wake: they waited and got an event (woken once it is
  // durable), or they were cut or ended (woken at once).
  absl::flat_hash_set<WatcherId> owed_wake_ ABSL_GUARDED_BY(mu_);
  uint64_t cut_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_WATCH_HUB_H_
