"""AcquireAttempts: what one lock()/try_lock() does next after each answer,
without any I/O, so the threaded and the asyncio Client take locks by the
same rules (the C++ client's ClientCore::Acquire):
  - A zero wait (try_lock) that the server answers `queued` is withdrawn at
    once with a Release: a "no" leaves nothing queued.
  - WAIT_TIMEOUT is LockBusy, unless the caller's wait is longer than one
    call may ask for (24 h): then the wait goes on with a new request id.
  - Transient failures (and SUPERSEDED_BY_RETRY) are retried with the same
    request id, 100 ms doubling to 1 s, until the wait runs out, for at least
    one call timeout; so a lost answer is answered from the server's retry
    cache and the request applies once.
  - CLIENT_BUSY after such a retry means the first attempt was granted:
    the lease is adopted by renewing it.
  - SESSION_ENDED: the session ended before the client heard of it; its
    leases end "session_lost" and a new session is opened (twice at most).
  - DEADLOCK_VICTIM: every lease of the client ends "deadlock_victim".
  - The lease's deadline counts from the FIRST send of the request id that
    got the grant, plus the time the server says it waited in the queue.

Thread-safety: not thread-safe; one per call.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Callable, Optional

import grpc

from leasekeeper import _common
from leasekeeper.errors import (DeadlockVictim, LeasekeeperError, LockBusy,
                                Unavailable, is_transient)
from leasekeeper.v1 import lock_service_pb2 as pb


class Step(enum.Enum):
    GRANTED = 0   # register the lease (token, counted_from, lease_left)
    BUSY = 1      # withdraw the queued request; then None, or raise error
    RAISE = 2     # raise `error`
    RETRY = 3     # sleep `delay` (unless stopped), send request() again
    REOPEN = 4    # end the session's leases, abandon it, open a new one
    ADOPT = 5     # renew the lock this client holds already; else raise
    DEADLOCK = 6  # end every lease "deadlock_victim", raise `error`


@dataclass
class Next:
    step: Step
    error: Optional[LeasekeeperError] = None
    delay: float = 0.0
    token: int = 0
    counted_from: float = 0.0
    lease_left: float = 0.0


class AcquireAttempts:
    def __init__(self, client_id: str, lock: str, ttl: float,
                 wait: Optional[float], shared: bool, label: str,
                 try_only: bool, call_timeout: float, session_id: str,
                 new_request_id: Callable[[], str], now: float,
                 semaphore: int = 0) -> None:
        self.lock = lock
        self._semaphore = semaphore
        self.session_id = session_id
        self._client_id = client_id
        self._ttl = ttl
        self._wait = wait
        self._shared = shared
        self._label = label
        self._try_only = try_only
        self._call_timeout = call_timeout
        self._ids = new_request_id
        self._wait_deadline = (now if try_only else
                               float("inf") if wait is None else now + wait)
        self._retry_deadline = max(self._wait_deadline, now + call_timeout)
        self._request_id = new_request_id()
        self._first_sent_at: Optional[float] = None
        self._delay = _common.FIRST_RETRY_DELAY
        self._retried = False
        self._reopens = 0

    def request(self, now: float) -> tuple[pb.AcquireRequest, float]:
        """The request to send now, and its transport timeout."""
        if self._first_sent_at is None:
            self._first_sent_at = now
        wait = 0.0 if self._try_only else max(
            0.0, min(self._wait_deadline - now, _common.MAX_SERVER_WAIT))
        request = _common.acquire_request(
            self._client_id, self.lock, self._ttl, self._shared, wait,
            self._request_id, self.session_id, self._label,
            self._semaphore)
        return request, self._call_timeout + wait

    def reopened(self, session_id: str) -> None:
        self.session_id = session_id
        self._fresh_request()

    def on_response(self, response: pb.AcquireResponse) -> Next:
        outcome = response.WhichOneof("outcome")
        if outcome == "granted":
            assert self._first_sent_at is not None
            # The server answered after the request arrived and after it
            # waited waited_ms in the queue, both after the first send; the
            # lease lasts ttl_ms from the answer.
            return Next(Step.GRANTED, token=response.granted.token,
                        counted_from=(self._first_sent_at
                                      + response.granted.waited_ms / 1000),
                        lease_left=response.granted.ttl_ms / 1000)
        if outcome == "queued":  # only with a zero wait
            return Next(Step.BUSY, error=None if self._try_only else LockBusy(
                f"{self.lock} is busy and the wait is zero"))
        if response.withdrawn.reason == pb.WITHDRAW_REASON_SESSION_ENDED:
            return Next(Step.RAISE, error=Unavailable(
                f"the session ended while waiting for {self.lock}"))
        return Next(Step.RAISE, error=LeasekeeperError(
            f"the wait for {self.lock} was withdrawn by a release with this "
            "client id", code=grpc.StatusCode.ABORTED))

    def on_error(self, error: LeasekeeperError, now: float) -> Next:
        if error.reason == "WAIT_TIMEOUT":
            if not self._try_only and now < self._wait_deadline:
                self._fresh_request()
                return Next(Step.RETRY)
            return Next(Step.RAISE, error=self._busy(error))
        if isinstance(error, DeadlockVictim):
            return Next(Step.DEADLOCK, error=error)
        if error.reason == "SESSION_ENDED" and self._reopens < 2:
            self._reopens += 1
            return Next(Step.REOPEN)
        if error.reason == "CLIENT_BUSY" and self._retried:
            return Next(Step.ADOPT, error=error)
        if not (is_transient(error) or error.reason == "SUPERSEDED_BY_RETRY"):
            return Next(Step.RAISE, error=error)
        if now + self._delay >= self._retry_deadline:
            if error.code == grpc.StatusCode.DEADLINE_EXCEEDED:
                return Next(Step.RAISE, error=self._busy(error))
            return Next(Step.RAISE, error=error)
        delay = self._delay
        self._delay = min(self._delay * 2, _common.MAX_ACQUIRE_RETRY_DELAY)
        self._retried = True
        return Next(Step.RETRY, delay=delay)

    def adopt_request(self) -> pb.RenewRequest:
        return renew_request(self._client_id, self.lock, self._ttl,
                             self._ids(), self.session_id)

    def _busy(self, error: LeasekeeperError) -> LockBusy:
        return LockBusy(f"{self.lock} was not granted within {self._wait} s",
                        code=error.code, reason=error.reason,
                        detail=error.detail)

    def _fresh_request(self) -> None:
        self._request_id = self._ids()
        self._first_sent_at = None


def renew_request(client_id: str, lock: str, ttl: float, request_id: str,
                  session_id: str) -> pb.RenewRequest:
    return pb.RenewRequest(client_id=client_id, lock=lock,
                           ttl_ms=max(1, _common.ms(ttl)),
                           request_id=request_id, session_id=session_id)
