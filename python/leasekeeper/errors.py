"""Exceptions of the leasekeeper client, and the mapping from gRPC failures.

The server sends every failure as a gRPC status whose details are the
contract's text ("not holder", "stale token", ...) with two trailing metadata
entries: `leasekeeper-reason` (the ErrorReason name, e.g. "STALE_TOKEN") and
`leasekeeper-error-bin` (a serialized leasekeeper.v1.ErrorDetail).
`from_rpc_error` turns such a failure into the exception for its reason, so
callers catch `StaleToken` instead of parsing messages. A failure without that
metadata (the server was unreachable, the transport deadline ran out) gets its
class from the code alone.

Every exception raised by a call of this package is a `LeasekeeperError`,
except ValueError / TypeError for bad arguments, which are raised before any
call is made.

Thread-safety: plain values and pure functions.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import grpc

from leasekeeper.v1 import lock_service_pb2 as pb

REASON_METADATA_KEY = "leasekeeper-reason"
DETAIL_METADATA_KEY = "leasekeeper-error-bin"
LEADER_METADATA_KEY = "leasekeeper-leader"


class LeasekeeperError(Exception):
    """A call failed.

    code: the gRPC status code (None for failures the client itself decided,
      such as LeaseLost).
    reason: the server's ErrorReason name ("STALE_TOKEN", ...), or None when
      the failure did not come from the server's error mapping.
    message: the server's (or the client's) text.
    detail: the server's ErrorDetail (field, limit, victims), or None.
    leader: NOT_LEADER only: the leader's address as the refusing node named
      it (trailing metadata leasekeeper-leader), or None when it knew none.
    """

    def __init__(self, message: str, *, code: Optional[grpc.StatusCode] = None,
                 reason: Optional[str] = None,
                 detail: Optional[pb.ErrorDetail] = None,
                 leader: Optional[str] = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.reason = reason
        self.detail = detail
        self.leader = leader

    def __str__(self) -> str:
        parts = [self.message]
        if self.code is not None:
            parts.append(f"code={self.code.name}")
        if self.reason:
            parts.append(f"reason={self.reason}")
        return " ".join(parts)


class StaleToken(LeasekeeperError):
    """The fenced store accepted a higher token for the lock: a newer holder
    wrote. Nothing was written."""


class NotHolder(LeasekeeperError):
    """The server says this client does not hold (or wait for) the lock."""


class NoHolder(LeasekeeperError):
    """force_release found no lease to end: nobody holds the lock, or not
    the client named (NO_HOLDER). Nothing changed."""


class ClientBusy(LeasekeeperError):
    """This client already waits for some lock, or already holds this one."""


class LockBusy(LeasekeeperError):
    """The lock was not granted within the wait; nothing is left queued."""


class DeadlockVictim(LeasekeeperError):
    """This client was aborted to break a wait-for cycle; every lease it held
    ended with end_reason "deadlock_victim"."""

    @property
    def victims(self) -> Sequence[str]:
        """Every client the request aborted, in abort order."""
        return list(self.detail.victims) if self.detail is not None else []


class LimitExceeded(LeasekeeperError):
    """A server limit was hit; nothing changed."""

    @property
    def limit(self) -> str:
        """The limit's flag name, e.g. "max-lock-name-bytes"."""
        return self.detail.limit if self.detail is not None else ""

    @property
    def limit_value(self) -> int:
        return self.detail.limit_value if self.detail is not None else 0


class Unavailable(LeasekeeperError):
    """The server could not be reached or answer in time, is shutting down,
    or the session ended while the call waited. Worth retrying later."""


class NotLeader(Unavailable):
    """A cluster node that is not the leader refused the call (nothing was
    applied); `leader` names the leader when the node knows it. The client
    follows it by itself; callers see this only when no node served."""


class CapacityMismatch(LeasekeeperError):
    """The semaphore is held or awaited with another capacity
    (FAILED_PRECONDITION CAPACITY_MISMATCH)."""


class ModeMismatch(LeasekeeperError):
    """A semaphore request on a lock held or awaited as exclusive/shared, or
    the reverse (FAILED_PRECONDITION MODE_MISMATCH)."""


class LeaseLost(LeasekeeperError):
    """The lease has ended; `end_reason` says why."""

    def __init__(self, message: str, end_reason: Any) -> None:
        super().__init__(message)
        self.end_reason = end_reason


_BY_REASON: dict[str, type[LeasekeeperError]] = {
    "STALE_TOKEN": StaleToken,
    "NOT_HOLDER": NotHolder,
    "NO_HOLDER": NoHolder,
    "CLIENT_BUSY": ClientBusy,
    "WAIT_TIMEOUT": LockBusy,
    "DEADLOCK_VICTIM": DeadlockVictim,
    "LIMIT_EXCEEDED": LimitExceeded,
    "SHUTTING_DOWN": Unavailable,
    "NOT_LEADER": NotLeader,
    "CAPACITY_MISMATCH": CapacityMismatch,
    "MODE_MISMATCH": ModeMismatch,
}

_BY_CODE: dict[grpc.StatusCode, type[LeasekeeperError]] = {
    grpc.StatusCode.UNAVAILABLE: Unavailable,
    # No server reason: the transport deadline ran out before an answer.
    grpc.StatusCode.DEADLINE_EXCEEDED: Unavailable,
    grpc.StatusCode.ABORTED: DeadlockVictim,
    grpc.StatusCode.RESOURCE_EXHAUSTED: LimitExceeded,
}


def make_error(code: grpc.StatusCode, message: str, reason: Optional[str],
               detail: Optional[pb.ErrorDetail],
               leader: Optional[str] = None) -> LeasekeeperError:
    """The exception for a failure with this code, reason and detail."""
    cls = _BY_REASON.get(reason or "")
    if cls is None:
        cls = _BY_CODE.get(code, LeasekeeperError)
    return cls(message, code=code, reason=reason, detail=detail,
               leader=leader if reason == "NOT_LEADER" else None)


def from_rpc_error(error: grpc.RpcError) -> LeasekeeperError:
    """The exception for a failed call (error is a grpc.RpcError that is
    also a grpc.Call, as every failed call's error is)."""
    code: grpc.StatusCode = error.code()
    message: str = error.details() or ""
    reason: Optional[str] = None
    detail: Optional[pb.ErrorDetail] = None
    leader: Optional[str] = None
    for key, value in error.trailing_metadata() or ():
        if key == REASON_METADATA_KEY:
            reason = value if isinstance(value, str) else value.decode()
        elif key == LEADER_METADATA_KEY and value:
            leader = value if isinstance(value, str) else value.decode()
        elif key == DETAIL_METADATA_KEY and isinstance(value, bytes):
            parsed = pb.ErrorDetail()
            try:
                parsed.ParseFromString(value)
            except Exception:  # a proxy's garbage is not ours to fail on
                continue
            detail = parsed
    if reason == "ERROR_REASON_UNSPECIFIED":
        reason = None
    return make_error(code, message, reason, detail, leader)


def is_transient(error: LeasekeeperError) -> bool:
    """True for failures worth retrying with the same request id: the server
    unreachable or busy, the transport deadline run out. A refusal by the
    state, bad arguments, aborts and cancellations are not transient."""
    if error.code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.UNKNOWN,
                      grpc.StatusCode.INTERNAL):
        return True
    if error.code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return error.reason != "WAIT_TIMEOUT"
    if error.code == grpc.StatusCode.RESOURCE_EXHAUSTED:
        return error.reason != "LIMIT_EXCEEDED"
    return False
