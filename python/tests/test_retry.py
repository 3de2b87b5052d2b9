"""The one-shot call's retry rule (leasekeeper._retry) on a fake time, with
Endpoints choosing where each attempt goes: a failover as the nodes show it
(the dead leader refuses connections, the others still name it, then one of
them leads)."""

from __future__ import annotations

import random
from typing import Callable, Optional

import grpc
import pytest

from leasekeeper._common import Endpoints
from leasekeeper._retry import MAX_DELAY, CallRetry, never_sent
from leasekeeper.errors import LeasekeeperError, NotLeader, make_error

NODES = ["a:1", "b:1", "c:1"]
ELECTED_AT = 2.2

Answer = Callable[[str, float], Optional[LeasekeeperError]]


def refused() -> LeasekeeperError:
    return make_error(grpc.StatusCode.UNAVAILABLE,
                      "failed to connect to all addresses; last error: "
                      "UNKNOWN: ipv4:127.0.0.1:7001: Connection refused",
                      None, None)


def dropped() -> LeasekeeperError:
    return make_error(grpc.StatusCode.UNAVAILABLE, "Socket closed", None,
                      None)


def not_leader(leader: Optional[str]) -> LeasekeeperError:
    return make_error(grpc.StatusCode.UNAVAILABLE,
                      f"not leader; leader is {leader}" if leader
                      else "not leader; leader unknown", "NOT_LEADER", None,
                      leader)


def failover(target: str, now: float) -> Optional[LeasekeeperError]:
    elected = now >= ELECTED_AT
    if target == "a:1":
        return refused()
    if target == "b:1":
        return None if elected else not_leader("a:1")
    return not_leader("b:1" if elected else "a:1")


def run(targets: list[str], timeout: float, repeatable: bool,
        answer: Answer) -> tuple[Optional[LeasekeeperError], list[str], float]:
    """A call as Client._call makes it, each attempt taking 1 ms: (the
    error it raised or None, the targets tried, when it ended)."""
    # Real channels, never used: they connect only when called.
    endpoints = Endpoints(targets, grpc.insecure_channel)
    retry = CallRetry(timeout, repeatable, endpoints.count)
    now = 0.0
    tried: list[str] = []
    while True:
        generation, _ = endpoints.current()
        target = endpoints.target
        tried.append(target)
        error = answer(target, now)
        now += 0.001
        if error is None:
            return None, tried, now
        if error.code == grpc.StatusCode.UNAVAILABLE:
            endpoints.failed(generation, error.leader)
        at = retry.after(error, target, now)
        if at is None:
            return retry.error, tried, now
        now = max(now, at)


def test_a_call_started_at_the_leaders_death_succeeds_once_a_leader_serves(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Every backoff at the top of its jitter: the slowest the rule allows.
    monkeypatch.setattr(random, "uniform", lambda low, high: high)
    error, tried, ended = run(NODES, 10.0, True, failover)
    assert error is None
    assert tried[-1] == "b:1"
    assert ended <= ELECTED_AT + 2 * MAX_DELAY + 0.01


def test_a_call_that_cannot_be_repeated_still_rides_over_refusals() -> None:
    error, _, _ = run(NODES, 10.0, False, failover)
    assert error is None


def test_a_dropped_call_is_repeated_only_when_repeatable() -> None:
    def dropped_once(target: str, now: float) -> Optional[LeasekeeperError]:
        return dropped() if target == "a:1" else None
    error, tried, _ = run(NODES, 10.0, False, dropped_once)
    assert error is not None and error.message == "Socket closed"
    assert tried == ["a:1"]
    error, tried, _ = run(NODES, 10.0, True, dropped_once)
    assert error is None
    assert tried == ["a:1", "b:1"]


def test_the_servers_answer_ends_the_call_at_once() -> None:
    refusal = make_error(grpc.StatusCode.FAILED_PRECONDITION, "not holder",
                         "NOT_HOLDER", None)
    error, tried, _ = run(NODES, 10.0, True, lambda target, now: refusal)
    assert error is refusal
    assert len(tried) == 1


def test_at_the_deadline_the_call_raises_the_last_answer_naming_its_endpoint(
) -> None:
    def nobody(target: str, now: float) -> Optional[LeasekeeperError]:
        return refused() if target == "a:1" else not_leader(None)
    error, tried, ended = run(NODES, 3.0, True, nobody)
    assert error is not None
    assert error.code == grpc.StatusCode.UNAVAILABLE
    assert (f"(from {tried[-1]}, the last of {len(tried)} attempts"
            in error.message)
    if tried[-1] != "a:1":
        assert isinstance(error, NotLeader)
    assert 3.0 - MAX_DELAY - 0.01 <= ended <= 3.0


def test_one_endpoint_is_tried_again_with_backoff_until_it_serves() -> None:
    def restarting(target: str, now: float) -> Optional[LeasekeeperError]:
        return refused() if now < 1.0 else None
    error, tried, ended = run(["a:1"], 5.0, False, restarting)
    assert error is None
    assert ended <= 1.0 + MAX_DELAY + 0.01
    assert len(tried) < 20


def test_a_failed_tls_handshake_ends_the_call_at_once() -> None:
    handshake = make_error(grpc.StatusCode.UNAVAILABLE,
                           "failed to connect to all addresses; last error: "
                           "UNKNOWN: ipv4:127.0.0.1:7001: Ssl handshake "
                           "failed: SSL_ERROR_SSL", None, None)
    error, tried, _ = run(NODES, 10.0, True, lambda target, now: handshake)
    assert error is handshake
    assert len(tried) == 1


def test_only_a_failed_connection_counts_as_never_sent() -> None:
    assert never_sent(refused())
    assert not never_sent(dropped())
    assert not never_sent(not_leader(None))
