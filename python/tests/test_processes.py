"""Holders in other processes: stalled, killed, and two elections.

Live tests: they wait for short leases (1 s) and the session grace (0.5 s)
of the fixture's server to pass, as marked.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Iterator

import pytest

import leasekeeper
from leasekeeper.testing import LocalServer

from conftest import MakeClient

HERE = os.path.dirname(os.path.abspath(__file__))


def spawn(*args: str) -> subprocess.Popen[str]:
    env = dict(os.environ,
               PYTHONPATH=os.pathsep.join([os.path.dirname(HERE), HERE]))
    return subprocess.Popen([sys.executable, os.path.join(HERE, "child.py"),
                             *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=env)


@pytest.fixture
def children() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for child in started:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGKILL)
        child.wait()


def line(child: subprocess.Popen[str]) -> list[str]:
    assert child.stdout is not None
    return child.stdout.readline().split()


def test_a_holder_stopped_past_its_lease_has_its_write_refused(
        leasekeeperd: LocalServer, make_client: MakeClient,
        children: list[subprocess.Popen[str]]) -> None:
    """Live: the child is SIGSTOPped for its 1 s lease plus the grace."""
    child = spawn("hold", leasekeeperd.address, "1.0")
    children.append(child)
    assert line(child)[0] == "holding"
    os.kill(child.pid, signal.SIGSTOP)
    client = make_client()
    with client.lock("jobs/a", ttl=5, wait=5) as lease:
        assert lease.token == 2
        lease.write("owner", b"parent")
        os.kill(child.pid, signal.SIGCONT)
        assert child.stdin is not None
        child.stdin.write("write\n")
        child.stdin.flush()
        answer = line(child)
        assert answer[0] == "refused", answer
        assert client.read("jobs/a", "owner") == b"parent"


def test_a_killed_holder_frees_the_lock_after_the_session_grace(
        leasekeeperd: LocalServer, make_client: MakeClient,
        children: list[subprocess.Popen[str]]) -> None:
    """Live: waits for the 0.5 s grace, not the child's 30 s ttl."""
    child = spawn("hold", leasekeeperd.address, "30")
    children.append(child)
    assert line(child)[0] == "holding"
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    killed_at = time.monotonic()
    with make_client().lock("jobs/a", ttl=5, wait=10) as lease:
        took = time.monotonic() - killed_at
        assert lease.token == 2
    assert 0.3 < took < 3.0


def test_two_processes_under_run_as_leader_never_lead_at_once(
        leasekeeperd: LocalServer, tmp_path: object,
        children: list[subprocess.Popen[str]]) -> None:
    """Live: six terms of 0.3 s."""
    log = os.path.join(str(tmp_path), "terms.log")
    for _ in range(2):
        children.append(spawn("lead", leasekeeperd.address, log, "3"))
    for child in children:
        assert line(child) == ["done"]
    with open(log) as terms:
        events = [(float(t), kind, int(token)) for kind, t, token in
                  (entry.split() for entry in terms)]
    events.sort()
    assert len(events) == 12
    leading = 0
    tokens = []
    for _, kind, token in events:
        leading += 1 if kind == "start" else -1
        assert leading in (0, 1), events
        if kind == "start":
            tokens.append(token)
    assert tokens == sorted(tokens) and len(set(tokens)) == 6
