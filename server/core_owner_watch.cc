// CoreOwner's hook into the watch hub (server/watch_hub.h): every change
// the core applies becomes WatchEvents, published under mu_ in apply order
// with the position of the record that carries it. Same class and rules as
// core_owner.cc; Watch itself (the snapshot and subscription) is a query
// there.
#include <algorithm>
#include <variant>

#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "server/core_owner.h"

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

}  // namespace

CoreOwner::WatchScope CoreOwner::BeginWatchLocked(const Operation& op) const {
  WatchScope scope{.events_before = machine_.table().pending_events().size(),
                   .watched = watch_hub_.Watched()};
  // Without a watcher the events are only counted, and what they would
  // carry is not looked up.
  if (!scope.watched) return scope;
  if (const auto* release = std::get_if<op::Release>(&op.body)) {
    scope.lease = machine_.table().LeaseOf(release->client, release->lock);
    if (!scope.lease.has_value()) {
      scope.wait = machine_.table().WaitOf(release->client);
    }
  } else if (const auto* withdraw = std::get_if<op::Withdraw>(&op.body)) {
    scope.wait = machine_.table().WaitOf(withdraw->client);
  }
  return scope;
}

void CoreOwner::PublishWatchLocked(const WatchScope& scope,
                                   const Operation& op,
                                   const absl::StatusOr<Reply>& reply,
                                   storage::LogPosition position) {
  // Ticks are the server's monotonic clock; the wall-clock rendering is
  // for humans, as Inspect's expires_at.
  const absl::Time wall_now = scope.watched ? absl::Now() : absl::Time();
  // Each event is made (`make`) only if somebody watches; otherwise it is
  // counted, so the sequence rises the same either way.
  uint64_t unwatched = 0;
  auto publish = [&](auto make) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!scope.watched) {
      ++unwatched;
      return;
    }
    WatchEvent event = make();
    event.wall_time = wall_now - absl::Milliseconds(last_tick_ - event.at);
    // The ttl asked for, without the tick a grant inside a tick gets
    // (CoreTtlLocked), as answers report it.
    if (event.ttl_ms > 0 && now_inside_tick_) {
      event.ttl_ms = std::max<int64_t>(0, event.ttl_ms - kGrantRoundingTicks);
    }
    watch_hub_.Publish(std::move(event), position);
  };

  const std::vector<Event>& events = machine_.table().pending_events();
  // Whether the core granted `client` `lock` from its queue in this
  // operation (the passage of time, or the aborts that made room).
  auto granted_by_core = [&](absl::string_view client, absl::string_view lock) {
    for (size_t i = scope.events_before; i < events.size(); ++i) {
      if (events[i].kind == Event::Kind::kGrantedFromQueue &&
          events[i].client == client && events[i].lock == lock) {
        return true;
      }
    }
    return false;
  };

  // A Release's or Withdraw's own change comes before what it causes (the
  // next waiter's grant). Which one there is follows from the reply alone,
  // as a client never holds and waits for one lock (LockTable::Acquire
  // answers kClientBusy): a released lease existed before the operation
  // unless the core granted it in this very operation (then it is not
  // reported), and a withdrawn wait existed before it.
  if (reply.ok()) {
    if (const auto* release = std::get_if<op::Release>(&op.body)) {
      const ReleaseOutcome outcome = std::get<ReleaseOutcome>(*reply);
      if (outcome == ReleaseOutcome::kReleased &&
          !granted_by_core(release->client, release->lock)) {
        // Read under mu_ here: the thread-safety analysis does not carry
        // the lock into the lambda.
        const WatchEvent::Kind kind = release_event_;
        publish([&] {
          return WatchEvent{.kind = kind,
                            .lock = release->lock,
                            .client = release->client,
                            .mode = scope.lease->mode,
                            .token = scope.lease->token,
                            .at = op.at};
        });
      } else if (outcome == ReleaseOutcome::kWithdrawn) {
        publish([&] {
          return WatchEvent{.kind = WatchEvent::Kind::kWithdrawn,
                            .lock = release->lock,
                            .client = release->client,
                            .mode = scope.wait->mode,
                            .at = op.at};
        });
      }
    } else if (const auto* withdraw = std::get_if<op::Withdraw>(&op.body)) {
      if (std::get<bool>(*reply)) {
        publish([&] {
          return WatchEvent{.kind = WatchEvent::Kind::kWithdrawn,
                            .lock = withdraw->lock,
                            .client = withdraw->client,
                            .mode = scope.wait->mode,
                            .at = op.at};
        });
      }
    }
  }

  for (size_t i = scope.events_before; i < events.size(); ++i) {
    publish([&] { return FromCoreEvent(events[i]); });
  }

  // An Acquire's own grant or queueing comes after the aborts that made
  // room for it.
  const auto* acquire =
      reply.ok() ? std::get_if<op::Acquire>(&op.body) : nullptr;
  if (acquire != nullptr) {
    const AcquireOutcome& outcome = std::get<AcquireOutcome>(*reply);
    // A request the aborts granted after all was queued first: the core
    // reported that grant already (kGrantedFromQueue).
    if (outcome.kind == AcquireOutcome::Kind::kGranted &&
        !granted_by_core(acquire->client, acquire->lock)) {
      publish([&] {
        return WatchEvent{.kind = WatchEvent::Kind::kGranted,
                          .lock = acquire->lock,
                          .client = acquire->client,
                          .mode = acquire->mode,
                          .token = outcome.token,
                          .ttl_ms = outcome.expires_at - op.at,
                          .at = op.at};
      });
    } else if (outcome.kind == AcquireOutcome::Kind::kQueued) {
      publish([&] {
        return WatchEvent{.kind = WatchEvent::Kind::kQueued,
                          .lock = acquire->lock,
                          .client = acquire->client,
                          .mode = acquire->mode,
                          .ttl_ms = acquire->ttl,
                          .at = op.at};
      });
    }
  }
  if (unwatched > 0) watch_hub_.PublishUnwatched(unwatched);
}

}  // namespace leasekeeper::server
