// CoreOwner's hook into the watch hub (server/watch_hub.h): every change
// the core applies becomes WatchEvents, published under mu_ in apply order
// with the position of the record that carries it. Same class and rules as
// core_owner.cc; Watch itself (the snapshot and subscription) is a query
// there.
#include <algorithm>
#include <variant>

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
  WatchScope scope{.events_before = machine_.table().pending_events().size()};
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
  const absl::Time wall_now = absl::Now();
  auto publish = [&](WatchEvent event) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    event.wall_time = wall_now - absl::Milliseconds(last_tick_ - event.at);
    // The ttl asked for, without the tick a grant inside a tick gets
    // (CoreTtlLocked), as answers report it.
    if (event.ttl_ms > 0 && now_inside_tick_) {
      event.ttl_ms = std::max<int64_t>(0, event.ttl_ms - kGrantRoundingTicks);
    }
    watch_hub_.Publish(std::move(event), position);
  };

  // A Release's or Withdraw's own change comes before what it causes (the
  // next waiter's grant).
  if (reply.ok()) {
    if (const auto* release = std::get_if<op::Release>(&op.body)) {
      const ReleaseOutcome outcome = std::get<ReleaseOutcome>(*reply);
      if (outcome == ReleaseOutcome::kReleased && scope.lease.has_value()) {
        publish(WatchEvent{.kind = release_event_,
                           .lock = release->lock,
                           .client = release->client,
                           .mode = scope.lease->mode,
                           .token = scope.lease->token,
                           .at = op.at});
      } else if (outcome == ReleaseOutcome::kWithdrawn &&
                 scope.wait.has_value()) {
        publish(WatchEvent{.kind = WatchEvent::Kind::kWithdrawn,
                           .lock = release->lock,
                           .client = release->client,
                           .mode = scope.wait->mode,
                           .at = op.at});
      }
    } else if (const auto* withdraw = std::get_if<op::Withdraw>(&op.body)) {
      if (std::get<bool>(*reply) && scope.wait.has_value()) {
        publish(WatchEvent{.kind = WatchEvent::Kind::kWithdrawn,
                           .lock = withdraw->lock,
                           .client = withdraw->client,
                           .mode = scope.wait->mode,
                           .at = op.at});
      }
    }
  }

  const std::vector<Event>& events = machine_.table().pending_events();
  for (size_t i = scope.events_before; i < events.size(); ++i) {
    publish(FromCoreEvent(events[i]));
  }

  // An Acquire's own grant or queueing comes after the aborts that made
  // room for it.
  if (!reply.ok()) return;
  const auto* acquire = std::get_if<op::Acquire>(&op.body);
  if (acquire == nullptr) return;
  const AcquireOutcome& outcome = std::get<AcquireOutcome>(*reply);
  // A request the aborts granted after all was queued first: the core
  // reported that grant already (kGrantedFromQueue).
  bool granted_by_core = false;
  for (size_t i = scope.events_before; i < events.size(); ++i) {
    granted_by_core =
        granted_by_core ||
        (events[i].kind == Event::Kind::kGrantedFromQueue &&
         events[i].client == acquire->client && events[i].lock == acquire->lock);
  }
  if (outcome.kind == AcquireOutcome::Kind::kGranted && !granted_by_core) {
    publish(WatchEvent{.kind = WatchEvent::Kind::kGranted,
                       .lock = acquire->lock,
                       .client = acquire->client,
                       .mode = acquire->mode,
                       .token = outcome.token,
                       .ttl_ms = outcome.expires_at - op.at,
                       .at = op.at});
  } else if (outcome.kind == AcquireOutcome::Kind::kQueued) {
    publish(WatchEvent{.kind = WatchEvent::Kind::kQueued,
                       .lock = acquire->lock,
                       .client = acquire->client,
                       .mode = acquire->mode,
                       .ttl_ms = acquire->ttl,
                       .at = op.at});
  }
}

}  // namespace leasekeeper::server
