// CheckOwnerConsistency: the server's indexes beside the core agree with
// the core and each part keeps its own invariants. A parked call exists for
// (client, lock) only while the core has client queued on lock; every
// holder label belongs to a lease or a wait; the core's, the parked calls',
// the watch hub's and the session table's own invariants hold (every
// session open or in grace, unless `detached_all` after shutdown).
// Outcomes: OK, or INTERNAL naming the first disagreement. O(size); for
// tests. Thread-safety: the caller holds what guards the parts.
#ifndef LEASEKEEPER_SERVER_OWNER_CONSISTENCY_H_
#define LEASEKEEPER_SERVER_OWNER_CONSISTENCY_H_

#include "absl/status/status.h"
#include "core/lock_table.h"
#include "server/parked_calls.h"
#include "server/query_answers.h"
#include "server/session_table.h"
#include "server/watch_hub.h"

namespace leasekeeper::server {

absl::Status CheckOwnerConsistency(const LockTable& table,
                                   const ParkedCalls& parked,
                                   const HolderLabels& labels, WatchHub& hub,
                                   const SessionTable& sessions,
                                   bool detached_all);

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_OWNER_CONSISTENCY_H_
