"""CallRetry: whether a one-shot call goes again after an attempt, and when;
the rule of the C++ library's client/internal/call_retry.h, for the sync and
asyncio Clients. Pure logic over a caller-given time: the caller makes each
attempt where Endpoints points, reports a failure to Endpoints (which moves
to the named leader, or to the next endpoint), and asks `after`.

Rules:
 1. An answer ends the call (the server's refusal of the request, anything
    but UNAVAILABLE and a deadline without WAIT_TIMEOUT), and so do a
    cancellation and a failed TLS handshake (a setup mistake no retry
    mends).
 2. A failure that shows nothing was applied goes again whatever the call:
    NOT_LEADER, and a connection that could not be made.
 3. Any other UNAVAILABLE or bare DEADLINE_EXCEEDED goes again only for a
    repeatable call (a read, a mutation with a request id, or one that
    repeats to the same effect).
 4. The first len(endpoints) + 1 failures move on at once (a round of the
    list and a redirect); later ones wait a jittered backoff first, from
    FIRST_DELAY doubling to MAX_DELAY. With one endpoint every retry waits.
 5. No attempt starts at or after the deadline: the call raises the last
    attempt's error, naming the endpoint that gave it and the number of
    attempts when there were several.

Thread-safety: a value per call."""

from __future__ import annotations

import copy
import random
from typing import Optional

import grpc

from leasekeeper.errors import LeasekeeperError

FIRST_DELAY = 0.05
MAX_DELAY = 0.5

_NEVER_SENT = ("failed to connect", "connection refused",
               "connections to all backends failing", "dns resolution failed")
_HANDSHAKE = ("handshake", "ssl_error", "certificate verify failed")


def _transport_failure_text(error: LeasekeeperError) -> Optional[str]:
    """The message of a transport failure gRPC reported itself
    (UNAVAILABLE without a server reason), lower-cased; None otherwise."""
    if error.code != grpc.StatusCode.UNAVAILABLE or error.reason:
        return None
    return error.message.lower()


def never_sent(error: LeasekeeperError) -> bool:
    """Rule 2's "could not be made": a transport failure whose message is
    gRPC's for a failed connection attempt."""
    text = _transport_failure_text(error)
    return text is not None and any(words in text for words in _NEVER_SENT)


def handshake_failed(error: LeasekeeperError) -> bool:
    """Rule 1's failed TLS handshake: a transport failure whose message is
    gRPC's for one."""
    text = _transport_failure_text(error)
    return text is not None and any(words in text for words in _HANDSHAKE)


def _endpoint_failure(error: LeasekeeperError) -> bool:
    if error.code == grpc.StatusCode.UNAVAILABLE:
        return True  # unreachable, NOT_LEADER, SHUTTING_DOWN
    if error.code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return error.reason != "WAIT_TIMEOUT"
    return False


class CallRetry:
    def __init__(self, deadline: float, repeatable: bool,
                 endpoints: int) -> None:
        self.deadline = deadline
        self._repeatable = repeatable
        self._immediate = endpoints + 1 if endpoints > 1 else 0
        self._nominal = FIRST_DELAY
        self.attempts = 0
        self.error: Optional[LeasekeeperError] = None

    def after(self, error: LeasekeeperError, target: str,
              now: float) -> Optional[float]:
        """After an attempt to `target` that failed with `error` at `now`:
        when to make the next one, or None when the call ends with
        self.error (rule 5's words added at the deadline)."""
        self.attempts += 1
        self.error = error
        if not _endpoint_failure(error) or handshake_failed(error):
            return None  # rule 1
        unapplied = error.reason == "NOT_LEADER" or never_sent(error)
        if not unapplied and not self._repeatable:
            return None  # rule 3
        if self.attempts <= self._immediate:
            at = now
        else:
            at = now + self._nominal * random.uniform(0.5, 1.0)
            self._nominal = min(self._nominal * 2, MAX_DELAY)
        if at < self.deadline:
            return at
        if self.attempts > 1:
            named = copy.copy(error)
            named.message = (f"{error.message} (from {target}, the last of "
                             f"{self.attempts} attempts before the call's "
                             "deadline)")
            named.args = (named.message,)
            self.error = named
        return None
