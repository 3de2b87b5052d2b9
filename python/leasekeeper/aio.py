"""leasekeeper for asyncio, on grpc.aio: the API of leasekeeper.Client with
coroutines.

    async with leasekeeper.aio.Client("127.0.0.1:7233") as client:
        async with client.lock("exports/daily", ttl=30, wait=60) as lease:
            await lease.write("cursor", b"42")

The rules are those of the threaded Client (leasekeeper/client.py), taken
from the same LeaseBook and AcquireAttempts: the same session keepalive
every third of the ttl, the same deadline counted from the send, the same
end reasons. What differs:
 - the session stream and the renewals run as tasks of the event loop the
   Client was first used on; nothing runs on other threads;
 - lease.lost is an asyncio.Event;
 - lock() returns a LockRequest, a coroutine (`await client.lock(...)` and
   `asyncio.create_task(client.lock(...))` give the Lease) that is also an
   async context manager;
 - cancelling the task that waits in lock() cancels the Acquire call, which
   withdraws the request at the server;
 - run_as_leader takes an async work(lease, term) and an asyncio.Event stop.

Thread-safety: use a Client from its event loop only.
"""

from __future__ import annotations

import asyncio
import contextlib
from types import TracebackType
from typing import (Any, Awaitable, Callable, Coroutine, Generator, Optional,
                    TypeVar)

import grpc
import grpc.aio

from leasekeeper import _common
from leasekeeper._acquire import AcquireAttempts, Step, renew_request
from leasekeeper._book import EndReason, LeaseBook, LeaseState, PendingRelease, Plan
from leasekeeper._lease_base import (LeaseBase, ended_error, ends_lease,
                                     not_writing_error)
from leasekeeper._retry import CallRetry
from leasekeeper._common import (ClientStatus, Endpoints, KeyPage, LockInfo,
                                 LockSummary, ReleasedLease, TlsFiles)
from leasekeeper.errors import (ClientBusy, LeasekeeperError, LeaseLost,
                                Unavailable, from_rpc_error, is_transient)
from leasekeeper.leader import (TermEnd, check_leader_args, term_end,
                                worth_contending_again)
from leasekeeper.timer import monotonic
from leasekeeper.v1 import lock_service_pb2 as pb

T = TypeVar("T")

__all__ = ["Client", "Lease", "LockRequest", "run_as_leader"]


async def _wait_event(event: asyncio.Event, timeout: float) -> bool:
    """Waits up to `timeout` seconds for `event`; whether it is set. (Not
    asyncio.wait_for, which in Python 3.11 can swallow a cancellation that
    races with the wait's end.)"""
    if event.is_set():
        return True
    waiter = asyncio.ensure_future(event.wait())
    try:
        await asyncio.wait({waiter}, timeout=max(0.0, timeout))
    finally:
        waiter.cancel()
    return event.is_set()


class Lease(LeaseBase):
    """One held lock (see leasekeeper.Lease for the guarantees)."""

    def __init__(self, client: "Client", state: LeaseState) -> None:
        super().__init__(state)
        self._client = client
        self.lost: asyncio.Event = state.lost  # type: ignore[assignment]

    @property
    def end_reason(self) -> Optional[EndReason]:
        return self._state.end_reason

    def time_left(self) -> float:
        if self._state.end_reason is not None:
            return 0.0
        return max(0.0, self._state.timer.deadline - monotonic())

    def check(self) -> None:
        """Raises LeaseLost if the lease has ended (or its deadline
        passed)."""
        self._client._book.expire_if_due(self._state, monotonic())
        self._client._deliver()
        if self._state.end_reason is not None:
            raise ended_error(self._state)

    async def renew(self) -> None:
        await self._client._renew(self._state)

    async def release(self) -> None:
        await self._client._release(self._state)

    async def write(self, key: str, value: bytes | str) -> None:
        """Fenced and holder-checked write; see
        leasekeeper.Lease.write."""
        await self._client._write(self._state, key, value)

    async def delete(self, key: str) -> bool:
        """Fenced and holder-checked delete; see
        leasekeeper.Lease.delete."""
        return await self._client._delete(self._state, key)

    async def __aenter__(self) -> "Lease":
        return self

    async def __aexit__(self, exc_type: Optional[type[BaseException]],
                        exc: Optional[BaseException],
                        traceback: Optional[TracebackType]) -> None:
        reason = self._state.end_reason
        if reason is None:
            try:
                await self._client._release(self._state)
                return
            except LeaseLost as lost:
                reason = lost.end_reason
            except Unavailable:
                if exc_type is None:
                    raise
                return
        self._raise_if_uncovered(exc_type is not None, reason)


class LockRequest(Coroutine[Any, Any, Lease]):
    """What Client.lock returns: a coroutine that gives the Lease, so
    `await client.lock(...)` and `asyncio.create_task(client.lock(...))`
    both work, and an async context manager, `async with client.lock(...)
    as lease:`, which releases the lease at the block's end. Nothing is
    sent until it is awaited, scheduled or entered; one LockRequest
    acquires once (awaiting it again raises RuntimeError, as any coroutine
    does)."""

    def __init__(self, acquire: Callable[[], Awaitable[Optional[Lease]]]
                 ) -> None:
        self._acquire = acquire
        self._coroutine: Optional[Coroutine[Any, Any, Lease]] = None
        self._lease: Optional[Lease] = None

    async def _get(self) -> Lease:
        lease = await self._acquire()
        assert lease is not None
        return lease

    def _started(self) -> Coroutine[Any, Any, Lease]:
        # Made on first use, so a LockRequest never awaited leaves no
        # "coroutine was never awaited" warning behind.
        if self._coroutine is None:
            self._coroutine = self._get()
        return self._coroutine

    def send(self, value: Any) -> Any:
        return self._started().send(value)

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:
        if val is None and tb is None:
            return self._started().throw(typ)
        return self._started().throw(typ, val, tb)

    def close(self) -> None:
        if self._coroutine is not None:
            self._coroutine.close()

    def __await__(self) -> Generator[Any, None, Lease]:
        return self._started().__await__()

    async def __aenter__(self) -> Lease:
        self._lease = await self
        return self._lease

    async def __aexit__(self, exc_type: Optional[type[BaseException]],
                        exc: Optional[BaseException],
                        traceback: Optional[TracebackType]) -> None:
        assert self._lease is not None
        await self._lease.__aexit__(exc_type, exc, traceback)


class _Session:
    """The session stream as a task (the lifecycle of leasekeeper/_session.py:
    open, resume after a drop until the server says SESSION_ENDED, close)."""

    def __init__(self, client: "Client") -> None:
        self._client = client
        self.id = ""
        self.connected = False
        self._call: Optional[grpc.aio.StreamStreamCall] = None
        self._write_lock = asyncio.Lock()
        self._task: Optional[asyncio.Task[None]] = None
        self._changed = asyncio.Event()
        self._last_error: Optional[LeasekeeperError] = None
        self._closing = False
        self._lost = False
        self._suspended_until = 0.0

    async def ensure_open(self, timeout: float) -> str:
        if self.id:
            return self.id
        if self._task is None or self._task.done():
            self._closing = False
            self._task = asyncio.get_running_loop().create_task(self._run())
        give_up_at = monotonic() + timeout
        while not self.id:
            if self._last_error is not None and not is_transient(
                    self._last_error):
                error, self._last_error = self._last_error, None
                raise error
            left = give_up_at - monotonic()
            if left <= 0:
                raise self._last_error or Unavailable(
                    "no session opened within the call timeout",
                    code=grpc.StatusCode.UNAVAILABLE)
            self._changed.clear()
            await _wait_event(self._changed, left)
        return self.id

    def connected_id(self) -> Optional[str]:
        return self.id if self.connected else None

    async def send(self, request: pb.SessionRequest) -> bool:
        call = self._call
        if call is None or not self.connected:
            return False
        try:
            async with self._write_lock:
                await call.write(request)
            return True
        except (grpc.RpcError, asyncio.InvalidStateError):
            return False

    async def close(self, timeout: float) -> bool:
        task = self._task
        if task is None or task.done() or not self.connected:
            return False
        self._closing = True
        if not await self.send(pb.SessionRequest(close=pb.CloseSession())):
            return False
        await asyncio.wait({task}, timeout=timeout)
        return task.done() and self._last_error is None

    def interrupt(self) -> None:
        if self._call is not None:
            self._call.cancel()

    def abandon(self, session_id: str) -> None:
        if self.id == session_id:
            self.id = ""
            self.interrupt()

    def suspend_for_testing(self, duration: float) -> None:
        self._suspended_until = monotonic() + duration
        self.interrupt()

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _run(self) -> None:
        delay = 0.1
        while True:
            wait = self._suspended_until - monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            resume = self.id
            opened = await self._one_stream(resume)
            if self._closing or self._lost:
                # A lost session is replaced by the next ensure_open only.
                self._lost = False
                return
            if not self.id and not self._client._book.leases and not opened:
                # A first open that failed for good: ensure_open reports it.
                if self._last_error is not None and not is_transient(
                        self._last_error):
                    return
            if opened:
                delay = 0.1
            else:
                await asyncio.sleep(delay)
                delay = min(delay * 2, 1.0)

    async def _one_stream(self, resume_id: str) -> bool:
        index, connection = self._client._endpoints.current()
        call = connection.stub.Session()
        self._call = call
        opened = False
        error: Optional[LeasekeeperError] = None
        book = self._client._book
        try:
            await call.write(pb.SessionRequest(open=pb.OpenSession(
                client_id=self._client.client_id,
                resume_session_id=resume_id)))
            while True:
                response = await call.read()
                if response is grpc.aio.EOF:
                    break
                kind = response.WhichOneof("kind")
                now = monotonic()
                if kind == "opened":
                    opened = True
                    self.id = response.opened.session_id
                    self.connected = True
                    self._last_error = None
                    book.on_session_opened(response.opened.resumed,
                                           response.opened.grace_ms / 1000,
                                           now)
                    self._changed.set()
                elif kind == "keepalive_ack":
                    book.on_keepalive_ack(
                        response.keepalive_ack.sequence,
                        response.keepalive_ack.renewed_leases, now)
                elif kind == "notice":
                    book.on_notice(response.notice.kind, response.notice.lock,
                                   response.notice.token, now)
                self._client._changed()
        except grpc.RpcError as rpc_error:
            error = from_rpc_error(rpc_error)
        except asyncio.CancelledError:
            call.cancel()
            self.connected = False
            raise
        self._call = None
        self.connected = False
        now = monotonic()
        if error is not None and error.code == grpc.StatusCode.UNAVAILABLE:
            self._client._endpoints.failed(index, error.leader)
        if self._closing:
            self.id = ""
            self._last_error = error
        elif error is not None and error.reason == "SESSION_ENDED":
            lost = self.id or resume_id
            self.id = ""
            self._lost = True
            book.on_session_lost(lost, now)
        elif self.id:
            book.on_session_interrupted(now)
        else:
            self._last_error = error or Unavailable(
                "the session stream ended before it opened",
                code=grpc.StatusCode.UNAVAILABLE)
            if resume_id:
                book.on_session_lost(resume_id, now)
        self._changed.set()
        self._client._changed()
        return opened


class Client:
    """An asyncio leasekeeper client; the arguments of leasekeeper.Client.
    No I/O (and no task) starts until the first call."""

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

        def make_channel(target: str) -> grpc.aio.Channel:
            if credentials is None:
                return grpc.aio.insecure_channel(target, options=options)
            return grpc.aio.secure_channel(target, credentials,
                                           options=options)

        self._endpoints = Endpoints(config.targets, make_channel)
        self._ids = _common.RequestIdSource()
        self._book = LeaseBook(self.call_timeout,
                               config.idle_keepalive_interval, monotonic(),
                               self._ids)
        self._session = _Session(self)
        self._wake: Optional[asyncio.Event] = None
        self._maintenance: Optional[asyncio.Task[None]] = None
        self._background: set[asyncio.Task[None]] = set()
        self._closed = False

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, exc_type: Optional[type[BaseException]],
                        exc: Optional[BaseException],
                        traceback: Optional[TracebackType]) -> None:
        await self.close()

    async def close(self) -> None:
        """Releases every lease still held, closes the session and the
        channels. Idempotent."""
        if self._closed:
            return
        self._closed = True
        live, releases = self._book.begin_close()
        if self._maintenance is not None:
            self._changed()
            await self._maintenance
        if not await self._session.close(self.call_timeout):
            for lock, session_id, request_id in releases:
                with contextlib.suppress(LeasekeeperError):
                    await self._unary("Release", _common.release_request(
                        self.client_id, lock, request_id, session_id),
                        self.call_timeout)
        self._book.finish_close(live, monotonic())
        for task in list(self._background):
            task.cancel()
        self._deliver()
        await self._session.stop()
        for channel in self._endpoints.take_channels():
            await channel.close()

    # -- locks ---------------------------------------------------------------

    def lock(self, name: str, ttl: float = 30.0, wait: Optional[float] = 60.0,
             shared: bool = False, *, holder_label: Optional[str] = None,
             stop: Optional[asyncio.Event] = None,
             semaphore: Optional[int] = None) -> LockRequest:
        """As leasekeeper.Client.lock; bad arguments raise here, before
        anything is awaited."""
        args = _common.check_lock_args(name, ttl, wait, shared, holder_label,
                                       self.holder_label, semaphore)
        if stop is not None and not isinstance(stop, asyncio.Event):
            raise TypeError("stop must be an asyncio.Event")
        return LockRequest(lambda: self._acquire(args, stop, try_only=False))

    async def try_lock(self, name: str, ttl: float = 30.0,
                       shared: bool = False, *,
                       holder_label: Optional[str] = None,
                       semaphore: Optional[int] = None) -> Optional[Lease]:
        """As leasekeeper.Client.try_lock."""
        args = _common.check_lock_args(name, ttl, 0.0, shared, holder_label,
                                       self.holder_label, semaphore)
        return await self._acquire(args, None, try_only=True)

    async def run_as_leader(self, name: str, ttl: float,
                            work: Callable[[Lease, asyncio.Event],
                                           Awaitable[T]],
                            stop: asyncio.Event, *,
                            retry_delay: Optional[float] = None,
                            on_term_start: Optional[
                                Callable[[Lease], None]] = None,
                            on_term_end: Optional[
                                Callable[[Lease, TermEnd], None]] = None,
                            on_contention_error: Optional[
                                Callable[[LeasekeeperError], None]] = None,
                            ) -> Optional[T]:
        """As leasekeeper.Client.run_as_leader, with an async work."""
        return await run_as_leader(
            self, name, ttl, work, stop, retry_delay=retry_delay,
            on_term_start=on_term_start, on_term_end=on_term_end,
            on_contention_error=on_contention_error)

    async def read(self, lock: str, key: str) -> Optional[bytes]:
        request = pb.ReadRequest(lock=_common.check_str("lock", lock),
                                 key=_common.check_str("key", key))
        response = await self._call("Read", request)
        return bytes(response.value) if response.found else None

    async def list_keys(self, lock: str, after: str = "",
                        limit: int = 0) -> KeyPage:
        """As leasekeeper.Client.list_keys."""
        request = _common.list_keys_request(lock, after, limit)
        return KeyPage.of(await self._call("ListKeys", request))

    async def keys(self, lock: str) -> list[str]:
        """As leasekeeper.Client.keys."""
        keys: list[str] = []
        after: Optional[str] = ""
        while after is not None:
            page = await self.list_keys(lock, after)
            keys.extend(page.keys)
            after = page.next_after
        return keys

    async def inspect(self, lock: str) -> LockInfo:
        pages = _common.InspectPages(lock)
        while True:
            info = pages.add(await self._call("Inspect", pages.request))
            if info is not None:
                return info

    async def status(self, client_id: Optional[str] = None) -> ClientStatus:
        who = self.client_id if client_id is None else _common.check_str(
            "client_id", client_id)
        pages = _common.StatusPages(who)
        while True:
            status = pages.add(await self._call("Status", pages.request))
            if status is not None:
                return status

    async def list_locks(self, prefix: str = "",
                         page_size: int = 0) -> list[LockSummary]:
        """As leasekeeper.Client.list_locks: every matching lock, all
        pages."""
        _common.check_page(prefix, page_size)
        locks: list[LockSummary] = []
        token = ""
        while True:
            response = await self._call("ListLocks", pb.ListLocksRequest(
                prefix=prefix, page_size=page_size, page_token=token))
            locks.extend(LockSummary.of(s) for s in response.locks)
            token = response.next_page_token
            if not token:
                return locks

    async def force_release(self, lock: str, client_id: str = "",
                            reason: str = "") -> list[ReleasedLease]:
        request = _common.force_release_request(lock, client_id, reason)
        return ReleasedLease.all_of(await self._call(
            "ForceRelease", request, repeatable=False))

    def pause_renewals_for_testing(self, paused: bool) -> None:
        self._book.paused = paused
        self._changed()

    def suspend_session_for_testing(self, duration: float) -> None:
        self._session.suspend_for_testing(duration)

    # -- internals -------------------------------------------------------------

    async def _unary(self, method: str, request: object,
                     timeout: float) -> Any:
        index, connection = self._endpoints.current()
        try:
            return await getattr(connection.stub, method)(request,
                                                          timeout=timeout)
        except grpc.RpcError as rpc_error:
            error = from_rpc_error(rpc_error)
            if error.code == grpc.StatusCode.UNAVAILABLE:
                self._endpoints.failed(index, error.leader)
            raise error from None

    async def _call(self, method: str, request: object,
                    repeatable: bool = True) -> Any:
        """As leasekeeper.Client._call: a one-shot call within one call
        timeout, over a failover."""
        retry = CallRetry(monotonic() + self.call_timeout, repeatable,
                          self._endpoints.count)
        while True:
            target = self._endpoints.target
            try:
                return await self._unary(
                    method, request, max(0.001, retry.deadline - monotonic()))
            except LeasekeeperError as error:
                at = retry.after(error, target, monotonic())
                if at is None:
                    assert retry.error is not None
                    raise retry.error from None
            await asyncio.sleep(max(0.0, at - monotonic()))

    async def _withdraw(self, lock: str, session_id: str) -> None:
        request_id = self._ids()
        try:
            await self._call("Release", _common.release_request(
                self.client_id, lock, request_id, session_id))
        except LeasekeeperError as error:
            if is_transient(error):
                self._book.queue_release(lock, session_id, request_id,
                                         monotonic())
                self._changed()

    async def _flush_release_of(self, lock: str) -> None:
        while lock in self._book.pending_releases:
            release = self._book.claim_release(lock)
            if release is None:
                await asyncio.sleep(0.05)  # the renewal task has it in flight
                continue
            error: Optional[LeasekeeperError] = None
            try:
                await self._call("Release", _common.release_request(
                    self.client_id, lock, release.request_id,
                    release.session_id))
            except LeasekeeperError as failure:
                error = failure
            self._book.release_done(release, error, monotonic())
            if error is not None and is_transient(error):
                raise Unavailable(
                    f"could not release this client's previous lease on "
                    f"{lock} first: {error.message}", code=error.code)

    async def _acquire(self, args: _common.LockArgs,
                       stop: Optional[asyncio.Event],
                       try_only: bool) -> Optional[Lease]:
        if self._closed:
            raise Unavailable("the client is closed")
        self._start_maintenance()
        held = self._book.by_lock.get(args.lock)
        if held is not None:
            raise ClientBusy(f"client busy: this client already holds "
                             f"{args.lock} (token {held.token})")
        attempts = AcquireAttempts(
            self.client_id, args.lock, args.ttl, args.wait, args.shared,
            args.label, try_only, self.call_timeout,
            await self._session.ensure_open(self.call_timeout), self._ids,
            monotonic(), args.semaphore)
        while True:
            await self._flush_release_of(args.lock)
            request, timeout = attempts.request(monotonic())
            try:
                response = await self._until_stopped(
                    self._unary("Acquire", request, timeout), stop)
                step = attempts.on_response(response)
            except LeasekeeperError as error:
                step = attempts.on_error(error, monotonic())
            if step.step == Step.GRANTED:
                return self._register(args, attempts.session_id, step.token,
                                      step.counted_from, step.lease_left)
            if step.step == Step.BUSY:
                await self._withdraw(args.lock, attempts.session_id)
                if step.error is None:
                    return None
                raise step.error
            if step.step == Step.RETRY:
                if step.delay > 0:
                    await self._until_stopped(asyncio.sleep(step.delay), stop)
                continue
            if step.step == Step.REOPEN:
                self._book.end_all(EndReason.SESSION_LOST, monotonic(),
                                   attempts.session_id)
                self._deliver()
                self._session.abandon(attempts.session_id)
                attempts.reopened(
                    await self._session.ensure_open(self.call_timeout))
                continue
            if step.step == Step.ADOPT:
                sent_at = monotonic()
                with contextlib.suppress(LeasekeeperError):
                    renewed = await self._unary(
                        "Renew", attempts.adopt_request(), self.call_timeout)
                    return self._register(args, attempts.session_id,
                                          renewed.token, sent_at,
                                          renewed.ttl_ms / 1000)
            if step.step == Step.DEADLOCK:
                self._book.end_all(EndReason.DEADLOCK_VICTIM, monotonic())
                self._deliver()
            assert step.error is not None
            raise step.error

    async def _until_stopped(self, work: Awaitable[T],
                             stop: Optional[asyncio.Event]) -> T:
        """Awaits `work`, cancelling it (which withdraws an Acquire) and
        raising CANCELLED once `stop` is set."""
        if stop is None:
            return await work
        task = asyncio.ensure_future(work)
        stopped = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait({task, stopped},
                               return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopped.cancel()
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
            raise LeasekeeperError("acquire cancelled",
                                   code=grpc.StatusCode.CANCELLED)
        return task.result()

    def _register(self, args: _common.LockArgs, session_id: str, token: int,
                  counted_from: float, lease_left: float) -> Lease:
        state = self._book.register(args.lock, token, args.shared, args.ttl,
                                    session_id, counted_from, lease_left,
                                    monotonic(), asyncio.Event())
        self._deliver()
        self._changed()
        return Lease(self, state)

    async def _renew(self, state: LeaseState) -> None:
        now = monotonic()
        self._book.expire_if_due(state, now)
        self._deliver()
        if state.end_reason is not None:
            raise ended_error(state)
        budget = min(self.call_timeout, state.timer.deadline - now)
        outcome: int | LeasekeeperError
        try:
            response = await self._unary("Renew", renew_request(
                self.client_id, state.lock, state.ttl, self._ids(),
                state.session_id), max(0.001, budget))
            outcome = response.token
        except LeasekeeperError as error:
            outcome = error
        self._book.apply_renew(state, now, outcome, False, monotonic())
        self._deliver()
        if state.end_reason is not None:
            raise ended_error(state)
        if isinstance(outcome, LeasekeeperError):
            raise outcome

    async def _release(self, state: LeaseState) -> None:
        if state.end_reason is not None:
            raise ended_error(state)
        state.releasing = True
        request_id = self._ids()
        error: Optional[LeasekeeperError] = None
        try:
            await self._call("Release", _common.release_request(
                self.client_id, state.lock, request_id, state.session_id))
        except LeasekeeperError as failure:
            error = failure
        self._book.finish_release(state, error, request_id, monotonic())
        self._deliver()
        self._changed()
        if error is None:
            return
        if ends_lease(error):
            raise ended_error(state) from error
        raise error

    async def _write(self, state: LeaseState, key: str,
                     value: bytes | str) -> None:
        key = _common.check_str("key", key)
        data = _common.check_value(value)
        self._book.expire_if_due(state, monotonic())
        self._deliver()
        if state.end_reason is not None:
            raise not_writing_error(state)
        await self._call("Write", _common.write_request(
            state.lock, key, data, state.token, self.client_id))

    async def _delete(self, state: LeaseState, key: str) -> bool:
        key = _common.check_str("key", key)
        self._book.expire_if_due(state, monotonic())
        self._deliver()
        if state.end_reason is not None:
            raise not_writing_error(state, "deleting")
        response = await self._call("Delete", _common.delete_request(
            state.lock, key, state.token, self.client_id))
        return bool(response.existed)

    def _deliver(self) -> None:
        for state in self._book.take_ended():
            state.lost.set()

    def _changed(self) -> None:
        if self._wake is not None:
            self._wake.set()

    # -- the renewal task ------------------------------------------------------------

    def _start_maintenance(self) -> None:
        if self._maintenance is None:
            self._wake = asyncio.Event()
            self._maintenance = asyncio.get_running_loop().create_task(
                self._maintain())

    async def _maintain(self) -> None:
        assert self._wake is not None
        while not self._closed:
            now = monotonic()
            plan = self._book.plan(now, self._session.connected_id())
            self._deliver()
            if plan.empty():
                self._wake.clear()
                await _wait_event(self._wake, plan.wake_at - now)
                continue
            await self._perform(plan)

    async def _perform(self, plan: Plan) -> None:
        if plan.interrupt_session:
            self._session.interrupt()
        if plan.keepalive_sequence is not None:
            sent = await self._session.send(pb.SessionRequest(
                keepalive=pb.Keepalive(sequence=plan.keepalive_sequence)))
            if not sent:
                self._book.keepalive_failed(plan.keepalive_sequence,
                                            monotonic())
        for state in plan.renew_by_call:
            self._spawn(self._background_renew(state))
        for release in plan.releases:
            self._spawn(self._background_release(release))

    def _spawn(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _background_renew(self, state: LeaseState) -> None:
        sent_at = monotonic()
        outcome: int | LeasekeeperError
        try:
            response = await self._unary("Renew", renew_request(
                self.client_id, state.lock, state.ttl, self._ids(),
                state.session_id),
                min(self.call_timeout,
                    max(0.001, state.timer.deadline - sent_at)))
            outcome = response.token
        except LeasekeeperError as error:
            outcome = error
        self._book.apply_renew(state, sent_at, outcome, True, monotonic())
        self._deliver()
        self._changed()

    async def _background_release(self, release: PendingRelease) -> None:
        error: Optional[LeasekeeperError] = None
        try:
            await self._unary("Release", _common.release_request(
                self.client_id, release.lock, release.request_id,
                release.session_id), self.call_timeout)
        except LeasekeeperError as failure:
            error = failure
        self._book.release_done(release, error, monotonic())
        self._changed()


async def run_as_leader(client: Client, name: str, ttl: float,
                        work: Callable[[Lease, asyncio.Event], Awaitable[T]],
                        stop: asyncio.Event, *,
                        retry_delay: Optional[float] = None,
                        on_term_start: Optional[Callable[[Lease], None]] = None,
                        on_term_end: Optional[Callable[[Lease, TermEnd],
                                                       None]] = None,
                        on_contention_error: Optional[
                            Callable[[LeasekeeperError], None]] = None,
                        ) -> Optional[T]:
    """leasekeeper.leader.run_as_leader for asyncio: the same terms; `term`
    is an asyncio.Event set when the lease is lost or `stop` is set."""
    ttl, delay = check_leader_args(name, ttl, work, stop, asyncio.Event,
                                   retry_delay)
    while not stop.is_set():
        try:
            lease = await client.lock(name, ttl=ttl, wait=None, stop=stop)
        except LeasekeeperError as error:
            if stop.is_set():
                return None
            if not worth_contending_again(error):
                raise
            if on_contention_error is not None:
                on_contention_error(error)
            await _wait_event(stop, delay)
            continue
        if not lease.held:
            continue
        term = asyncio.Event()

        async def watch(event: asyncio.Event) -> None:
            await event.wait()
            term.set()

        watchers = [asyncio.ensure_future(watch(lease.lost)),
                    asyncio.ensure_future(watch(stop))]
        result: Optional[T] = None
        failure: Optional[Exception] = None
        try:
            if on_term_start is not None:
                on_term_start(lease)
            result = await work(lease, term)
        except Exception as raised:  # reported after the release
            failure = raised
        finally:
            for watcher in watchers:
                watcher.cancel()
        end = term_end(stop.is_set(), lease.held, failure is not None)
        if on_term_end is not None:
            on_term_end(lease, end)
        if end == TermEnd.LEASE_LOST:
            continue
        with contextlib.suppress(LeasekeeperError):
            await lease.release()
        if end == TermEnd.CANCELLED:
            return None
        if failure is not None:
            raise failure
        return result
    return None
