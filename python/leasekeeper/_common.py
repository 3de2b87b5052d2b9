"""What the threaded and the asyncio Client share besides the LeaseBook:
argument checks (raised before any call), the default client id, request
ids, TLS files, the endpoint list, request building and the feature probe for
holder-checked writes.

Thread-safety: pure functions, except Endpoints and RequestIdSource, which
are thread-safe.
"""

from __future__ import annotations

import ipaddress
import itertools
import os
import secrets
import socket
import threading
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence, Union

import grpc

from leasekeeper.v1 import lock_service_pb2 as pb
from leasekeeper.v1 import lock_service_pb2_grpc as pb_grpc

MIN_TTL = 0.001
MAX_TTL = 86400.0
# The longest wait one Acquire call can ask the server for; longer waits are
# made of several calls.
MAX_SERVER_WAIT = 86400.0
MAX_CLIENT_ID_BYTES = 256
MAX_HOLDER_LABEL_BYTES = 256
FIRST_RETRY_DELAY = 0.1
MAX_ACQUIRE_RETRY_DELAY = 1.0



def default_client_id() -> str:
    """"<hostname>/<pid>/<8 random hex digits>", as the C++ client makes it:
    unique per Client, and readable in Inspect and Status."""
    host = socket.gethostname() or "localhost"
    return f"{host}/{os.getpid()}/{secrets.token_hex(4)}"


def check_str(name: str, value: object, *, max_bytes: int = 0,
              allow_empty: bool = False) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    if not allow_empty and not value:
        raise ValueError(f"{name} must not be empty")
    if max_bytes and len(value.encode()) > max_bytes:
        raise ValueError(f"{name} is longer than {max_bytes} bytes")
    return value


def check_seconds(name: str, value: object, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number of seconds, not "
                        f"{type(value).__name__}")
    if not low <= value <= high:
        raise ValueError(f"{name} must be within {low:g}..{high:g} s, "
                         f"not {value!r}")
    return float(value)


def check_ttl(ttl: object) -> float:
    return check_seconds("ttl", ttl, MIN_TTL, MAX_TTL)


def check_wait(wait: object) -> Optional[float]:
    """None waits for as long as it takes."""
    if wait is None:
        return None
    return check_seconds("wait", wait, 0.0, float("inf"))


def check_bool(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, not {type(value).__name__}")
    return value


def check_value(value: object) -> bytes:
    if isinstance(value, str):
        value = value.encode()
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise TypeError(f"value must be bytes or str, not "
                        f"{type(value).__name__}")
    data = bytes(value)
    if not data:
        raise ValueError("value must not be empty")
    return data


@dataclass(frozen=True)
class LockArgs:
    lock: str
    ttl: float
    wait: Optional[float]
    shared: bool
    label: str
    # A permit of a counting semaphore of this capacity; 0: not a semaphore.
    semaphore: int = 0


MAX_SEMAPHORE_CAPACITY = 65535


def check_semaphore(semaphore: object, shared: bool) -> int:
    """A semaphore's capacity (None: not a semaphore, 0 here)."""
    if semaphore is None:
        return 0
    if not isinstance(semaphore, int) or isinstance(semaphore, bool):
        raise TypeError("semaphore must be an int, not "
                        f"{type(semaphore).__name__}")
    if not 1 <= semaphore <= MAX_SEMAPHORE_CAPACITY:
        raise ValueError(f"semaphore must be in 1..{MAX_SEMAPHORE_CAPACITY}")
    if shared:
        raise ValueError("a semaphore permit cannot also be shared")
    return semaphore


def check_lock_args(name: object, ttl: object, wait: object, shared: object,
                    holder_label: object, default_label: str,
                    semaphore: object = None) -> LockArgs:
    """lock()'s and try_lock()'s arguments, checked before any call."""
    is_shared = check_bool("shared", shared)
    return LockArgs(
        check_str("name", name), check_ttl(ttl), check_wait(wait),
        is_shared,
        default_label if holder_label is None else check_str(
            "holder_label", holder_label, max_bytes=MAX_HOLDER_LABEL_BYTES,
            allow_empty=True),
        check_semaphore(semaphore, is_shared))


@dataclass(frozen=True)
class TlsFiles:
    """PEM files for a TLS channel. root_certs None uses the system's roots;
    a client certificate is sent only if cert_chain and private_key are both
    given. server_name_override checks the server's certificate against that
    name instead of the endpoint's host (e.g. when connecting by address)."""

    root_certs: Optional[str] = None
    cert_chain: Optional[str] = None
    private_key: Optional[str] = None
    server_name_override: Optional[str] = None

    def credentials(self) -> "grpc.ChannelCredentials":
        if (self.cert_chain is None) != (self.private_key is None):
            raise ValueError("TlsFiles: give both cert_chain and private_key, "
                             "or neither")

        def read(path: Optional[str]) -> Optional[bytes]:
            if path is None:
                return None
            with open(path, "rb") as file:
                return file.read()

        return grpc.ssl_channel_credentials(
            root_certificates=read(self.root_certs),
            private_key=read(self.private_key),
            certificate_chain=read(self.cert_chain))

    def options(self) -> list[tuple[str, str]]:
        if self.server_name_override is None:
            return []
        return [("grpc.ssl_target_name_override", self.server_name_override)]


MAX_PORT = 65535


def _address_error(address: str, reason: str) -> ValueError:
    return ValueError(f'invalid server address "{address}": {reason}')


def _check_host_port(address: str, host_port: str) -> None:
    """`host_port` (from `address`) is host:port, host a name, an IPv4
    address or a bracketed IPv6 address, port 1..65535."""
    if host_port.startswith("["):
        end = host_port.find("]")
        if end < 0:
            raise _address_error(address, "malformed IPv6 address")
        try:
            ipaddress.IPv6Address(host_port[1:end])
        except ValueError:
            raise _address_error(address, "malformed IPv6 address") from None
        rest = host_port[end + 1:]
        if not rest or rest == ":":
            raise _address_error(address, "missing port")
        if not rest.startswith(":"):
            raise _address_error(address, "malformed IPv6 address")
        port = rest[1:]
    else:
        if host_port.count(":") > 1:
            # An IPv6 address needs brackets to be told from its port.
            raise _address_error(address, "malformed IPv6 address")
        host, colon, port = host_port.partition(":")
        if not host:
            raise _address_error(address, "empty host")
        if not colon or not port:
            raise _address_error(address, "missing port")
    if not port.isascii() or not port.isdigit() or not (
            1 <= int(port) <= MAX_PORT):
        raise _address_error(address, f"port out of range (1-{MAX_PORT})")


def check_address(address: object) -> str:
    """One server address, as the C++ client checks it: "host:port" (host
    a name, IPv4, or [IPv6]; port 1..65535), "dns:host:port" (or
    "dns:///host:port"), or "unix:/path". Raises ValueError
    'invalid server address "<address>": <reason>', the reason one of
    "missing port", "port out of range (1-65535)", "empty host",
    "scheme not supported; write host:port", "malformed IPv6 address"."""
    if not isinstance(address, str):
        raise TypeError("endpoint must be a str, not "
                        f"{type(address).__name__}")
    if address.startswith("unix:"):
        if not address[len("unix:"):]:
            raise _address_error(address, "empty host")
        return address
    host_port = address
    if address.startswith("dns:"):
        host_port = address[len("dns:"):]
        if host_port.startswith("//"):
            # dns://[authority]/host:port: the authority is a DNS server.
            host_port = host_port[2:].partition("/")[2]
    elif "://" in address:
        raise _address_error(address, "scheme not supported; write host:port")
    _check_host_port(address, host_port)
    return address


def check_endpoints(endpoints: object) -> list[str]:
    """A list of addresses (check_address) from a list, or from "a,b,c"."""
    if isinstance(endpoints, str):
        endpoints = [e.strip() for e in endpoints.split(",")]
    if not isinstance(endpoints, (list, tuple)):
        raise TypeError("endpoints must be a str or a sequence of str")
    checked = [check_address(e) for e in endpoints]
    if not checked:
        raise ValueError("endpoints must name at least one server")
    return checked


@dataclass(frozen=True)
class Connection:
    """A channel to one endpoint and the stub over it (made once: a stub
    builds a callable per method)."""

    channel: Any
    stub: Any


class Endpoints:
    """The servers a Client may talk to, one at a time (a cluster's nodes,
    of which only the leader serves lock calls). Calls go to the current
    one. A call that found it failing reports `failed` with the generation
    `current` gave it: a NOT_LEADER refusal naming a leader moves to that
    address (it may lie outside the list: the cluster's own advertised
    address); any other failure (unreachable, NOT_LEADER without a leader)
    moves to the next endpoint of the list, wrapping. A report about an
    older generation changes nothing (a concurrent call moved on already).
    The failed call is retried there by its caller, with its request id.
    Channels are made lazily, one per address, and kept until close()."""

    def __init__(self, targets: Sequence[str],
                 make_channel: Callable[[str], Any]) -> None:
        self._targets = list(targets)
        self._make = make_channel
        self._mutex = threading.Lock()
        self._list_index = 0
        self._current = self._targets[0]
        self._generation = 0
        self._connections: dict[str, Connection] = {}

    @property
    def target(self) -> str:
        with self._mutex:
            return self._current

    @property
    def count(self) -> int:
        """How many endpoints the list has."""
        return len(self._targets)

    def current(self) -> tuple[int, Connection]:
        """(generation, connection) of the endpoint calls go to now."""
        with self._mutex:
            connection = self._connections.get(self._current)
            if connection is None:
                channel = self._make(self._current)
                connection = Connection(channel,
                                        pb_grpc.LockServiceStub(channel))
                self._connections[self._current] = connection
            return self._generation, connection

    def failed(self, generation: int, leader: Optional[str] = None) -> None:
        """The endpoint of `generation` did not serve: later calls go to
        `leader` if given (and not that endpoint), else to the next."""
        with self._mutex:
            if generation != self._generation:
                return
            if leader and leader != self._current:
                self._current = leader
            else:
                self._list_index = (self._list_index + 1) % len(self._targets)
                self._current = self._targets[self._list_index]
            self._generation += 1

    def take_channels(self) -> list[Any]:
        """Every channel made, for the caller to close; forgets them."""
        with self._mutex:
            channels = [c.channel for c in self._connections.values()]
            self._connections.clear()
            return channels


@dataclass(frozen=True)
class ClientConfig:
    targets: list[str]
    client_id: str
    holder_label: str
    credentials: Any  # grpc.ChannelCredentials, or None for plaintext
    channel_options: list[tuple[str, Union[str, int]]]
    call_timeout: float
    idle_keepalive_interval: float


def check_client_args(endpoints: object, client_id: object,
                      holder_label: object, tls: object, call_timeout: object,
                      idle_keepalive_interval: object) -> ClientConfig:
    """A Client's arguments, checked (and TLS files read) before any I/O."""
    targets = check_endpoints(endpoints)
    who = default_client_id() if client_id is None else check_str(
        "client_id", client_id, max_bytes=MAX_CLIENT_ID_BYTES)
    label = check_str("holder_label", holder_label,
                      max_bytes=MAX_HOLDER_LABEL_BYTES, allow_empty=True)
    if tls is not None and not isinstance(tls, TlsFiles):
        raise TypeError("tls must be a leasekeeper.TlsFiles")
    timeout = check_seconds("call_timeout", call_timeout, 0.001, 3600)
    idle = check_seconds("idle_keepalive_interval", idle_keepalive_interval,
                         0.01, 3600)
    return ClientConfig(targets, who, label,
                        tls.credentials() if tls is not None else None,
                        channel_options(tls), timeout, idle)


def check_page(prefix: object, page_size: object) -> None:
    check_str("prefix", prefix, allow_empty=True)
    if isinstance(page_size, bool) or not isinstance(page_size, int):
        raise TypeError("page_size must be an int")
    if page_size < 0:
        raise ValueError("page_size must not be negative")


def force_release_request(lock: object, client_id: object,
                          reason: object) -> pb.ForceReleaseRequest:
    return pb.ForceReleaseRequest(
        lock=check_str("lock", lock),
        client_id=check_str("client_id", client_id, allow_empty=True),
        reason=check_str("reason", reason, allow_empty=True))


def channel_options(tls: Optional[TlsFiles]) -> list[tuple[str, Union[str, int]]]:
    options: list[tuple[str, Union[str, int]]] = [
        # A lock client wants to learn of a dead connection quickly.
        ("grpc.keepalive_time_ms", 10_000),
        ("grpc.keepalive_timeout_ms", 5_000),
    ]
    if tls is not None:
        options.extend(tls.options())
    return options


class RequestIdSource:
    """Request ids unique per Client: a random prefix and a counter."""

    def __init__(self) -> None:
        self._prefix = secrets.token_hex(6)
        self._counter = itertools.count(1)

    def __call__(self) -> str:
        return f"{self._prefix}-{next(self._counter)}"


def ms(seconds: float) -> int:
    return max(0, int(round(seconds * 1000)))


def acquire_request(client_id: str, lock: str, ttl: float, shared: bool,
                    wait: float, request_id: str, session_id: str,
                    holder_label: str, semaphore: int = 0) -> pb.AcquireRequest:
    mode = (pb.LOCK_MODE_SEMAPHORE if semaphore else
            pb.LOCK_MODE_SHARED if shared else pb.LOCK_MODE_EXCLUSIVE)
    return pb.AcquireRequest(
        client_id=client_id, lock=lock, ttl_ms=max(1, ms(ttl)), mode=mode,
        wait_timeout_ms=ms(min(wait, MAX_SERVER_WAIT)),
        request_id=request_id, session_id=session_id,
        holder_label=holder_label, capacity=semaphore)


def write_request(lock: str, key: str, value: bytes, token: int,
                  client_id: str) -> pb.WriteRequest:
    """Fenced by `token` and holder-checked: the server refuses the write
    unless `client_id` holds a live lease on `lock` with exactly that token."""
    return pb.WriteRequest(lock=lock, key=key, value=value, token=token,
                           client_id=client_id, require_held=True)


def delete_request(lock: str, key: str, token: int,
                   client_id: str) -> pb.DeleteRequest:
    """Fenced by `token` and always holder-checked, as write_request."""
    return pb.DeleteRequest(lock=lock, key=key, token=token,
                            client_id=client_id)


def list_keys_request(lock: object, after: object,
                      limit: object) -> pb.ListKeysRequest:
    """One page of ListKeys; limit 0 is the server's default (100)."""
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise TypeError("limit must be an int")
    if limit < 0:
        raise ValueError("limit must not be negative")
    return pb.ListKeysRequest(lock=check_str("lock", lock),
                              after=check_str("after", after, allow_empty=True),
                              limit=limit)


@dataclass(frozen=True)
class KeyPage:
    """One page of a lock's keys in the fenced store, ascending in byte
    order; next_after (pass it as `after`) is None on the last page."""
    keys: list[str]
    next_after: Optional[str]

    @staticmethod
    def of(response: pb.ListKeysResponse) -> "KeyPage":
        return KeyPage(list(response.keys), response.next_after or None)


def release_request(client_id: str, lock: str, request_id: str,
                    session_id: str) -> pb.ReleaseRequest:
    return pb.ReleaseRequest(client_id=client_id, lock=lock,
                             request_id=request_id, session_id=session_id)


_MODE_NAMES: dict[int, str] = {pb.LOCK_MODE_SHARED: "shared",
                               pb.LOCK_MODE_SEMAPHORE: "semaphore"}


def mode_name(mode: int) -> str:
    """A LockMode as leasekeeper-ctl and the C++ client name it:
    "exclusive", "shared" or "semaphore" (a permit of a semaphore)."""
    return _MODE_NAMES.get(mode, "exclusive")


@dataclass(frozen=True)
class Holder:
    """One lease, as Inspect, Status and ListLocks show it. mode:
    "exclusive", "shared" or "semaphore" (one permit of a semaphore);
    shared is mode == "shared"."""

    client_id: str
    lock: str
    shared: bool
    token: int
    expires_in: float  # seconds left when the server answered
    holder_label: str
    mode: str = "exclusive"

    @staticmethod
    def of(holder: pb.Holder) -> "Holder":
        return Holder(holder.client_id, holder.lock,
                      holder.mode == pb.LOCK_MODE_SHARED, holder.token,
                      holder.expires_in_ms / 1000, holder.holder_label,
                      mode_name(holder.mode))


@dataclass(frozen=True)
class Waiter:
    """One queued request; mode and shared as in Holder."""

    client_id: str
    shared: bool
    ttl: float
    position: int  # 1 = next in line
    holder_label: str
    mode: str = "exclusive"


@dataclass(frozen=True)
class LockInfo:
    """Inspect's answer: holders by token, lowest first; queue oldest
    first; capacity: a semaphore's while it is held or awaited, else 0."""

    holders: list[Holder]
    queue: list[Waiter]
    capacity: int = 0

    @staticmethod
    def of(response: pb.InspectResponse) -> "LockInfo":
        return LockInfo(
            [Holder.of(h) for h in response.holders],
            [Waiter(w.client_id, w.mode == pb.LOCK_MODE_SHARED,
                    w.ttl_ms / 1000, w.position, w.holder_label,
                    mode_name(w.mode))
             for w in response.queue],
            response.capacity)


@dataclass(frozen=True)
class ClientStatus:
    """Status's answer. session: "none", "open" or "grace"."""

    registered: bool
    age: int
    holds: list[Holder]
    waiting_for: str
    session: str

    @staticmethod
    def of(response: pb.StatusResponse) -> "ClientStatus":
        session = {pb.SESSION_STATE_OPEN: "open",
                   pb.SESSION_STATE_GRACE: "grace"}.get(response.session,
                                                        "none")
        return ClientStatus(response.registered, response.age,
                            [Holder.of(h) for h in response.holds],
                            response.waiting_for, session)


@dataclass(frozen=True)
class LockSummary:
    lock: str
    holders: list[Holder]
    queue_length: int

    @staticmethod
    def of(summary: pb.LockSummary) -> "LockSummary":
        return LockSummary(summary.lock,
                           [Holder.of(h) for h in summary.holders],
                           summary.queue_length)


@dataclass(frozen=True)
class ReleasedLease:
    """A lease ForceRelease ended; mode and shared as in Holder."""

    client_id: str
    token: int
    shared: bool
    mode: str = "exclusive"

    @staticmethod
    def all_of(response: pb.ForceReleaseResponse) -> list["ReleasedLease"]:
        return [ReleasedLease(r.client_id, r.token,
                              r.mode == pb.LOCK_MODE_SHARED,
                              mode_name(r.mode))
                for r in response.released]


class InspectPages:
    """Inspect's pages merged into one LockInfo: holders by token, then the
    queue; the latest page's capacity. Send `request`, add() each answer
    until it returns the whole."""

    def __init__(self, lock: object) -> None:
        self.request = pb.InspectRequest(lock=check_str("lock", lock))
        self._whole = pb.InspectResponse()

    def add(self, page: pb.InspectResponse) -> Optional[LockInfo]:
        self._whole.holders.extend(page.holders)
        self._whole.queue.extend(page.queue)
        self._whole.capacity = page.capacity
        if not page.next_page_token:
            return LockInfo.of(self._whole)
        self.request.page_token = page.next_page_token
        return None


class StatusPages:
    """Status's pages merged into one ClientStatus (every hold, by lock
    name); used as InspectPages."""

    def __init__(self, client_id: str) -> None:
        self.request = pb.StatusRequest(client_id=client_id)
        self._holds: list[pb.Holder] = []

    def add(self, page: pb.StatusResponse) -> Optional[ClientStatus]:
        self._holds.extend(page.holds)
        if not page.next_page_token:
            del page.holds[:]
            page.holds.extend(self._holds)
            return ClientStatus.of(page)
        self.request.page_token = page.next_page_token
        return None
