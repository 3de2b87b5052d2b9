"""LeaseBase: what the threaded and the asyncio Lease share: the grant's
fixed fields, `held`, the rule for a `with` block whose lease ended
before the block did, and the errors of a lease that has ended.

Thread-safety: the fixed fields never change; subclasses say how end_reason
and time_left are read.
"""

from __future__ import annotations

import abc
from typing import Optional

from leasekeeper._book import EndReason, LeaseState
from leasekeeper.errors import LeasekeeperError, LeaseLost


def ended_error(state: LeaseState) -> LeaseLost:
    """What a call on a lease that has ended raises."""
    return LeaseLost(f"the lease on {state.lock} (token {state.token}) "
                     f"has ended: {state.end_reason}", state.end_reason)


def not_writing_error(state: LeaseState,
                      doing: str = "writing") -> LeaseLost:
    """What Lease.write (and, doing "deleting", Lease.delete) raises,
    sending nothing, once the lease has ended."""
    return LeaseLost(f"not {doing} with the token of the lease on "
                     f"{state.lock}: it has ended ({state.end_reason})",
                     state.end_reason)


def ends_lease(error: LeasekeeperError) -> bool:
    """A release answered so (the lease was lost before it) raises
    ended_error rather than the error itself."""
    return error.reason in ("NOT_HOLDER", "SESSION_ENDED")


class LeaseBase(abc.ABC):
    def __init__(self, state: LeaseState) -> None:
        self._state = state

    @property
    def lock(self) -> str:
        return self._state.lock

    @property
    def token(self) -> int:
        """The fencing token of this grant (renewals keep it)."""
        return self._state.token

    @property
    def shared(self) -> bool:
        return self._state.shared

    @property
    def ttl(self) -> float:
        return self._state.ttl

    @property
    @abc.abstractmethod
    def end_reason(self) -> Optional[EndReason]:
        """None while held; then why it ended."""

    @abc.abstractmethod
    def time_left(self) -> float:
        """Seconds until the client's deadline (0 once ended or past it)."""

    @property
    def held(self) -> bool:
        return self.end_reason is None and self.time_left() > 0

    def _raise_if_uncovered(self, block_raised: bool,
                            reason: Optional[EndReason]) -> None:
        """At a `with` block's exit: a block that did not raise but whose
        lease ended other than by its own release raises LeaseLost, since
        its work was not covered by the lock."""
        if not block_raised and reason != EndReason.RELEASED:
            raise LeaseLost(
                f"the lease on {self.lock} (token {self.token}) ended before "
                f"the block finished: {reason}", reason)

    def __repr__(self) -> str:
        return (f"{type(self).__module__}.Lease(lock={self.lock!r}, "
                f"token={self.token}, end_reason={self.end_reason})")
