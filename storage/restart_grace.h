// RestartGrace: after a restart (or a cluster failover), time advances to
// `at` and every lease still held gets expires_at = max(expires_at,
// at + grace_ticks), so a living holder can renew instead of losing its lock
// to the restart; nothing else changes. It is a log record, so replay stays
// the complete history. Why it is needed and why it is safe:
// docs/design/durable-path.md ("The restart grace").
//
// Thread-safety: pure functions over values the caller owns.
#ifndef LEASEKEEPER_STORAGE_RESTART_GRACE_H_
#define LEASEKEEPER_STORAGE_RESTART_GRACE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "core/snapshot.h"
#include "core/state_machine.h"
#include "core/types.h"

namespace leasekeeper::storage {

struct RestartGrace {
  Tick at = 0;              // the last tick before the restart
  int64_t grace_ticks = 0;  // >= 0
};

// Applies `grace` to plain data. REQUIRES: grace.at == snapshot.now, so that
// step 1 is a no-op (every lease in a consistent snapshot outlives its now).
// Returns the number of leases whose expiry rose. O(locks in the snapshot).
size_t ApplyRestartGrace(const RestartGrace& grace, CoreSnapshot& snapshot);

// Applies `grace` to a live machine: Advance to grace.at, export, raise,
// restore. Outcomes: OK with the number of leases whose expiry rose;
// InvalidArgument if the restore refused the state (the machine is then
// empty; cannot happen for a state the machine exported itself).
// Cost: O(size of the state), twice.
absl::StatusOr<size_t> ApplyRestartGrace(const RestartGrace& grace,
                                         StateMachine& machine);

}  // namespace leasekeeper::storage

#endif  // LEASEKEEPER_STORAGE_RESTART_GRACE_H_
