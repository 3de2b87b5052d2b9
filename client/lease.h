// Lease: one held lock, kept alive in the background until it is released
// or lost. A move-only RAII handle from Client::Acquire or TryAcquire:
// destroying it releases the lock. Pass token() to every write the lock
// protects (Client::Write does). Why it works so: docs/design/clients.md.
//
// Guarantees:
//  1. Renewal: every third of the ttl, by the session's keepalive or a Renew
//     call; a transient failure is retried until the deadline (LeaseTimer).
//  2. Deadline: counted on the client's monotonic clock from the send of the
//     request that granted or last renewed it, less a safety margin, so it
//     passes before the lease ends at the server; unrenewed, the lease then
//     ends (kExpired), whether the server is reachable or not.
//  3. A lease ends exactly once, with one LeaseEndReason, and is final.
//
// Thread-safety: any method from any thread, except that moving, assigning
// or destroying a Lease must not race with another call on it.
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
  // Why the lease ended; nullopt while it is held. Set before Ended() stops.
  std::optional<LeaseEndReason> EndReason() const;
  // Stopped once the lease has ended: pass it to the work the lock covers.
  // A std::stop_callback on it runs when the lease ends (at once, on the
  // registering thread, if it has ended already), otherwise on the thread
  // that ended it (the client's background thread, or one in Release,
  // Renew or Write): it must be quick, must not block and must not destroy
  // this Lease.
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
  //    why; kForced, or kExpired past the deadline, if the server answered
  //    that this client no longer held the lock: the lease was lost before
  //    the release).
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
