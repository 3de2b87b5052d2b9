// RunAsLeader: leader election on one lock. The process whose Client holds
// the lock runs the work; the others wait in one Acquire parked at the
// server; when the leader stops or its process dies, one of them takes over.
// Why it is built so: docs/design/clients.md ("Leader election").
//
//   absl::Status status = RunAsLeader(
//       *client, "order-sweeper", absl::Seconds(10),
//       [&](Lease& lease, std::stop_token term) -> absl::Status {
//         while (!term.stop_requested()) { /* Write(lease, ...) */ }
//         return absl::OkStatus();
//       },
//       stop.get_token());  // e.g. a std::stop_source a SIGTERM handler stops
//
// Thread-safety: RunAsLeader may run on any thread; give each election its
// own Client (a Client waits for one lock at a time).
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
// the work returns on its own. The work runs on the calling thread, gets
// its Lease as a parameter and must watch `term`: work that ignores it runs
// on after the lease is lost, when another process may lead. Writes that
// must not happen then go through Client::Write or carry lease.token() to a
// store that checks it. The work must not release the lease itself.
// A term ends in one of three ways:
//  - the lease is lost (kExpired, kNotHolder, kDeadlockVictim,
//    kSessionLost): `term` stops; RunAsLeader waits for the work, whatever
//    it returns, and contends again;
//  - the caller stops `stop`: `term` stops; RunAsLeader waits for the work,
//    releases the lease and returns CANCELLED, whatever the work returned;
//  - the work returns on its own: RunAsLeader releases the lease (a leader
//    that is done hands the lock on) and returns what the work returned.
// Contention errors: transient ones (the server unreachable, the session
// lost while waiting, this client aborted as a deadlock victim, a full
// queue) are retried after options.retry_delay; any other (bad arguments,
// CLIENT_BUSY because this Client already waits for another lock) is
// returned at once.
// Outcomes: CANCELLED when `stop` was requested; the work's own status when
// it returned on its own; a non-transient contention error.
absl::Status RunAsLeader(Client& client, absl::string_view lock,
                         absl::Duration ttl, const LeaderWork& work,
                         std::stop_token stop,
                         const LeaderOptions& options = {});

}  // namespace leasekeeper::client

#endif  // LEASEKEEPER_CLIENT_LEADER_ELECTION_H_
