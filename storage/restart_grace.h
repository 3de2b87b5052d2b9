// RestartGrace: after a restart, every lease that was held gets a fresh
// grace so that a living holder can renew instead of losing its lock to the
// restart (issue 5).
//
// What it does, at tick `at` with grace `grace_ticks`:
//   1. time advances to `at` (like op::Advance: leases with expires_at <= at
//      are retired and hand over as usual);
//   2. every lease still held gets expires_at = max(expires_at,
//      at + grace_ticks). Nothing else changes: tokens, ttls (for RenewAll),
//      the grant sequence (expiry tie-break), queues and ages stay.
//
// Why it is a log record. The core has no such operation and core/ is not
// ours to change, so the grace is applied by exporting the core's state
// (StateMachine::Snapshot), raising the expiries in the plain data and
// restoring it. That change is not an Operation, yet later operations depend
// on it (a renew that only succeeds because of the grace), so the durable
// store appends a RestartGrace record to the log at the point it happened
// and replays it there: the log stays the complete, deterministic history.
//
// Why it is safe.
//  - Fencing: a grace never issues a token and never lowers a counter. Every
//    grant is logged before it is acknowledged (a reply waits for its
//    record to be durable), so the recovered per-lock counter is at least
//    every token any client was ever told; the next grant takes a higher
//    one. A holder that really died is removed when its graced lease lapses,
//    and whatever it wrote meanwhile carries its old, lower token.
//  - Exclusion: only leases that are held in the recovered state are
//    extended; nobody who was not a holder becomes one. A waiter that was
//    granted and told so was logged (the Advance that granted it is logged
//    before the waiter is answered), so it is a holder after recovery too.
//  - Contract: the grace is the only way a lease is lengthened beyond what
//    the contract allows; it happens once per restart, and only to leases
//    held at the restart.
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
