"""LeaseBook: the bookkeeping of one client's leases, without any I/O.

The threaded Client and the asyncio Client keep their leases in a LeaseBook
and do only the I/O it asks for, so both follow exactly the same rules (the
C++ client's client/internal/client_core.h):
  1. A lease whose client-side deadline (timer.py) passes ends "expired" and
     is queued for a background release, so that no later keepalive revives
     it at the server.
  2. While the session stream is connected, one keepalive renews every lease
     of the client: it is sent when any lease is due (a third of its ttl
     after its last successful renewal was sent) or after the idle interval
     (at most the session's grace, so a lease the server ended without
     telling, e.g. by ForceRelease, is found out within about the grace),
     and counts as a renewal, from its send, of every lease it covered once
     its ack says at least that many leases were renewed. An ack that counts
     fewer makes each covered lease renew by a Renew call at once, to learn
     which one is gone. An ack that does not come within the shortest third
     of a covered ttl (at most the call timeout) makes its leases renew by
     call; one that has not come within the call timeout cuts the stream
     (the session is resumed).
  3. Without a connected stream, every due lease is renewed by its own Renew
     call.
  4. Why a lease ended (EndReason) is decided here, once, and is final:
     - a LEASE_LAPSED notice: "not_holder", or "expired" if the client's own
       deadline had passed;
     - a renewal or release answered NOT_HOLDER: "expired" if the client's
       deadline had passed, otherwise "forced". Before that deadline the
       server's lease cannot have lapsed (the deadline passes first), so the
       server ended it by a release this client did not make: an operator's
       ForceRelease, or a Release with this client id from elsewhere;
     - a renewal answered with another token: "not_holder" (the client holds
       the lock under another grant);
     - SESSION_ENDED, or the session lost: "session_lost";
     - a deadlock abort: "deadlock_victim";
     - the client's own release: "released".
  5. At most one background release per lock is pending, and an Acquire of
     a lock first finishes it, so a late Release (which names only client and
     lock) can never end a newer lease of the same lock.

Time is a parameter (seconds of the client's monotonic clock). Leases that
ended are collected for the owner to signal (take_ended) after it has left
its lock, so nothing is called back under it.

Thread-safety: not thread-safe; the owner serializes every call.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Optional, Protocol, Union

from leasekeeper.errors import LeasekeeperError, is_transient
from leasekeeper.timer import FIRST_RETRY_DELAY, LeaseTimer, renew_interval

MAX_RELEASE_RETRY_DELAY = 5.0
# The owner wakes at least this often.
MAX_SLEEP = 1.0

NOTICE_LEASE_LAPSED = 2
NOTICE_ABORTED_DEADLOCK_VICTIM = 3


class EndReason(str, enum.Enum):
    """Why a lease is no longer held. Compares equal to its value, e.g.
    lease.end_reason == "forced"."""

    RELEASED = "released"
    NOT_HOLDER = "not_holder"
    EXPIRED = "expired"
    DEADLOCK_VICTIM = "deadlock_victim"
    SESSION_LOST = "session_lost"
    FORCED = "forced"

    def __str__(self) -> str:
        return self.value


class Signal(Protocol):
    """What the owner is told through when a lease ends (a threading.Event
    or an asyncio.Event)."""

    def set(self) -> None: ...


class Renewal(enum.Enum):
    IDLE = 0
    KEEPALIVE = 1
    CALL = 2


class LeaseState:
    """One lease. The fixed fields are read by anyone; the others belong to
    the LeaseBook (and its owner's lock)."""

    def __init__(self, lease_id: int, lock: str, token: int, shared: bool,
                 ttl: float, session_id: str, timer: LeaseTimer,
                 lost: Signal) -> None:
        self.id = lease_id
        self.lock = lock
        self.token = token
        self.shared = shared
        self.ttl = ttl
        self.session_id = session_id
        self.lost = lost
        self.timer = timer
        self.renewal = Renewal.IDLE
        self.keepalive_sequence = 0
        self.renew_by_call = False
        self.renew_now = False
        self.releasing = False
        self.end_reason: Optional[EndReason] = None


@dataclass
class PendingRelease:
    lock: str
    session_id: str
    request_id: str
    in_flight: bool = False
    next_attempt_at: float = 0.0
    retry_delay: float = FIRST_RETRY_DELAY


@dataclass
class _Keepalive:
    sent_at: float
    give_up_at: float
    leases: list[LeaseState]


@dataclass
class Plan:
    """What the owner does after leaving its lock."""

    keepalive_sequence: Optional[int] = None
    renew_by_call: list[LeaseState] = field(default_factory=list)
    releases: list[PendingRelease] = field(default_factory=list)
    interrupt_session: bool = False
    wake_at: float = 0.0

    def empty(self) -> bool:
        return (self.keepalive_sequence is None and not self.renew_by_call
                and not self.releases and not self.interrupt_session)


# A renewal's answer: the token the server renewed, or its error.
RenewOutcome = Union[int, LeasekeeperError]


class LeaseBook:
    def __init__(self, call_timeout: float, idle_keepalive_interval: float,
                 now: float, new_request_id: "RequestIds") -> None:
        self.call_timeout = call_timeout
        self._configured_idle_interval = idle_keepalive_interval
        # The idle interval in force: at most the session's grace (rule 2).
        self.idle_keepalive_interval = idle_keepalive_interval
        self.leases: dict[int, LeaseState] = {}
        self.by_lock: dict[str, LeaseState] = {}
        self.pending_releases: dict[str, PendingRelease] = {}
        self.paused = False
        self._ids = new_request_id
        self._next_lease_id = 1
        self._next_sequence = 1
        self._keepalives: dict[int, _Keepalive] = {}
        self._next_idle_keepalive_at = now + idle_keepalive_interval
        self._ended: list[LeaseState] = []

    # -- leases ------------------------------------------------------------

    def register(self, lock: str, token: int, shared: bool, ttl: float,
                 session_id: str, counted_from: float, lease_left: float,
                 now: float, lost: Signal) -> LeaseState:
        """A granted lease (rule 1 of timer.py). It may have ended already
        if the answer took longer than the lease to arrive."""
        lease = LeaseState(self._next_lease_id, lock, token, shared, ttl,
                           session_id,
                           LeaseTimer(ttl, counted_from, lease_left), lost)
        self._next_lease_id += 1
        self.leases[lease.id] = lease
        self.by_lock[lock] = lease
        if lease.timer.expired_at(now):
            self.end(lease, EndReason.EXPIRED, now, release_at_server=True)
        return lease

    def end(self, lease: LeaseState, reason: EndReason, now: float,
            release_at_server: bool = False) -> None:
        """Ends `lease` with `reason` (no-op if it has ended)."""
        if lease.end_reason is not None:
            return
        if (reason in (EndReason.NOT_HOLDER, EndReason.FORCED)
                and lease.timer.expired_at(now)):
            # The client's deadline passed first; the server's lapse, which
            # follows it, is what the notice or the answer reports.
            reason = EndReason.EXPIRED
        lease.end_reason = reason
        self.leases.pop(lease.id, None)
        if self.by_lock.get(lease.lock) is lease:
            del self.by_lock[lease.lock]
        self._ended.append(lease)
        if release_at_server:
            self.queue_release(lease.lock, lease.session_id, self._ids(), now)

    def end_all(self, reason: EndReason, now: float,
                only_session: Optional[str] = None) -> None:
        for lease in list(self.leases.values()):
            if only_session is None or lease.session_id == only_session:
                self.end(lease, reason, now)

    def expire_if_due(self, lease: LeaseState, now: float) -> None:
        if lease.end_reason is None and lease.timer.expired_at(now):
            self.end(lease, EndReason.EXPIRED, now,
                     release_at_server=not lease.releasing)

    def finish_release(self, lease: LeaseState,
                       error: Optional[LeasekeeperError], request_id: str,
                       now: float) -> None:
        """The caller's release of `lease` (request `request_id`) answered:
        released; NOT_HOLDER (it was lost before: rule 4) or SESSION_ENDED;
        or a failure, after which it counts as released and a transient one
        is retried in the background."""
        if error is None:
            self.end(lease, EndReason.RELEASED, now)
        elif error.reason == "NOT_HOLDER":
            self.end(lease, EndReason.FORCED, now)
        elif error.reason == "SESSION_ENDED":
            self.end(lease, EndReason.SESSION_LOST, now)
        else:
            self.end(lease, EndReason.RELEASED, now)
            if is_transient(error):
                self.queue_release(lease.lock, lease.session_id, request_id,
                                   now)

    def begin_close(self) -> tuple[list[LeaseState],
                                   list[tuple[str, str, str]]]:
        """The owner closes: marks every live lease releasing. Returns those
        leases (for finish_close) and what to release lease by lease if the
        session's close does not release everything at once: (lock, session
        id, request id) of each live lease, then of each background release
        not in flight."""
        live = list(self.leases.values())
        for lease in live:
            lease.releasing = True
        releases = ([(s.lock, s.session_id, self._ids()) for s in live]
                    + [(r.lock, r.session_id, r.request_id)
                       for r in self.pending_releases.values()
                       if not r.in_flight])
        return live, releases

    def finish_close(self, live: list[LeaseState], now: float) -> None:
        """Ends the leases begin_close returned "released" and drops every
        background release."""
        for lease in live:
            self.end(lease, EndReason.RELEASED, now)
        self.pending_releases.clear()

    def take_ended(self) -> list[LeaseState]:
        """Leases ended since the last call, for the owner to signal."""
        ended, self._ended = self._ended, []
        return ended

    # -- renewals ----------------------------------------------------------

    def apply_renew(self, lease: LeaseState, sent_at: float,
                    outcome: RenewOutcome, background: bool,
                    now: float) -> None:
        """A Renew call sent at `sent_at` answered `outcome` (rule 4)."""
        if background and lease.renewal == Renewal.CALL:
            lease.renewal = Renewal.IDLE
        if lease.end_reason is not None:
            return
        if isinstance(outcome, int):
            if outcome != lease.token:
                self.end(lease, EndReason.NOT_HOLDER, now)
                return
            lease.timer.on_renewed(sent_at)
            lease.renew_by_call = False
            return
        if outcome.reason == "NOT_HOLDER":
            self.end(lease, EndReason.FORCED, now)
        elif outcome.reason == "SESSION_ENDED":
            self.end(lease, EndReason.SESSION_LOST, now)
        elif background:
            lease.timer.on_transient_failure(now)

    def plan(self, now: float, connected_session: Optional[str]) -> Plan:
        """This round's work. `connected_session`: the id of the session
        whose stream is connected, or None."""
        plan = Plan(wake_at=now + MAX_SLEEP)

        # Rule 1.
        for lease in list(self.leases.values()):
            if lease.timer.expired_at(now):
                self.end(lease, EndReason.EXPIRED, now,
                         release_at_server=not lease.releasing)
            else:
                plan.wake_at = min(plan.wake_at, lease.timer.deadline)

        # Rule 2: overdue acks.
        for sequence, keepalive in list(self._keepalives.items()):
            if now >= keepalive.give_up_at:
                if now - keepalive.sent_at >= self.call_timeout:
                    plan.interrupt_session = True
                self.keepalive_failed(sequence, now)
            else:
                plan.wake_at = min(plan.wake_at, keepalive.give_up_at)

        # Rules 2 and 3: renewals.
        if not self.paused:
            keepalive_due = (connected_session is not None
                             and now >= self._next_idle_keepalive_at)
            for lease in self.leases.values():
                if lease.releasing or lease.renewal != Renewal.IDLE:
                    continue
                if not (lease.renew_now
                        or now >= lease.timer.next_attempt_at):
                    plan.wake_at = min(plan.wake_at,
                                       lease.timer.next_attempt_at)
                    continue
                if (connected_session is not None and not lease.renew_by_call
                        and lease.session_id == connected_session):
                    keepalive_due = True
                else:
                    lease.renewal = Renewal.CALL
                    lease.renew_now = False
                    plan.renew_by_call.append(lease)
            if keepalive_due and connected_session is not None:
                plan.keepalive_sequence = self._start_keepalive(
                    now, connected_session)
                plan.wake_at = min(
                    plan.wake_at,
                    self._keepalives[plan.keepalive_sequence].give_up_at)
            if connected_session is not None:
                plan.wake_at = min(plan.wake_at, self._next_idle_keepalive_at)

        # Rule 5: background releases.
        for release in self.pending_releases.values():
            if release.in_flight:
                continue
            if now >= release.next_attempt_at:
                release.in_flight = True
                plan.releases.append(release)
            else:
                plan.wake_at = min(plan.wake_at, release.next_attempt_at)
        return plan

    def _start_keepalive(self, now: float, session_id: str) -> int:
        sequence = self._next_sequence
        self._next_sequence += 1
        patience = self.call_timeout
        covered = []
        for lease in self.leases.values():
            if (lease.releasing or lease.renew_by_call
                    or lease.renewal != Renewal.IDLE
                    or lease.session_id != session_id):
                continue
            lease.renewal = Renewal.KEEPALIVE
            lease.keepalive_sequence = sequence
            covered.append(lease)
            patience = min(patience, renew_interval(lease.ttl))
        self._keepalives[sequence] = _Keepalive(now, now + patience, covered)
        self._next_idle_keepalive_at = now + self.idle_keepalive_interval
        return sequence

    def keepalive_failed(self, sequence: int, now: float) -> None:
        """Keepalive `sequence` will get no ack: its leases renew by call."""
        keepalive = self._keepalives.pop(sequence, None)
        if keepalive is None:
            return
        for lease in keepalive.leases:
            if (lease.end_reason is not None
                    or lease.renewal != Renewal.KEEPALIVE
                    or lease.keepalive_sequence != sequence):
                continue
            lease.renewal = Renewal.IDLE
            lease.renew_by_call = True
            lease.timer.on_transient_failure(now)

    def on_keepalive_ack(self, sequence: int, renewed_leases: int,
                         now: float) -> None:
        # Acks come in order: older keepalives still waiting get none.
        for older in [s for s in self._keepalives if s < sequence]:
            self.keepalive_failed(older, now)
        keepalive = self._keepalives.pop(sequence, None)
        if keepalive is None:
            return
        covered = [lease for lease in keepalive.leases
                   if lease.end_reason is None and not lease.releasing]
        all_renewed = renewed_leases >= len(covered)
        for lease in covered:
            mine = (lease.renewal == Renewal.KEEPALIVE
                    and lease.keepalive_sequence == sequence)
            if all_renewed:
                lease.timer.on_renewed(keepalive.sent_at)
                if mine:
                    lease.renewal = Renewal.IDLE
            elif mine:
                lease.renewal = Renewal.IDLE
                lease.renew_by_call = True
                lease.renew_now = True

    def on_notice(self, kind: int, lock: str, token: int, now: float) -> None:
        if kind == NOTICE_LEASE_LAPSED:
            reason = EndReason.NOT_HOLDER
        elif kind == NOTICE_ABORTED_DEADLOCK_VICTIM:
            reason = EndReason.DEADLOCK_VICTIM
        else:
            return  # GRANTED_FROM_QUEUE: only try_lock leaves a request queued
        lease = self.by_lock.get(lock)
        if token != 0 and lease is not None and lease.token == token:
            self.end(lease, reason, now)

    def on_session_opened(self, resumed: bool, grace: float,
                          now: float) -> None:
        """A session opened whose server waits `grace` seconds for a
        resume."""
        if grace > 0:
            self.idle_keepalive_interval = min(self._configured_idle_interval,
                                               grace)
            self._next_idle_keepalive_at = min(
                self._next_idle_keepalive_at,
                now + self.idle_keepalive_interval)
        if resumed:
            # Renew everything at once: renewals may have failed meanwhile.
            self._next_idle_keepalive_at = now

    def on_session_interrupted(self, now: float) -> None:
        for sequence in list(self._keepalives):
            self.keepalive_failed(sequence, now)

    def on_session_lost(self, session_id: str, now: float) -> None:
        self.end_all(EndReason.SESSION_LOST, now, session_id)
        # The server released everything the session held.
        for lock, release in list(self.pending_releases.items()):
            if release.session_id == session_id and not release.in_flight:
                del self.pending_releases[lock]
        self.on_session_interrupted(now)

    # -- background releases -------------------------------------------------

    def queue_release(self, lock: str, session_id: str, request_id: str,
                      now: float) -> None:
        if lock not in self.pending_releases:
            self.pending_releases[lock] = PendingRelease(
                lock, session_id, request_id, next_attempt_at=now)

    def release_done(self, release: PendingRelease,
                     error: Optional[LeasekeeperError], now: float) -> None:
        """A release of `release` (in flight) answered."""
        if self.pending_releases.get(release.lock) is not release:
            return
        if error is None or not is_transient(error):
            # Released, withdrawn, or nothing left to release.
            del self.pending_releases[release.lock]
            return
        release.in_flight = False
        release.next_attempt_at = now + release.retry_delay
        release.retry_delay = min(release.retry_delay * 2,
                                  MAX_RELEASE_RETRY_DELAY)

    def claim_release(self, lock: str) -> Optional[PendingRelease]:
        """The pending release of `lock` if none is in flight, marked in
        flight for the caller to perform (rule 5)."""
        release = self.pending_releases.get(lock)
        if release is None or release.in_flight:
            return None
        release.in_flight = True
        return release


class RequestIds(Protocol):
    def __call__(self) -> str: ...
