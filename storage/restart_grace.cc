#include "storage/restart_grace.h"

#include <algorithm>

namespace leasekeeper::storage {

size_t ApplyRestartGrace(const RestartGrace& grace, CoreSnapshot& snapshot) {
  const Tick floor = grace.at + std::max<int64_t>(grace.grace_ticks, 0);
  size_t raised = 0;
  for (CoreSnapshot::Lock& lock : snapshot.locks) {
    for (CoreSnapshot::Holder& holder : lock.holders) {
      if (holder.expires_at < floor) {
        holder.expires_at = floor;
        ++raised;
      }
    }
  }
  return raised;
}

absl::StatusOr<size_t> ApplyRestartGrace(const RestartGrace& grace,
                                         StateMachine& machine) {
  absl::StatusOr<Reply> advanced =
      machine.Apply(Operation{grace.at, op::Advance{}});
  if (!advanced.ok()) return advanced.status();
  CoreSnapshot snapshot = machine.Snapshot();
  const size_t raised = ApplyRestartGrace(grace, snapshot);
  if (raised == 0) return raised;
  if (absl::Status status = machine.Restore(snapshot); !status.ok()) {
    return status;
  }
  return raised;
}

}  // namespace leasekeeper::storage
