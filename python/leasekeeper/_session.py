"""Session: one client's session stream with leasekeeperd, kept open and
resumed by a thread of its own (threaded Client). Internal.

While its stream is connected, one keepalive renews every lease of the
client; when the stream ends without `close` the server waits its session
grace for a resume and then releases all the client's leases, so a crashed
process's locks pass on in about the grace instead of a whole ttl.

Lifecycle:
  idle --ensure_open--> opening --opened--> open --stream drops--> resuming
  resuming --resumed--> open;  resuming --SESSION_ENDED--> idle (lost)
  open --close--> idle (the server released everything)
  any --stop--> stopped
A first open that fails for a transient reason is retried (100 ms doubling
to 1 s) while somebody wants the session; a resume is retried the same way
until the server answers, which after its grace is SESSION_ENDED. A lost
session is not replaced until the next ensure_open.

Invariants:
  1. At most one stream exists at a time; id is set while the state is open
     or resuming, and empty otherwise.
  2. The listener is called only from the session thread, in stream order,
     and never with the Session's lock held.
  3. Requests go through one queue consumed by gRPC, so writes never
     interleave.

Thread-safety: every method is thread-safe.
"""

from __future__ import annotations

import enum
import queue
import threading
from typing import Iterator, Optional, Protocol

import grpc

from leasekeeper._common import Endpoints
from leasekeeper.errors import LeasekeeperError, Unavailable, from_rpc_error, is_transient
from leasekeeper.timer import monotonic
from leasekeeper.v1 import lock_service_pb2 as pb

RETRY_FIRST = 0.1
RETRY_MAX = 1.0


class SessionListener(Protocol):
    def on_session_opened(self, session_id: str, resumed: bool,
                          grace: float) -> None: ...
    def on_keepalive_ack(self, sequence: int, renewed_leases: int) -> None: ...
    def on_notice(self, notice: pb.LockNotice) -> None: ...
    def on_session_interrupted(self) -> None: ...
    def on_session_lost(self, session_id: str) -> None: ...


class _State(enum.Enum):
    IDLE = 0
    OPENING = 1
    OPEN = 2
    RESUMING = 3
    CLOSING = 4
    STOPPED = 5


_END = object()


class Session:
    def __init__(self, endpoints: Endpoints, client_id: str,
                 listener: SessionListener) -> None:
        self._endpoints = endpoints
        self._client_id = client_id
        self._listener = listener
        self._cv = threading.Condition()
        self._state = _State.IDLE
        self._want_open = False
        self._id = ""
        self._call: Optional[grpc.Future] = None
        self._requests: Optional["queue.SimpleQueue[object]"] = None
        self._last_error: Optional[LeasekeeperError] = None
        self._attempts = 0
        self._close_ok = False
        self._suspended_until = 0.0
        self._abandoned = ""
        self._thread: Optional[threading.Thread] = None

    # -- callers -----------------------------------------------------------

    def ensure_open(self, timeout: float) -> str:
        """The open (or resuming) session's id, opening one if there is
        none. Raises the last open failure when none opened in `timeout`."""
        give_up_at = monotonic() + timeout
        with self._cv:
            if self._state == _State.STOPPED:
                raise Unavailable("the client is closed")
            if self._id and self._state in (_State.OPEN, _State.RESUMING):
                return self._id
            self._want_open = True
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="leasekeeper-session", daemon=True)
                self._thread.start()
            self._cv.notify_all()
            attempts = self._attempts
            while True:
                if self._id and self._state in (_State.OPEN, _State.RESUMING):
                    return self._id
                if self._state == _State.STOPPED:
                    raise Unavailable("the client is closed")
                if (self._attempts > attempts and self._last_error is not None
                        and not is_transient(self._last_error)):
                    raise self._last_error
                left = give_up_at - monotonic()
                if left <= 0:
                    raise self._last_error or Unavailable(
                        "no session opened within the call timeout",
                        code=grpc.StatusCode.UNAVAILABLE)
                self._cv.wait(left)

    @property
    def id(self) -> str:
        with self._cv:
            return self._id

    def connected_id(self) -> Optional[str]:
        """The session's id while its stream is connected, else None."""
        with self._cv:
            return self._id if self._state == _State.OPEN else None

    def send_keepalive(self, sequence: int) -> bool:
        with self._cv:
            if self._state != _State.OPEN or self._requests is None:
                return False
            self._requests.put(pb.SessionRequest(
                keepalive=pb.Keepalive(sequence=sequence)))
            return True

    def close(self, timeout: float) -> bool:
        """Sends `close` and waits up to `timeout` for the server to finish
        the stream; True if it confirmed."""
        with self._cv:
            if self._state != _State.OPEN or self._requests is None:
                return False
            self._state = _State.CLOSING
            self._want_open = False
            self._close_ok = False
            self._requests.put(pb.SessionRequest(close=pb.CloseSession()))
            self._cv.wait_for(lambda: self._state != _State.CLOSING, timeout)
            return self._close_ok

    def interrupt(self) -> None:
        """Cuts the stream as a dropped connection would; it is resumed."""
        with self._cv:
            call = self._call
        if call is not None:
            call.cancel()

    def abandon(self, session_id: str) -> None:
        """The server said `session_id` ended before the stream told us: drop
        it without a resume; the next ensure_open opens a new session."""
        with self._cv:
            if self._id != session_id:
                return
            self._id = ""
            call = self._call
            if call is None:
                self._state = _State.IDLE  # between streams: nothing to cut
            else:
                # The cut stream's end is this drop, not a failed open.
                self._abandoned = session_id
            self._cv.notify_all()
        if call is not None:
            call.cancel()

    def suspend_for_testing(self, duration: float) -> None:
        """Cuts the stream and does not resume for `duration` seconds."""
        with self._cv:
            self._suspended_until = monotonic() + duration
        self.interrupt()

    def stop(self) -> None:
        """Stops the thread, cancelling the stream without `close`."""
        with self._cv:
            if self._state == _State.STOPPED:
                return
            self._state = _State.STOPPED
            self._want_open = False
            call = self._call
            thread = self._thread
            self._cv.notify_all()
        if call is not None:
            call.cancel()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)

    # -- the session thread -----------------------------------------------

    def _run(self) -> None:
        delay = RETRY_FIRST
        while True:
            with self._cv:
                while True:
                    if self._state == _State.STOPPED:
                        return
                    wait = self._suspended_until - monotonic()
                    resume = self._id
                    if wait <= 0 and (self._want_open or resume):
                        break
                    self._cv.wait(wait if wait > 0 else None)
                self._state = _State.RESUMING if resume else _State.OPENING
            opened = self._run_one_stream(resume)
            if opened:
                delay = RETRY_FIRST
            else:
                with self._cv:
                    self._cv.wait_for(lambda: self._state == _State.STOPPED,
                                      delay)
                delay = min(delay * 2, RETRY_MAX)

    def _run_one_stream(self, resume_id: str) -> bool:
        requests: "queue.SimpleQueue[object]" = queue.SimpleQueue()
        requests.put(pb.SessionRequest(open=pb.OpenSession(
            client_id=self._client_id, resume_session_id=resume_id)))

        def feed() -> Iterator[pb.SessionRequest]:
            while True:
                item = requests.get()
                if item is _END:
                    return
                assert isinstance(item, pb.SessionRequest)
                yield item

        index, connection = self._endpoints.current()
        call = connection.stub.Session(feed())
        with self._cv:
            if self._state == _State.STOPPED:
                call.cancel()
            self._call = call
            self._requests = requests
        opened = False
        error: Optional[LeasekeeperError] = None
        try:
            for response in call:
                kind = response.WhichOneof("kind")
                if kind == "opened":
                    opened = True
                    with self._cv:
                        self._id = response.opened.session_id
                        if self._state != _State.STOPPED:
                            self._state = _State.OPEN
                        self._attempts += 1
                        self._last_error = None
                        self._cv.notify_all()
                    self._listener.on_session_opened(
                        response.opened.session_id, response.opened.resumed,
                        response.opened.grace_ms / 1000)
                elif kind == "keepalive_ack":
                    self._listener.on_keepalive_ack(
                        response.keepalive_ack.sequence,
                        response.keepalive_ack.renewed_leases)
                elif kind == "notice":
                    self._listener.on_notice(response.notice)
        except grpc.RpcError as rpc_error:
            error = from_rpc_error(rpc_error)
        finally:
            requests.put(_END)
        if error is not None and error.code == grpc.StatusCode.UNAVAILABLE:
            self._endpoints.failed(index, error.leader)
        self._stream_ended(resume_id, opened, error)
        return opened

    def _stream_ended(self, resume_id: str, opened: bool,
                      error: Optional[LeasekeeperError]) -> None:
        lost = ""
        interrupted = False
        with self._cv:
            self._call = None
            self._requests = None
            had = self._id
            if self._state == _State.STOPPED:
                return
            if self._state == _State.CLOSING:
                self._close_ok = error is None
                self._state = _State.IDLE
                self._id = ""
            elif self._abandoned:
                lost, self._abandoned = self._abandoned, ""
                self._state = _State.IDLE
                self._id = ""
            elif error is not None and error.reason == "SESSION_ENDED":
                # A resume refused, or a newer session of this client
                # replaced this one: everything it held is gone.
                lost = had or resume_id
                self._state = _State.IDLE
                self._id = ""
                # The next ensure_open opens a new session, not this thread:
                # two processes sharing a client id would take turns ending
                # each other's sessions for ever.
                self._want_open = False
            elif had:
                self._state = _State.RESUMING
                interrupted = True
            else:
                # A first open failed (or the session was abandoned).
                self._state = _State.IDLE
                self._attempts += 1
                self._last_error = error or Unavailable(
                    "the session stream ended before it opened",
                    code=grpc.StatusCode.UNAVAILABLE)
                if not is_transient(self._last_error):
                    self._want_open = False
                if resume_id:
                    lost = resume_id
            self._cv.notify_all()
        if lost:
            self._listener.on_session_lost(lost)
        elif interrupted or opened:
            self._listener.on_session_interrupted()
