"""run_as_leader's terms against a real leasekeeperd."""

from __future__ import annotations

import threading

import pytest

import leasekeeper
from leasekeeper import TermEnd

from conftest import MakeClient


def test_work_that_returns_hands_the_lock_on_and_its_result_back(
        make_client: MakeClient) -> None:
    client, observer = make_client(), make_client()
    ends: list[TermEnd] = []
    result = client.run_as_leader(
        "sweeper", ttl=5, work=lambda lease, term: lease.token * 10,
        stop=threading.Event(), on_term_end=lambda lease, end: ends.append(end))
    assert result == 10 and ends == [TermEnd.WORK_RETURNED]
    assert observer.inspect("sweeper").holders == []


def test_work_that_raises_releases_and_raises(make_client: MakeClient) -> None:
    client, observer = make_client(), make_client()

    def work(lease: leasekeeper.Lease, term: threading.Event) -> None:
        raise KeyError("boom")

    with pytest.raises(KeyError):
        client.run_as_leader("sweeper", ttl=5, work=work,
                             stop=threading.Event())
    assert observer.inspect("sweeper").holders == []


def test_a_lost_lease_ends_the_term_and_the_election_contends_again(
        make_client: MakeClient) -> None:
    client, operator = make_client(), make_client()
    stop = threading.Event()
    ends: list[TermEnd] = []
    tokens: list[int] = []

    def work(lease: leasekeeper.Lease, term: threading.Event) -> None:
        tokens.append(lease.token)
        if len(tokens) == 1:
            operator.force_release("sweeper", reason="test")
            assert term.wait(2.0)  # set by the loss
        else:
            stop.set()
            assert term.wait(2.0)  # set by the stop

    assert client.run_as_leader(
        "sweeper", ttl=0.9, work=work, stop=stop,
        on_term_end=lambda lease, end: ends.append(end)) is None
    assert ends == [TermEnd.LEASE_LOST, TermEnd.CANCELLED]
    assert tokens == [1, 2]
    assert operator.inspect("sweeper").holders == []


def test_a_stop_while_contending_withdraws_the_wait(
        make_client: MakeClient) -> None:
    leader, follower = make_client(), make_client()
    stop = threading.Event()
    with leader.lock("sweeper", ttl=5):
        answer: list[object] = ["not returned"]
        thread = threading.Thread(target=lambda: answer.__setitem__(
            0, follower.run_as_leader("sweeper", ttl=5,
                                      work=lambda lease, term: "led",
                                      stop=stop)))
        thread.start()
        while not leader.inspect("sweeper").queue:
            threading.Event().wait(0.01)
        stop.set()
        thread.join(3)
        assert answer == [None]
        # The cancelled Acquire reaches the server on its own (as in
        # test_aio's cancelled wait): give it a moment, not a pass.
        for _ in range(100):
            if not leader.inspect("sweeper").queue:
                break
            threading.Event().wait(0.01)
        assert leader.inspect("sweeper").queue == []


def test_a_non_transient_contention_error_is_raised(
        make_client: MakeClient) -> None:
    client = make_client()
    with client.lock("sweeper", ttl=5):
        with pytest.raises(leasekeeper.ClientBusy):
            client.run_as_leader("sweeper", ttl=5,
                                 work=lambda lease, term: None,
                                 stop=threading.Event(), retry_delay=0.05)
