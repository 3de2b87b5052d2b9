// RunAsLeader: leader election on one lock. The process whose Client holds
// the lock runs the work; the others wait; when the leader stops, one of
// them takes over.
//
//   std::stop_source stop;  // e.g. stopped by a SIGTERM handler thread
//   absl::Status status = RunAsLeader(
//       *client, "order-sweeper", absl::Seconds(10),
//       [&](Lease& lease, std::stop_token term) -> absl::Status {
//         while (!term.stop_requested()) {
//           if (absl::Status s = client->Write(lease, "cursor", Next());
//               !s.ok()) return s;
//           ...
//         }
//         return absl::OkStatus();
//       },
//       stop.get_token());
//
// Contending is one waiting Acquire parked at the server, which answers the
// moment the lock is free: a follower takes over as soon as the leader
// releases, and within the server's session grace when the leader's process
// dies (its session ends and its lease with it), not after a whole ttl.
//
// A term ends in one of three ways:
//  - The lease is lost (expired, not_holder, deadlock_victim, session_lost):
//    the work's stop token fires; RunAsLeader waits for the work to return,
//    whatever it returns, and contends again.
//  - The caller stops `stop`: the work's stop token fires; RunAsLeader waits
//    for the work, releases the lease and returns CANCELLED, whatever the
//    work returned.
//  - The work returns on its own: RunAsLeader releases the lease and returns
//    what the work returned (OK or its error). A leader that is done hands
//    the lock on.
// Contention errors: transient ones (the server unreachable, the session
// lost while waiting, this client aborted as a deadlock victim, a full
// queue) are retried after options.retry_delay; any other (bad arguments,
// CLIENT_BUSY because this Client already waits for another lock) is
// returned at once, because contending again would change nothing and an
// election that never leads must not look healthy.
//
// The work runs on the calling thread. It must watch its stop token: work
// that ignores it runs on after the lease is lost, when another process may
// lead at the same time. Writes that must not happen then go through
// Client::Write (fenced by the lease's token) or carry lease.token() to a
// store that checks it. The work must not release the lease itself.
//
// Differences from the DynamoDB lock client's RunAsLeaderAsync (seed 000):
// no ambient "current lease" (Lease.Current): the work gets its Lease as a
// parameter, because C++ has no AsyncLocal and an implicit lease that leaks
// into detached threads is how fencing gets bypassed; and no polling (see
// above).
//
// Thread-safety: RunAsLeader may run on any thread; several elections may
// share a Client only if they never wait at the same time (the server lets a
// client wait for one lock at a time), so give each election its own Client.
#ifndef LEASEKEEPER_CLIENT_LEADER_ELECTION_H_
#define LEASEKEEPER_CLIENT_LEADER_ELECTION_H_

#include <functional>
#include <stop_token>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "client/lease.h"

namespace leasekeeper::client {

// The leader's work. `term` is stopped when the lease is lost or the caller
// stops the election.
using LeaderWork =
    std::function<absl::Status(Lease& lease, std::stop_token term)>;

// How a term ended.
enum class TermEnd { kLeaseLost, kCancelled, kWorkReturned, kWorkFailed };
// "lease_lost", "cancelled", "work_returned", "work_failed".
absl::string_view TermEndName(TermEnd end);

struct LeaderOptions {
  // How long to wait before contending again after a transient error.
  // Zero (the default): a third of the ttl.
  absl::Duration retry_delay = absl::ZeroDuration();
  // Called on the calling thread when a term starts (before the work) and
  // ends (after the work returned, before the release). Optional.
  std::function<void(const Lease& lease)> on_term_start;
  std::function<void(const Lease& lease, TermEnd end)> on_term_end;
  // Called with each transient contention error before the retry. Optional.
  std::function<void(const absl::Status& error)> on_contention_error;
};

// Contends for `lock` with leases of `ttl` until the caller stops `stop` or
// the work returns on its own (see above).
// Outcomes: CANCELLED when `stop` was requested; the work's own status when
// it returned on its own; a non-transient contention error.
absl::Status RunAsLeader(Client& client, absl::string_view lock,
                         absl::Duration ttl, const LeaderWork& work,
                         std::stop_token stop,
                         const LeaderOptions& options = {});

}  // namespace leasekeeper::client

#endif  // LEASEKEEPER_CLIENT_LEADER_ELECTION_H_
