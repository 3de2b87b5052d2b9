"""Client and Lease: leasekeeper locks as leases that look after themselves,
for threaded Python (leasekeeper.aio has the same API for asyncio).

    with leasekeeper.Client("127.0.0.1:7233") as client:
        with client.lock("exports/daily", ttl=30, wait=60) as lease:
            for part in parts:
                lease.check()                    # LeaseLost once it ended
                lease.write(f"part-{part}", rows(part))   # fenced

A Client is one client id at the server. Its first lock opens a session
stream that it keeps while it lives: one keepalive every third of the
shortest ttl renews every lease it holds (from a background thread), and if
the process dies the server releases its locks after the session grace
(--session-grace, 2 s by default) instead of after a whole ttl. Requests
carry the session id, so a request arriving after the session ended is
refused and can never leave a lock behind.

The rules the caller should know (proto/leasekeeper/v1/lock_service.proto):
 - Waiters are FIFO; every grant takes the lock's next fencing token.
 - A client holds any number of locks but waits for at most one at a time:
   a second lock() on the same Client while one waits raises ClientBusy.
   Use a Client per concurrent waiter.
 - The lease's deadline is counted on this process's monotonic clock from
   the moment the granting or renewing request was sent, less a small
   margin (timer.py), so it passes before the lease ends at the server; the
   client never compares clocks with the server. When it passes without a
   renewal the lease ends "expired", even if the server is unreachable.

Acquire, Renew and Release travel as unary calls naming the session (not as
calls on the stream, as the C++ client does): a cancelled unary Acquire is
withdrawn by the server itself, so a KeyboardInterrupt during a wait can
never leave a request queued, and a Python process's cost per call is in
Python, not in the server's call setup.

Thread-safety: Client and Lease are thread-safe. Lease.lost is a
threading.Event, set from the Client's threads when the lease ends.
"""

from __future__ import annotations

import threading
import time
from types import TracebackType
from typing import Any, Callable, Optional, TypeVar

import grpc

from leasekeeper import _common
from leasekeeper._acquire import AcquireAttempts, Step, renew_request
from leasekeeper._book import EndReason, LeaseBook, LeaseState, PendingRelease, Plan
from leasekeeper._lease_base import (LeaseBase, ended_error, ends_lease,
                                     not_writing_error)
from leasekeeper._common import (ClientStatus, Endpoints, KeyPage, LockInfo,
                                 LockSummary, ReleasedLease, TlsFiles)
from leasekeeper._retry import CallRetry
from leasekeeper._session import Session
from leasekeeper.leader import TermEnd, run_as_leader
from leasekeeper.errors import (ClientBusy, LeasekeeperError, LeaseLost,
                                Unavailable, from_rpc_error, is_transient)
from leasekeeper.timer import monotonic
from leasekeeper.v1 import lock_service_pb2 as pb

T = TypeVar("T")


class Lease(LeaseBase):
    """One held lock, renewed in the background until released or lost.

    Guarantees:
     1. A lease ends exactly once, with one end_reason; from then on `lost`
        is set, `held` is False and it is never renewed again.
     2. As a context manager it releases the lock on exit, also when the
        block raises. If the lease had ended before the block finished, a
        block that did not raise raises LeaseLost at the exit: the work was
        not covered by the lock, and a job must not report it as done.
    """

    def __init__(self, client: "Client", state: LeaseState) -> None:
        super().__init__(state)
        self._client = client
        self.lost: threading.Event = state.lost  # type: ignore[assignment]

    @property
    def end_reason(self) -> Optional[EndReason]:
        return self._client._end_reason(self._state)

    def time_left(self) -> float:
        return self._client._time_left(self._state)

    def check(self) -> None:
        """Raises LeaseLost if the lease has ended (or its deadline passed:
        it then ends "expired")."""
        if self._client._check(self._state) is not None:
            raise ended_error(self._state)

    def renew(self) -> None:
        """Renews the lease now with one Renew call, e.g. before a step that
        must not start on a lease about to run out.
        Raises LeaseLost if the lease has ended (before or because of this
        call); Unavailable (the lease is still held, and left to the
        background renewal)."""
        self._client._renew(self._state)

    def release(self) -> None:
        """Releases the lock now; the lease ends "released".
        Raises LeaseLost if it had already ended (end_reason says why:
        "forced" or "not_holder" if the server said this client no longer
        held it); Unavailable if the server could not be reached: the lease
        ends anyway and the client keeps trying in the background."""
        self._client._release(self._state)

    def write(self, key: str, value: bytes | str) -> None:
        """Writes `value` under (lock, key) in the fenced store with this
        lease's token, and holder-checked (WriteRequest.require_held): the
        server accepts it only while this client holds the lease.
        Raises LeaseLost if the lease has ended (nothing is sent);
        StaleToken if the store accepted a higher token for the lock;
        NotHolder if the server says this client no longer holds it (a lease
        that lapsed or was force-released, even if no higher token wrote); LimitExceeded; Unavailable."""
        self._client._write(self._state, key, value)

    def delete(self, key: str) -> bool:
        """Deletes (lock, key) from the fenced store with this lease's
        token, holder-checked as write is; the delete fences the lock as a
        write does. Returns whether the key had a value (False: nothing to
        delete, which is not an error). Raises as write does."""
        return self._client._delete(self._state, key)

    def __enter__(self) -> "Lease":
        return self

    def __exit__(self, exc_type: Optional[type[BaseException]],
                 exc: Optional[BaseException],
                 traceback: Optional[TracebackType]) -> None:
        reason = self._client._end_reason(self._state)
        if reason is None:
            try:
                self._client._release(self._state)
                return
            except LeaseLost as lost:
                reason = lost.end_reason
            except Unavailable:
                if exc_type is None:
                    raise
                return
        self._raise_if_uncovered(exc_type is not None, reason)


class Client:
    """A leasekeeper client (one client id).

    endpoints: "host:port", or several (a list, or "a,b,c"): a cluster's
      nodes. Calls go to one at a time; a NOT_LEADER refusal moves them to
      the leader the node names, an unreachable node or one that knows no
      leader to the next endpoint, and the call is retried there with its
      request id, so a lease rides over a failover as over a restart.
    client_id: default "<hostname>/<pid>/<8 random hex digits>". Two
      Clients with the same id share their leases and wait slot: do not.
    holder_label: shown next to every lease and wait (Inspect, Status).
    tls: TlsFiles for a TLS channel; None for plaintext.
    call_timeout: the transport deadline of each call, seconds (a lock's
      wait comes on top).
    idle_keepalive_interval: keepalive period while no lease needs one
      sooner; at most the server's session grace.
    Raises ValueError / TypeError for bad arguments; no I/O happens until the
    first call.
    """

    def __init__(self, endpoints: str | list[str] | tuple[str, ...], *,
                 client_id: Optional[str] = None, holder_label: str = "",
                 tls: Optional[TlsFiles] = None, call_timeout: float = 5.0,
                 idle_keepalive_interval: float = 5.0) -> None:
        config = _common.check_client_args(endpoints, client_id,
                                           holder_label, tls, call_timeout,
                                           idle_keepalive_interval)
        self.client_id = config.client_id
        self.holder_label = config.holder_label
        self.call_timeout = config.call_timeout
        credentials, options = config.credentials, config.channel_options

        def make_channel(target: str) -> grpc.Channel:
            if credentials is None:
                return grpc.insecure_channel(target, options=options)
            return grpc.secure_channel(target, credentials, options=options)

        self._endpoints = Endpoints(config.targets, make_channel)
        self._ids = _common.RequestIdSource()
        self._cv = threading.Condition()
        self._book = LeaseBook(self.call_timeout,
                               config.idle_keepalive_interval, monotonic(),
                               self._ids)
        self._closed = False
        # When the renewal thread wakes next if nothing changes (0 while it
        # works): see _nudge_locked.
        self._planned_wake = 0.0
        self._calls: set[grpc.Future] = set()
        self._session = Session(self._endpoints, self.client_id, self)
        self._maintenance = threading.Thread(
            target=self._maintain, name="leasekeeper-renewal", daemon=True)
        self._maintenance.start()

    # -- context manager -----------------------------------------------------

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, exc_type: Optional[type[BaseException]],
                 exc: Optional[BaseException],
                 traceback: Optional[TracebackType]) -> None:
        self.close()

    def close(self) -> None:
        """Releases every lease still held (they end "released"), closes the
        session and the channels. Blocks for at most about two call
        timeouts. Idempotent."""
        with self._cv:
            if self._closed:
                return
            self._closed = True
            live, releases = self._book.begin_close()
            self._cv.notify_all()
        self._maintenance.join()
        # Closing the session releases everything at once; without one (or
        # if the close fails) release lease by lease.
        if not self._session.close(self.call_timeout):
            give_up_at = monotonic() + self.call_timeout
            for lock, session_id, request_id in releases:
                try:
                    self._unary("Release", _common.release_request(
                        self.client_id, lock, request_id, session_id),
                        max(0.001, give_up_at - monotonic()))
                except LeasekeeperError:
                    pass
        with self._cv:
            self._book.finish_close(live, monotonic())
            calls = list(self._calls)
        for call in calls:
            call.cancel()
        self._deliver()
        self._session.stop()
        for channel in self._endpoints.take_channels():
            channel.close()

    # -- locks ---------------------------------------------------------------

    def lock(self, name: str, ttl: float = 30.0, wait: Optional[float] = 60.0,
             shared: bool = False, *, holder_label: Optional[str] = None,
             stop: Optional[threading.Event] = None,
             semaphore: Optional[int] = None) -> Lease:
        """Takes lock `name` with a lease of `ttl` seconds, waiting up to
        `wait` seconds for it at the server (None: until granted or `stop`).
        The Lease is a context manager that releases it.
        Raises:
         - LockBusy: not granted within `wait`; nothing is left queued;
         - ClientBusy: this Client already holds `name` (refused before any
           call), or the server says this client id waits for some lock;
         - DeadlockVictim: aborted to break a deadlock; every lease of this
           Client ended "deadlock_victim";
         - LeasekeeperError CANCELLED: `stop` was set; nothing is queued;
         - Unavailable: the server could not be reached (transient failures
           are retried with the same request id until `wait` runs out, for
           at least one call timeout), or the session ended while waiting;
         - LimitExceeded; LeasekeeperError INVALID_ARGUMENT;
         - CapacityMismatch / ModeMismatch (semaphore=N): the lock is held or
           awaited as a semaphore of another capacity / as a plain lock.
        semaphore=N takes one of N permits of a counting semaphore (N in
        1..65535; the request that finds the lock idle sets N): a lease
        like any other, with its own token.
        ValueError / TypeError for bad arguments, before any call."""
        lease = self._acquire(name, ttl, wait, shared, holder_label, stop,
                              try_only=False, semaphore=semaphore)
        assert lease is not None
        return lease

    def try_lock(self, name: str, ttl: float = 30.0, shared: bool = False, *,
                 holder_label: Optional[str] = None,
                 semaphore: Optional[int] = None) -> Optional[Lease]:
        """Takes lock `name` if it can be granted now. None if it is busy
        (held incompatibly, or someone is queued): the request the server
        queued is withdrawn before this returns, so nothing is left behind.
        Otherwise the errors of lock() (no LockBusy)."""
        return self._acquire(name, ttl, 0.0, shared, holder_label, None,
                             try_only=True, semaphore=semaphore)

    def run_as_leader(self, name: str, ttl: float,
                      work: Callable[[Lease, threading.Event], T],
                      stop: threading.Event, *,
                      retry_delay: Optional[float] = None,
                      on_term_start: Optional[Callable[[Lease], None]] = None,
                      on_term_end: Optional[Callable[[Lease, TermEnd],
                                                     None]] = None,
                      on_contention_error: Optional[
                          Callable[[LeasekeeperError], None]] = None,
                      ) -> Optional[T]:
        """Leader election on lock `name` (leasekeeper.leader.run_as_leader):
        runs work(lease, term) while this Client holds the lock, contends
        again when the lease is lost, returns None once `stop` is set or the
        work's result when it returns on its own."""
        return run_as_leader(self, name, ttl, work, stop,
                             retry_delay=retry_delay,
                             on_term_start=on_term_start,
                             on_term_end=on_term_end,
                             on_contention_error=on_contention_error)

    # -- the fenced store ------------------------------------------------------

    def read(self, lock: str, key: str) -> Optional[bytes]:
        """The last value accepted for (lock, key); None if none.
        Raises LeasekeeperError INVALID_ARGUMENT; Unavailable."""
        request = pb.ReadRequest(lock=_common.check_str("lock", lock),
                                 key=_common.check_str("key", key))
        response = self._call("Read", request)
        return bytes(response.value) if response.found else None

    def list_keys(self, lock: str, after: str = "",
                  limit: int = 0) -> KeyPage:
        """One page of the lock's keys after `after` (empty: from the
        first), ascending; no lease needed. limit 0: the server's default
        (100), at most 1,000. Raises LeasekeeperError INVALID_ARGUMENT;
        LimitExceeded; Unavailable."""
        request = _common.list_keys_request(lock, after, limit)
        return KeyPage.of(self._call("ListKeys", request))

    def keys(self, lock: str) -> list[str]:
        """All the lock's keys, one ListKeys call per page. Pages are
        separate reads: keys written or deleted meanwhile may be missed."""
        keys: list[str] = []
        after: Optional[str] = ""
        while after is not None:
            page = self.list_keys(lock, after)
            keys.extend(page.keys)
            after = page.next_after
        return keys

    # -- observation and operators ---------------------------------------------

    def inspect(self, lock: str) -> LockInfo:
        """The lock's holders and queue (two empty lists for an unused
        lock)."""
        pages = _common.InspectPages(lock)
        while True:
            info = pages.add(self._call("Inspect", pages.request))
            if info is not None:
                return info

    def status(self, client_id: Optional[str] = None) -> ClientStatus:
        """A client's registration, leases, wait and session state (this
        Client's by default)."""
        who = self.client_id if client_id is None else _common.check_str(
            "client_id", client_id)
        pages = _common.StatusPages(who)
        while True:
            status = pages.add(self._call("Status", pages.request))
            if status is not None:
                return status

    def list_locks(self, prefix: str = "",
                   page_size: int = 0) -> list[LockSummary]:
        """Every lock with a holder or a waiter whose name starts with
        `prefix`, in name order: all pages, fetched `page_size` locks a call
        (0: the server's default) before it returns."""
        _common.check_page(prefix, page_size)
        locks: list[LockSummary] = []
        token = ""
        while True:
            response = self._call("ListLocks", pb.ListLocksRequest(
                prefix=prefix, page_size=page_size, page_token=token))
            locks.extend(LockSummary.of(s) for s in response.locks)
            token = response.next_page_token
            if not token:
                return locks

    def force_release(self, lock: str, client_id: str = "",
                      reason: str = "") -> list[ReleasedLease]:
        """For operators: ends `client_id`'s lease on `lock` (every lease on
        it when empty). With mutual TLS only an admin identity may; without
        client certificates anybody. Raises NoHolder if nobody (or not
        client_id) holds it; PERMISSION_DENIED / UNAUTHENTICATED errors."""
        request = _common.force_release_request(lock, client_id, reason)
        # No request id: gone again only after a refusal that applied
        # nothing (NOT_LEADER, no connection).
        return ReleasedLease.all_of(self._call("ForceRelease", request,
                                               repeatable=False))

    # -- testing -----------------------------------------------------------------

    def pause_renewals_for_testing(self, paused: bool) -> None:
        """Stops (True) or resumes all background renewal, keepalives
        included, so leases run into their deadline while the stream stays
        connected."""
        with self._cv:
            self._book.paused = paused
            self._cv.notify_all()

    def suspend_session_for_testing(self, duration: float) -> None:
        """Cuts the session stream and does not resume it for `duration`
        seconds, as if the process had hung."""
        self._session.suspend_for_testing(duration)

    # -- internals: calls ----------------------------------------------------------

    def _unary(self, method: str, request: object, timeout: float,
               stop: Optional[threading.Event] = None,
               interruptible: bool = False) -> Any:
        """One unary call; raises its LeasekeeperError. `interruptible` (a
        call that may wait long: Acquire) waits on a future, so that a
        KeyboardInterrupt or `stop` cancels it, which withdraws a waiting
        Acquire at the server."""
        index, connection = self._endpoints.current()
        multicallable = getattr(connection.stub, method)
        try:
            if not interruptible and stop is None:
                return multicallable(request, timeout=timeout)
            future = multicallable.future(request, timeout=timeout)
            try:
                if stop is None:
                    return future.result()
                while True:
                    try:
                        return future.result(timeout=0.05)
                    except grpc.FutureTimeoutError:
                        if stop.is_set():
                            future.cancel()
                            raise LeasekeeperError(
                                f"{method} cancelled",
                                code=grpc.StatusCode.CANCELLED) from None
            except BaseException:
                future.cancel()
                raise
        except grpc.RpcError as rpc_error:
            error = from_rpc_error(rpc_error)
            if error.code == grpc.StatusCode.UNAVAILABLE:
                self._endpoints.failed(index, error.leader)
            raise error from None
        except grpc.FutureCancelledError:
            raise LeasekeeperError(f"{method} cancelled",
                                   code=grpc.StatusCode.CANCELLED) from None

    def _call(self, method: str, request: object,
              repeatable: bool = True) -> Any:
        """A one-shot call within one call timeout, over a failover
        (leasekeeper._retry): repeated where Endpoints points until it is
        answered or the deadline passes; raises its LeasekeeperError.
        Repeatable (the default): a read, or a write or delete, which
        repeats to the same effect."""
        retry = CallRetry(monotonic() + self.call_timeout, repeatable,
                          self._endpoints.count)
        while True:
            target = self._endpoints.target
            try:
                return self._unary(method, request,
                                   max(0.001, retry.deadline - monotonic()))
            except LeasekeeperError as error:
                at = retry.after(error, target, monotonic())
                if at is None:
                    assert retry.error is not None
                    raise retry.error from None
            time.sleep(max(0.0, at - monotonic()))

    def _withdraw(self, lock: str, session_id: str) -> None:
        """Withdraws what try_lock (or a zero wait) left queued: withdrawn,
        or released if it was granted in between, or gone. Transient
        failures leave it to a background release."""
        request_id = self._ids()
        try:
            self._call("Release", _common.release_request(
                self.client_id, lock, request_id, session_id))
        except LeasekeeperError as error:
            if is_transient(error):
                with self._cv:
                    self._book.queue_release(lock, session_id, request_id,
                                             monotonic())
                    self._cv.notify_all()

    def _flush_release_of(self, lock: str) -> None:
        """Finishes any background release of `lock` (LeaseBook rule 5)."""
        with self._cv:
            while True:
                if lock not in self._book.pending_releases:
                    return
                release = self._book.claim_release(lock)
                if release is not None:
                    break
                self._cv.wait(0.05)
        error: Optional[LeasekeeperError] = None
        try:
            self._call("Release", _common.release_request(
                self.client_id, lock, release.request_id, release.session_id))
        except LeasekeeperError as failure:
            error = failure
        with self._cv:
            self._book.release_done(release, error, monotonic())
            self._cv.notify_all()
        if error is not None and is_transient(error):
            raise Unavailable(
                f"could not release this client's previous lease on {lock} "
                f"first: {error.message}", code=error.code)

    def _acquire(self, name: str, ttl: float, wait: Optional[float],
                 shared: bool, holder_label: Optional[str],
                 stop: Optional[threading.Event],
                 try_only: bool,
                 semaphore: Optional[int] = None) -> Optional[Lease]:
        args = _common.check_lock_args(name, ttl, wait, shared, holder_label,
                                       self.holder_label, semaphore)
        if stop is not None and not isinstance(stop, threading.Event):
            raise TypeError("stop must be a threading.Event")
        with self._cv:
            if self._closed:
                raise Unavailable("the client is closed")
            held = self._book.by_lock.get(args.lock)
            if held is not None:
                raise ClientBusy(f"client busy: this client already holds "
                                 f"{args.lock} (token {held.token})")
        attempts = AcquireAttempts(
            self.client_id, args.lock, args.ttl, args.wait, args.shared,
            args.label, try_only, self.call_timeout,
            self._session.ensure_open(self.call_timeout), self._ids,
            monotonic(), args.semaphore)
        while True:
            self._flush_release_of(args.lock)
            request, timeout = attempts.request(monotonic())
            try:
                response = self._unary("Acquire", request, timeout, stop,
                                       interruptible=True)
                step = attempts.on_response(response)
            except LeasekeeperError as error:
                if stop is not None and stop.is_set():
                    raise LeasekeeperError(
                        f"acquire of {args.lock} cancelled",
                        code=grpc.StatusCode.CANCELLED) from None
                step = attempts.on_error(error, monotonic())
            if step.step == Step.GRANTED:
                return self._register(args.lock, step.token, args.shared,
                                      args.ttl, attempts.session_id,
                                      step.counted_from, step.lease_left)
            if step.step == Step.BUSY:
                self._withdraw(args.lock, attempts.session_id)
                if step.error is None:
                    return None
                raise step.error
            if step.step == Step.RETRY:
                if step.delay > 0:
                    (stop or threading.Event()).wait(step.delay)
                continue
            if step.step == Step.REOPEN:
                self._end_all(EndReason.SESSION_LOST, attempts.session_id)
                self._session.abandon(attempts.session_id)
                attempts.reopened(self._session.ensure_open(self.call_timeout))
                continue
            if step.step == Step.ADOPT:
                adopted = self._adopt(attempts, args.shared, args.ttl)
                if adopted is not None:
                    return adopted
            if step.step == Step.DEADLOCK:
                self._end_all(EndReason.DEADLOCK_VICTIM, None)
            assert step.error is not None
            raise step.error

    def _register(self, lock: str, token: int, shared: bool, ttl: float,
                  session_id: str, counted_from: float,
                  lease_left: float) -> Lease:
        with self._cv:
            if self._closed:
                raise LeasekeeperError(
                    "the client closed during the acquire",
                    code=grpc.StatusCode.CANCELLED)
            state = self._book.register(lock, token, shared, ttl, session_id,
                                        counted_from, lease_left, monotonic(),
                                        threading.Event())
            self._nudge_locked(0.0 if state.end_reason is not None else
                               state.timer.next_attempt_at)
        self._deliver()
        return Lease(self, state)

    def _adopt(self, attempts: AcquireAttempts, shared: bool,
               ttl: float) -> Optional[Lease]:
        """A lost grant answer: the server says CLIENT_BUSY because this
        client already holds the lock. Adopts that lease by renewing it."""
        sent_at = monotonic()
        try:
            response = self._unary("Renew", attempts.adopt_request(),
                                   self.call_timeout)
        except LeasekeeperError:
            return None
        return self._register(attempts.lock, response.token, shared, ttl,
                              attempts.session_id, sent_at,
                              response.ttl_ms / 1000)

    # -- internals: lease operations --------------------------------------------

    def _end_reason(self, state: LeaseState) -> Optional[EndReason]:
        with self._cv:
            return state.end_reason

    def _time_left(self, state: LeaseState) -> float:
        with self._cv:
            if state.end_reason is not None:
                return 0.0
            return max(0.0, state.timer.deadline - monotonic())

    def _check(self, state: LeaseState) -> Optional[EndReason]:
        with self._cv:
            self._book.expire_if_due(state, monotonic())
            reason = state.end_reason
        self._deliver()
        return reason

    def _renew(self, state: LeaseState) -> None:
        with self._cv:
            now = monotonic()
            self._book.expire_if_due(state, now)
            ended = state.end_reason is not None
            budget = min(self.call_timeout, state.timer.deadline - now)
        if ended:
            self._deliver()
            raise ended_error(state)
        sent_at = monotonic()
        try:
            response = self._unary("Renew", renew_request(
                self.client_id, state.lock, state.ttl, self._ids(),
                state.session_id), max(0.001, budget))
            outcome: int | LeasekeeperError = response.token
        except LeasekeeperError as error:
            outcome = error
        with self._cv:
            self._book.apply_renew(state, sent_at, outcome, False, monotonic())
            ended = state.end_reason is not None
        self._deliver()
        if ended:
            raise ended_error(state)
        if isinstance(outcome, LeasekeeperError):
            raise outcome

    def _release(self, state: LeaseState) -> None:
        with self._cv:
            if state.end_reason is not None:
                raise ended_error(state)
            state.releasing = True
        request_id = self._ids()
        error: Optional[LeasekeeperError] = None
        try:
            self._call("Release", _common.release_request(
                self.client_id, state.lock, request_id, state.session_id))
        except LeasekeeperError as failure:
            error = failure
        with self._cv:
            self._book.finish_release(state, error, request_id, monotonic())
            if state.lock in self._book.pending_releases:
                self._nudge_locked(0.0)
        self._deliver()
        if error is None:
            return
        if ends_lease(error):
            raise ended_error(state) from error
        raise error

    def _write(self, state: LeaseState, key: str, value: bytes | str) -> None:
        key = _common.check_str("key", key)
        data = _common.check_value(value)
        if self._check(state) is not None:
            raise not_writing_error(state)
        self._call("Write", _common.write_request(
            state.lock, key, data, state.token, self.client_id))

    def _delete(self, state: LeaseState, key: str) -> bool:
        key = _common.check_str("key", key)
        if self._check(state) is not None:
            raise not_writing_error(state, "deleting")
        response = self._call("Delete", _common.delete_request(
            state.lock, key, state.token, self.client_id))
        return bool(response.existed)

    def _end_all(self, reason: EndReason, session_id: Optional[str]) -> None:
        with self._cv:
            self._book.end_all(reason, monotonic(), session_id)
        self._deliver()

    def _deliver(self) -> None:
        """Signals the leases that ended (outside the lock)."""
        with self._cv:
            ended = self._book.take_ended()
        for state in ended:
            state.lost.set()

    # -- the renewal thread -------------------------------------------------------

    def _nudge_locked(self, due_at: float) -> None:
        """Wakes the renewal thread if something is due before it would
        wake anyway (a lock and release per batch need not wake it)."""
        if due_at < self._planned_wake:
            self._cv.notify_all()

    def _maintain(self) -> None:
        while True:
            with self._cv:
                if self._closed:
                    return
                now = monotonic()
                plan = self._book.plan(now, self._session.connected_id())
                if plan.empty():
                    self._planned_wake = plan.wake_at
                    self._cv.wait(max(0.0, plan.wake_at - now))
                    self._planned_wake = 0.0
                ended = self._book.take_ended()
            for state in ended:
                state.lost.set()
            if not plan.empty():
                self._perform(plan)

    def _perform(self, plan: Plan) -> None:
        if plan.interrupt_session:
            self._session.interrupt()
        if plan.keepalive_sequence is not None:
            if not self._session.send_keepalive(plan.keepalive_sequence):
                with self._cv:
                    self._book.keepalive_failed(plan.keepalive_sequence,
                                                monotonic())
        for state in plan.renew_by_call:
            self._start_renew_call(state)
        for release in plan.releases:
            self._start_background_release(release)

    def _start_async(self, method: str, request: object, timeout: float,
                     done: Callable[[Optional[object],
                                     Optional[LeasekeeperError]], None]) -> None:
        """A call whose answer `done` gets (under the lock) on a gRPC
        thread; the renewal thread never blocks on an answer."""
        index, connection = self._endpoints.current()
        with self._cv:
            if self._closed:
                done(None, Unavailable("the client is closed"))
                return
            future = getattr(connection.stub, method).future(request,
                                                             timeout=timeout)
            self._calls.add(future)

        def finished(call: grpc.Future) -> None:
            response: Optional[object] = None
            error: Optional[LeasekeeperError] = None
            try:
                response = call.result()
            except grpc.RpcError as rpc_error:
                error = from_rpc_error(rpc_error)
                if error.code == grpc.StatusCode.UNAVAILABLE:
                    self._endpoints.failed(index, error.leader)
            except grpc.FutureCancelledError:
                error = Unavailable("cancelled at close",
                                    code=grpc.StatusCode.CANCELLED)
            with self._cv:
                self._calls.discard(call)
                done(response, error)
                self._cv.notify_all()
            self._deliver()

        future.add_done_callback(finished)

    def _start_renew_call(self, state: LeaseState) -> None:
        sent_at = monotonic()

        def done(response: Optional[object],
                 error: Optional[LeasekeeperError]) -> None:
            outcome: int | LeasekeeperError = (
                error if error is not None else
                response.token)  # type: ignore[union-attr]
            self._book.apply_renew(state, sent_at, outcome, True, monotonic())

        with self._cv:
            budget = min(self.call_timeout,
                         max(0.001, state.timer.deadline - sent_at))
        self._start_async("Renew", renew_request(
            self.client_id, state.lock, state.ttl, self._ids(),
            state.session_id), budget, done)

    def _start_background_release(self, release: PendingRelease) -> None:
        def done(response: Optional[object],
                 error: Optional[LeasekeeperError]) -> None:
            self._book.release_done(release, error, monotonic())

        self._start_async("Release", _common.release_request(
            self.client_id, release.lock, release.request_id,
            release.session_id), self.call_timeout, done)

    # -- SessionListener (the session thread) ---------------------------------------

    def on_session_opened(self, session_id: str, resumed: bool,
                          grace: float) -> None:
        with self._cv:
            self._book.on_session_opened(resumed, grace, monotonic())
            self._cv.notify_all()

    def on_keepalive_ack(self, sequence: int, renewed_leases: int) -> None:
        with self._cv:
            self._book.on_keepalive_ack(sequence, renewed_leases, monotonic())
            self._cv.notify_all()

    def on_notice(self, notice: pb.LockNotice) -> None:
        with self._cv:
            self._book.on_notice(notice.kind, notice.lock, notice.token,
                                 monotonic())
            self._cv.notify_all()
        self._deliver()

    def on_session_interrupted(self) -> None:
        with self._cv:
            self._book.on_session_interrupted(monotonic())
            self._cv.notify_all()

    def on_session_lost(self, session_id: str) -> None:
        with self._cv:
            self._book.on_session_lost(session_id, monotonic())
            self._cv.notify_all()
        self._deliver()
