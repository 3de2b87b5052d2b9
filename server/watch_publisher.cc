#include "server/watch_publisher.h"

#include <algorithm>
#include <utility>
#include <variant>

#include "server/clock.h"

namespace leasekeeper::server {
namespace {

// The core's event as a watcher sees it.
WatchEvent FromCoreEvent(const Event& e) {
  WatchEvent event{.lock = e.lock,
                   .client = e.client,
                   .mode = e.mode,
                   .token = e.token,
                   .at = e.at};
  switch (e.kind) {
    case Event::Kind::kLapsed:
      event.kind = WatchEvent::Kind::kLapsed;
      break;
    case Event::Kind::kGrantedFromQueue:
      event.kind = WatchEvent::Kind::kGranted;
      event.ttl_ms = e.expires_at - e.at;
      break;
    case Event::Kind::kAbortedWaiter:
      event.kind = WatchEvent::Kind::kDeadlockAbort;
      event.token = 0;
      break;
    case Event::Kind::kAbortedHolder:
      event.kind = WatchEvent::Kind::kDeadlockAbort;
      break;
    case Event::Kind::kReleasedByOwner:
      event.kind = WatchEvent::Kind::kReleased;
      break;
    case Event::Kind::kWithdrawnByOwner:
      event.kind = WatchEvent::Kind::kWithdrawn;
      event.token = 0;
      break;
  }
  return event;
}

// Whether the core granted `client` `lock` from its queue in this operation
// (the passage of time, or the aborts that made room).
bool GrantedByCore(const std::vector<Event>& events, size_t from,
                   absl::string_view client, absl::string_view lock) {
  for (size_t i = from; i < events.size(); ++i) {
    if (events[i].kind == Event::Kind::kGrantedFromQueue &&
        events[i].client == client && events[i].lock == lock) {
      return true;
    }
  }
  return false;
}

}  // namespace

// The events of one operation: each is made (`make`) only if somebody
// watches, else counted.
class WatchPublisher::Batch {
 public:
  Batch(WatchHub& hub, bool watched, const Moment& moment,
        storage::LogPosition position)
      : hub_(hub), watched_(watched), moment_(moment), position_(position) {}
  ~Batch() {
    if (unwatched_ > 0) hub_.PublishUnwatched(unwatched_);
  }

  template <typename Make>
  void Add(Make make) {
    if (!watched_) {
      ++unwatched_;
      return;
    }
    WatchEvent event = make();
    event.wall_time = moment_.wall - absl::Milliseconds(moment_.now - event.at);
    // The ttl asked for, without the tick a grant inside a tick gets, as
    // answers report it.
    if (event.ttl_ms > 0 && moment_.inside_tick) {
      event.ttl_ms = std::max<int64_t>(0, event.ttl_ms - kGrantRoundingTicks);
    }
    hub_.Publish(std::move(event), position_);
  }

 private:
  WatchHub& hub_;
  const bool watched_;
  const Moment& moment_;
  const storage::LogPosition position_;
  uint64_t unwatched_ = 0;
};

WatchPublisher::Scope WatchPublisher::Begin(const Operation& op,
                                            const LockTable& table) const {
  Scope scope{.events_before = table.pending_events().size(),
              .watched = hub_.Watched()};
  // Without a watcher the events are only counted, and what they would
  // carry is not looked up.
  if (!scope.watched) return scope;
  if (const auto* release = std::get_if<op::Release>(&op.body)) {
    scope.lease = table.LeaseOf(release->client, release->lock);
    if (!scope.lease.has_value()) scope.wait = table.WaitOf(release->client);
  } else if (const auto* withdraw = std::get_if<op::Withdraw>(&op.body)) {
    scope.wait = table.WaitOf(withdraw->client);
  }
  return scope;
}

void WatchPublisher::Publish(const Scope& scope, const Operation& op,
                             const absl::StatusOr<Reply>& reply,
                             const std::vector<Event>& events,
                             const Moment& moment,
                             storage::LogPosition position) {
  Batch batch(hub_, scope.watched, moment, position);
  if (reply.ok()) PublishOwnEnd(scope, op, *reply, events, batch);
  for (size_t i = scope.events_before; i < events.size(); ++i) {
    batch.Add([&] { return FromCoreEvent(events[i]); });
  }
  if (reply.ok()) PublishOwnStart(scope, op, *reply, events, batch);
}

// A Release's or Withdraw's own change comes before what it causes (the
// next waiter's grant). Which one there is follows from the reply alone,
// as a client never holds and waits for one lock (LockTable::Acquire
// answers kClientBusy): a released lease existed before the operation
// unless the core granted it in this very operation (then it is not
// reported), and a withdrawn wait existed before it.
void WatchPublisher::PublishOwnEnd(const Scope& scope, const Operation& op,
                                   const Reply& reply,
                                   const std::vector<Event>& events,
                                   Batch& batch) const {
  if (const auto* release = std::get_if<op::Release>(&op.body)) {
    const ReleaseOutcome outcome = std::get<ReleaseOutcome>(reply);
    if (outcome == ReleaseOutcome::kReleased &&
        !GrantedByCore(events, scope.events_before, release->client,
                       release->lock)) {
      const WatchEvent::Kind kind = forced_release_
                                        ? WatchEvent::Kind::kForcedRelease
                                        : WatchEvent::Kind::kReleased;
      batch.Add([&] {
        return WatchEvent{.kind = kind,
                          .lock = release->lock,
                          .client = release->client,
                          .mode = scope.lease->mode,
                          .token = scope.lease->token,
                          .at = op.at};
      });
    } else if (outcome == ReleaseOutcome::kWithdrawn) {
      batch.Add([&] {
        return WatchEvent{.kind = WatchEvent::Kind::kWithdrawn,
                          .lock = release->lock,
                          .client = release->client,
                          .mode = scope.wait->mode,
                          .at = op.at};
      });
    }
  } else if (const auto* withdraw = std::get_if<op::Withdraw>(&op.body)) {
    if (std::get<bool>(reply)) {
      batch.Add([&] {
        return WatchEvent{.kind = WatchEvent::Kind::kWithdrawn,
                          .lock = withdraw->lock,
                          .client = withdraw->client,
                          .mode = scope.wait->mode,
                          .at = op.at};
      });
    }
  }
}

// An Acquire's own grant or queueing comes after the aborts that made room
// for it. A request the aborts granted after all was queued first: the
// core reported that grant already (kGrantedFromQueue).
void WatchPublisher::PublishOwnStart(const Scope& scope, const Operation& op,
                                     const Reply& reply,
                                     const std::vector<Event>& events,
                                     Batch& batch) const {
  const auto* acquire = std::get_if<op::Acquire>(&op.body);
  if (acquire == nullptr) return;
  const AcquireOutcome& outcome = std::get<AcquireOutcome>(reply);
  if (outcome.kind == AcquireOutcome::Kind::kGranted &&
      !GrantedByCore(events, scope.events_before, acquire->client,
                     acquire->lock)) {
    batch.Add([&] {
      return WatchEvent{.kind = WatchEvent::Kind::kGranted,
                        .lock = acquire->lock,
                        .client = acquire->client,
                        .mode = acquire->mode,
                        .token = outcome.token,
                        .ttl_ms = outcome.expires_at - op.at,
                        .at = op.at};
    });
  } else if (outcome.kind == AcquireOutcome::Kind::kQueued) {
    batch.Add([&] {
      return WatchEvent{.kind = WatchEvent::Kind::kQueued,
                        .lock = acquire->lock,
                        .client = acquire->client,
                        .mode = acquire->mode,
                        .ttl_ms = acquire->ttl,
                        .at = op.at};
    });
  }
}

}  // namespace leasekeeper::server
