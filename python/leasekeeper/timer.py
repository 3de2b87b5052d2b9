"""LeaseTimer: when a lease's client-side deadline passes and when to renew
it next. Pure arithmetic on seconds of the client's monotonic clock; time is
a parameter (the same rules as the C++ client's client/lease_timer.h).

Rules:
 1. The client's deadline for a lease is counted on its own monotonic clock
    from the moment it SENT the request that granted or renewed it:
    deadline = sent_at + ttl - safety_margin(ttl). The server counts the
    lease from when it handled the request, which is later, so the client's
    deadline passes first whatever the offset between the clocks; the two
    are never compared. The margin (1 ms + 0.1% of the ttl) covers the
    server's whole-millisecond clock and a slight difference in clock rates.
 2. The next renewal is due a third of the ttl after the last successful one
    was SENT, so a slow server does not push renewals towards the end.
 3. A renewal that fails for a transient reason is retried after 100 ms,
    doubling, never more than a sixth of the ttl apart (and never less: with
    a ttl under 600 ms every retry waits a sixth), until the deadline.
 4. A success only moves the deadline later: an old renewal answered after a
    newer one cannot shorten the lease.

Thread-safety: a plain value; its owner synchronizes.
"""

from __future__ import annotations

import time

FIRST_RETRY_DELAY = 0.1


def monotonic() -> float:
    """The client's monotonic clock, in seconds. The only clock the client
    reads for leases."""
    return time.monotonic()


def safety_margin(ttl: float) -> float:
    return 0.001 + ttl / 1000


def renew_interval(ttl: float) -> float:
    return ttl / 3


def max_retry_delay(ttl: float) -> float:
    return ttl / 6


class LeaseTimer:
    """A lease of `ttl` seconds (what renewals ask for) that the server said
    lasts `lease_left` seconds from a moment no earlier than `counted_from`.
    For a fresh grant lease_left == ttl and counted_from is the send.
    REQUIRES: ttl > 0."""

    __slots__ = ("ttl", "deadline", "next_attempt_at", "retry_delay")

    def __init__(self, ttl: float, counted_from: float,
                 lease_left: float) -> None:
        self.ttl = ttl
        self.deadline = counted_from + lease_left - safety_margin(ttl)
        self.next_attempt_at = self._next_attempt_for(self.deadline)
        self.retry_delay = min(FIRST_RETRY_DELAY, max_retry_delay(ttl))

    def expired_at(self, now: float) -> bool:
        return now >= self.deadline

    def on_renewed(self, sent_at: float) -> None:
        """A renewal sent at `sent_at` succeeded (rules 1, 2 and 4)."""
        self.deadline = max(self.deadline,
                            sent_at + self.ttl - safety_margin(self.ttl))
        self.next_attempt_at = self._next_attempt_for(self.deadline)
        self.retry_delay = min(FIRST_RETRY_DELAY, max_retry_delay(self.ttl))

    def on_transient_failure(self, now: float) -> None:
        """A renewal failed for a transient reason at `now` (rule 3)."""
        self.next_attempt_at = now + self.retry_delay
        self.retry_delay = min(self.retry_delay * 2,
                               max_retry_delay(self.ttl))

    def _next_attempt_for(self, deadline: float) -> float:
        # deadline - 2/3 ttl is a third of the ttl after the send (less the
        # margin, which only makes it earlier).
        return deadline - (self.ttl - renew_interval(self.ttl))
