// Lease: one held lock, kept alive in the background until it is released
// or lost. Obtained from Client::Acquire or Client::TryAcquire.
//
// A Lease is a move-only RAII handle: destroying it (or assigning another
// Lease to it) releases the lock if it is still held. It carries the
// lock's fencing token: pass it to every write the lock protects
// (Client::Write does), so that a holder that stalled past its lease cannot
// overwrite the next one.
//
// Guarantees:
//  1. Renewal. The client renews the lease every third of its ttl (through
//     the session's keepalive, which renews all of the client's leases at
//     once, or a Renew call per lease when there is no session stream). A
//     renewal that fails for a transient reason is retried after 100 ms,
//     doubling up to a sixth of the ttl, until the client's deadline.
//  2. Deadline. The client's deadline for the lease is counted on its own
//     monotonic clock from the moment it SENT the request that granted or
//     renewed it (for a grant that came out of the queue: the send plus the
//     time the server says the request waited), less a small safety margin
//     (LeaseTimer::SafetyMargin: 1 ms + 0.1% of the ttl), so it passes before
//     the lease ends at the server. It never compares clocks with the
//     server. When the deadline passes without a successful renewal the
//     lease ends (kExpired) even if the server is unreachable.
//  3. Ending. A lease ends exactly once, with one LeaseEndReason. From then
//     on EndReason() returns it, Ended() is stopped, IsHeld() is false and it
//     is never renewed again; losing a lease is final.
//  4. Ended() is a std::stop_token: stop_requested() polls it, a
//     std::stop_callback registered on it runs when the lease ends (at once,
//     in the registering thread, if it has ended already), and
//     std::condition_variable_any / std::jthread-style code can wait on it.
//     EndReason() is set before the stop is requested, so a callback may
//     read it.
//
// Why a stop_token (the C++ idiom for "stop what you are doing"): it is what
// work that needs the lock should be passed, exactly like the
// CancellationToken `Ended` of the DynamoDB lock client this follows; it
// composes (RunAsLeader links it with the caller's stop); and it needs no
// thread of its own. WaitForEnd covers "block until lost".
//
// Thread-safety: every method may be called from any thread, concurrently,
// except that moving, assigning or destroying a Lease must not race with any
// other call on the same Lease object. Stop callbacks registered on Ended()
// run on the thread that ended the lease: the client's background thread, or
// the thread that called Release/Renew/Write. They must be quick, must not
// block, and must not destroy the Lease they watch.
//
// Differences from the DynamoDB lock client (seed 000), and why:
//  - Reasons: `taken_over` and `deleted` become kNotHolder (the server,
//    not the client, decides who holds a lock; there is no item to delete);
//    kDeadlockVictim and kSessionLost are new, because the server aborts
//    deadlock victims and ends sessions.
//  - A contender never takes a lock over by watching a record version for a
//    whole lease: the server hands the lock on at the instant a lease lapses,
//    and within its session grace when a holder's process dies.
//  - Release of a lease this client no longer holds reports kNotHolder
//    instead of being silent, so a job learns that its work was not covered.
#ifndef LEASEKEEPER_CLIENT_LEASE_H_
#define LEASEKEEPER_CLIENT_LEASE_H_

#include <memory>
#include <optional>
#include <stop_token>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "client/types.h"

namespace leasekeeper::client {

class Client;

namespace internal {
class ClientCore;
struct LeaseState;
}  // namespace internal

class Lease {
 public:
  Lease(Lease&& other) noexcept;
  // Releases the lease this object held (as Release(), ignoring the result)
  // before taking over `other`'s.
  Lease& operator=(Lease&& other) noexcept;
  // Releases the lease if it is still held (as Release(), ignoring the
  // result). Blocks for at most the client's call timeout.
  ~Lease();

  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;

  // REQUIRES for every method below: this Lease was not moved from.

  const std::string& lock() const;
  FencingToken token() const;
  LockMode mode() const;
  absl::Duration ttl() const;

  // True until the lease ends.
  bool IsHeld() const;
  // Why the lease ended; nullopt while it is held.
  std::optional<LeaseEndReason> EndReason() const;
  // Stopped once the lease has ended (guarantee 4).
  std::stop_token Ended() const;
  // Blocks until the lease ends or `timeout` passes; the reason, or nullopt
  // on timeout. InfiniteDuration waits for as long as it takes.
  std::optional<LeaseEndReason> WaitForEnd(
      absl::Duration timeout = absl::InfiniteDuration()) const;
  // Time left until the client's deadline (zero once ended or past it).
  absl::Duration TimeLeft() const;

  // Renews the lease now with one Renew call, e.g. before a step that must
  // not start on a lease about to run out.
  // Outcomes:
  //  - OK: renewed; the deadline is now at least the send time plus the
  //    ttl (less the safety margin).
  //  - FAILED_PRECONDITION: the lease has ended (before or because of this
  //    call: the server answered NOT_HOLDER or SESSION_ENDED, or the
  //    deadline passed, also while retrying); EndReason() says why.
  //  - CANCELLED: the Client is shutting down.
  //  - anything else (INVALID_ARGUMENT, ...): the server refused the call;
  //    the lease is still held and left to the background renewal.
  // A transient failure (UNAVAILABLE, DEADLINE_EXCEEDED) is retried with the
  // same request id, after a jittered backoff of 100 ms doubling to 1 s,
  // until the lease's deadline: so this blocks for at most the lease's time
  // left.
  absl::Status Renew();

  // Releases the lock now; the lease ends with kReleased.
  // Outcomes:
  //  - OK: released at the server.
  //  - FAILED_PRECONDITION: the lease had already ended (EndReason() says
  //    why; kNotHolder if the server answered that this client no longer
  //    held the lock: the lease was lost before the release).
  //  - UNAVAILABLE / DEADLINE_EXCEEDED: the server could not be reached
  //    within the call timeout (attempts retried with the same request id).
  //    The lease ends anyway (kReleased) and is never renewed again; the
  //    client keeps retrying the release, with that request id, in the
  //    background until the server answers it (at once when the session is
  //    resumed after an outage), and otherwise the server frees it when its
  //    ttl lapses or its session ends.
  absl::Status Release();

 private:
  friend class Client;
  Lease(std::shared_ptr<internal::ClientCore> core,
        std::shared_ptr<internal::LeaseState> state);

  const internal::LeaseState& state() const { return *state_; }

  std::shared_ptr<internal::ClientCore> core_;
  std::shared_ptr<internal::LeaseState> state_;
};

}  // namespace leasekeeper::client

#endif  // LEASEKEEPER_CLIENT_LEASE_H_
