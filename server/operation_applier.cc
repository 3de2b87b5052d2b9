#include "server/operation_applier.h"

#include "absl/time/clock.h"

namespace leasekeeper::server {

absl::StatusOr<Reply> OperationApplier::Apply(const Operation& op) {
  const WatchPublisher::Scope watch = publisher_.Begin(op, machine_.table());
  const storage::LogPosition before = machine_.last_position();
  absl::StatusOr<Reply> reply = machine_.Apply(op);
  counters_.CountApplied(op, reply);
  const storage::LogPosition after = machine_.last_position();
  if (reply.ok() && machine_.persistent() && after == before) return reply;
  // Ticks are the server's monotonic clock; the wall-clock rendering is
  // for humans, as Inspect's expires_at.
  publisher_.Publish(watch, op, reply, machine_.table().pending_events(),
                     WatchPublisher::Moment{
                         .now = clock_.now(),
                         .inside_tick = clock_.inside_tick(),
                         .wall = watch.watched ? absl::Now() : absl::Time()},
                     after);
  return reply;
}

}  // namespace leasekeeper::server
