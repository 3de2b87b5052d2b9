"""run_as_leader: leader election on one lock, with the terms of the C++
client's RunAsLeader (client/leader_election.h).

    stop = threading.Event()          # e.g. set by a SIGTERM handler
    def sweep(lease, term):
        while not term.is_set():
            lease.write("cursor", next_cursor())
            term.wait(1)
    client.run_as_leader("order-sweeper", ttl=10, work=sweep, stop=stop)

Contending is one waiting Acquire parked at the server, which answers the
moment the lock is free: a follower takes over as soon as the leader
releases, and within the server's session grace when the leader's process
dies, not after a whole ttl.

A term ends in one of three ways:
 - The lease is lost (expired, not_holder, forced, deadlock_victim,
   session_lost): the work's `term` event is set; run_as_leader waits for
   the work to return, whatever it returns or raises, and contends again.
 - The caller sets `stop`: `term` is set; run_as_leader waits for the work,
   releases the lease and returns None, whatever the work returned.
 - The work returns (or raises) on its own: run_as_leader releases the lease
   and returns what the work returned (or raises what it raised). A leader
   that is done hands the lock on.
Contention errors: transient ones (the server unreachable, the session lost
while waiting, this client aborted as a deadlock victim, a full queue) are
retried after retry_delay; any other (bad arguments, ClientBusy because this
Client already waits for another lock) is raised at once, because contending
again would change nothing and an election that never leads must not look
healthy.

The work runs on the calling thread and must watch `term`: work that
ignores it runs on after the lease is lost, when another process may lead at
the same time. Writes that must not happen then go through lease.write
(fenced by the lease's token). The work must not release the lease itself.

Thread-safety: run it on any thread; give each election its own Client (a
client waits for one lock at a time).
"""

from __future__ import annotations

import enum
import threading
from typing import TYPE_CHECKING, Callable, Optional, TypeVar

import grpc

from leasekeeper import _common
from leasekeeper.errors import LeasekeeperError, LeaseLost, is_transient

if TYPE_CHECKING:
    from leasekeeper.client import Client, Lease

T = TypeVar("T")


class TermEnd(str, enum.Enum):
    LEASE_LOST = "lease_lost"
    CANCELLED = "cancelled"
    WORK_RETURNED = "work_returned"
    WORK_FAILED = "work_failed"

    def __str__(self) -> str:
        return self.value


def check_leader_args(name: object, ttl: object, work: object, stop: object,
                      event_type: type, retry_delay: object
                      ) -> tuple[float, float]:
    """run_as_leader's arguments, checked before any call: the ttl and the
    retry delay (a third of the ttl by default)."""
    _common.check_str("name", name)
    checked_ttl = _common.check_ttl(ttl)
    if not callable(work):
        raise TypeError("work must be callable as work(lease, term)")
    if not isinstance(stop, event_type):
        raise TypeError(f"stop must be an {event_type.__module__}."
                        f"{event_type.__name__}")
    delay = checked_ttl / 3 if retry_delay is None else _common.check_seconds(
        "retry_delay", retry_delay, 0.0, 3600)
    return checked_ttl, delay


def term_end(stopped: bool, held: bool, failed: bool) -> TermEnd:
    """How a term ended, once its work has returned: the caller's stop
    wins over a lost lease, which wins over what the work did."""
    if stopped:
        return TermEnd.CANCELLED
    if not held:
        return TermEnd.LEASE_LOST
    return TermEnd.WORK_FAILED if failed else TermEnd.WORK_RETURNED


def worth_contending_again(error: LeasekeeperError) -> bool:
    return (is_transient(error) or error.code == grpc.StatusCode.ABORTED
            or error.reason in ("SESSION_ENDED", "LIMIT_EXCEEDED",
                                "WAIT_TIMEOUT"))


def run_as_leader(client: "Client", name: str, ttl: float,
                  work: Callable[["Lease", threading.Event], T],
                  stop: threading.Event, *,
                  retry_delay: Optional[float] = None,
                  on_term_start: Optional[Callable[["Lease"], None]] = None,
                  on_term_end: Optional[Callable[["Lease", TermEnd],
                                                 None]] = None,
                  on_contention_error: Optional[
                      Callable[[LeasekeeperError], None]] = None,
                  ) -> Optional[T]:
    """Contends for lock `name` with leases of `ttl` seconds until `stop` is
    set (returns None) or the work returns on its own (returns its result,
    or raises its exception). Raises a non-transient contention error.
    on_term_start(lease) runs before the work, on_term_end(lease, end) after
    it returned and before the release; on_contention_error(error) before
    each retry. ValueError / TypeError for bad arguments, before any call."""
    ttl, delay = check_leader_args(name, ttl, work, stop, threading.Event,
                                   retry_delay)
    while True:
        if stop.is_set():
            return None
        try:
            lease = client.lock(name, ttl=ttl, wait=None, stop=stop)
        except LeasekeeperError as error:
            if stop.is_set():
                return None
            if not worth_contending_again(error):
                raise
            if on_contention_error is not None:
                on_contention_error(error)
            if stop.wait(delay):
                return None
            continue
        if not lease.held:
            continue  # ended before its answer arrived

        term = threading.Event()
        watcher = threading.Thread(target=_watch, args=(lease, stop, term),
                                   name="leasekeeper-term", daemon=True)
        watcher.start()
        result: Optional[T] = None
        failure: Optional[BaseException] = None
        try:
            if on_term_start is not None:
                on_term_start(lease)
            result = work(lease, term)
        except Exception as raised:  # reported below, after the release
            failure = raised
        finally:
            term.set()
            watcher.join()

        end = term_end(stop.is_set(), lease.held, failure is not None)
        if on_term_end is not None:
            on_term_end(lease, end)
        if end == TermEnd.LEASE_LOST:
            continue  # the work has returned; contend again
        try:
            lease.release()
        except LeaseLost:
            pass  # lost at the very end: nothing left to hand on
        except LeasekeeperError:
            pass  # the client releases it in the background
        if end == TermEnd.CANCELLED:
            return None
        if failure is not None:
            raise failure
        return result


def _watch(lease: "Lease", stop: threading.Event,
           term: threading.Event) -> None:
    """Sets `term` when the lease is lost or `stop` is set (a
    threading.Event has no callbacks: this waits on the lease and looks at
    `stop` every 50 ms)."""
    while not term.is_set():
        if lease.lost.wait(0.05) or stop.is_set():
            term.set()
