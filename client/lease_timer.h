// LeaseTimer: when a lease's client-side deadline passes and when to renew
// it next. Pure arithmetic; time is a parameter. Why these rules:
// docs/design/clients.md ("The client's deadline").
//
// Rules:
//  1. deadline = sent_at + ttl - SafetyMargin(ttl), on the client's
//     monotonic clock, sent_at being the send of the request that granted or
//     renewed the lease; it never compares clocks with the server.
//  2. The next renewal is due a third of the ttl after the last successful
//     one was sent (not answered): at deadline - 2/3 ttl.
//  3. A transient failure is retried after FirstRetryDelay, doubling, at
//     most MaxRetryDelay apart, until a success or the deadline.
//  4. A success only ever moves the deadline later.
//
// Thread-safety: a plain value; the owner synchronizes.
#ifndef LEASEKEEPER_CLIENT_LEASE_TIMER_H_
#define LEASEKEEPER_CLIENT_LEASE_TIMER_H_

#include "absl/time/time.h"

namespace leasekeeper::client {

// A reading of the client's monotonic clock (std::chrono::steady_clock),
// as the time since its arbitrary epoch. Only differences mean anything.
using MonotonicTime = absl::Duration;

// Reads the monotonic clock. The only clock read in the client library.
MonotonicTime MonotonicNow();

class LeaseTimer {
 public:
  // A third of the ttl (rule 2).
  static absl::Duration RenewInterval(absl::Duration ttl) { return ttl / 3; }
  // The first retry delay: 100 ms, but at most a sixth of the ttl (rule 3;
  // with a ttl under 600 ms every retry waits a sixth).
  static absl::Duration FirstRetryDelay(absl::Duration ttl);
  // The retry delay cap: a sixth of the ttl (rule 3).
  static absl::Duration MaxRetryDelay(absl::Duration ttl) { return ttl / 6; }
  // How much earlier than sent_at + ttl the client's deadline is (rule 1):
  // 1 ms plus 0.1% of the ttl.
  static absl::Duration SafetyMargin(absl::Duration ttl) {
    return absl::Milliseconds(1) + ttl / 1000;
  }

  // A lease of `ttl` (the duration renewals ask for) that the server said
  // lasts `lease_left` from a moment no earlier than `counted_from` on the
  // client's clock: deadline = counted_from + lease_left - SafetyMargin(ttl).
  // For a fresh grant, lease_left == ttl and counted_from is the send.
  // REQUIRES: ttl > 0.
  LeaseTimer(absl::Duration ttl, MonotonicTime counted_from,
             absl::Duration lease_left);

  absl::Duration ttl() const { return ttl_; }
  MonotonicTime deadline() const { return deadline_; }
  // When the next renewal attempt is due (may be at or after the deadline).
  MonotonicTime next_attempt_at() const { return next_attempt_at_; }
  // The delay the next transient failure will wait before its retry.
  absl::Duration retry_delay() const { return retry_delay_; }

  bool ExpiredAt(MonotonicTime now) const { return now >= deadline_; }

  // A renewal sent at `sent_at` succeeded: deadline = max(deadline,
  // sent_at + ttl - margin); the next attempt is a third of the ttl after
  // the send of the renewal that set the deadline; the retry delay starts
  // over.
  void OnRenewed(MonotonicTime sent_at);

  // A renewal failed for a transient reason at `now`: the next attempt is
  // at now + retry_delay(), and the delay doubles up to MaxRetryDelay.
  void OnTransientFailure(MonotonicTime now);

 private:
  MonotonicTime NextAttemptFor(MonotonicTime deadline) const;

  absl::Duration ttl_;
  MonotonicTime deadline_;
  MonotonicTime next_attempt_at_;
  absl::Duration retry_delay_;
};

}  // namespace leasekeeper::client

#endif  // LEASEKEEPER_CLIENT_LEASE_TIMER_H_
