"""leasekeeper.aio against a real leasekeeperd: the asyncio variants."""

from __future__ import annotations

import asyncio
import time
from typing import AsyncIterator

import pytest
import pytest_asyncio

import leasekeeper
from leasekeeper import aio
from leasekeeper.testing import LocalServer


@pytest_asyncio.fixture
async def clients(leasekeeperd: LocalServer
                  ) -> AsyncIterator[tuple[aio.Client, aio.Client]]:
    first, second = aio.Client(leasekeeperd.address), aio.Client(
        leasekeeperd.address)
    yield first, second
    await first.close()
    await second.close()


@pytest.mark.asyncio
async def test_async_with_lock_grants_and_releases(
        clients: tuple[aio.Client, aio.Client]) -> None:
    client, observer = clients
    async with client.lock("jobs/a", ttl=5, wait=5) as lease:
        assert lease.token == 1 and lease.held
        assert len((await observer.inspect("jobs/a")).holders) == 1
        await lease.write("cursor", b"7")
    assert lease.end_reason == "released" and lease.lost.is_set()
    assert (await observer.inspect("jobs/a")).holders == []
    assert await observer.read("jobs/a", "cursor") == b"7"


@pytest.mark.asyncio
async def test_a_lock_request_runs_as_a_task(
        clients: tuple[aio.Client, aio.Client]) -> None:
    client, observer = clients
    task = asyncio.create_task(client.lock("jobs/task", ttl=5, wait=5))
    lease = await asyncio.wait_for(task, 10)
    assert lease.held and lease.token == 1
    await lease.release()
    # A waiting task cancelled withdraws its request at the server.
    holder = await observer.lock("jobs/task", ttl=5)
    waiting = asyncio.create_task(client.lock("jobs/task", ttl=5, wait=30))
    for _ in range(100):
        if (await observer.inspect("jobs/task")).queue:
            break
        await asyncio.sleep(0.02)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    for _ in range(100):
        if not (await observer.inspect("jobs/task")).queue:
            break
        await asyncio.sleep(0.02)
    assert (await observer.inspect("jobs/task")).queue == []
    await holder.release()


@pytest.mark.asyncio
async def test_a_lock_request_also_runs_under_gather_and_ensure_future(
        clients: tuple[aio.Client, aio.Client]) -> None:
    client, other = clients
    first, second = await asyncio.gather(client.lock("jobs/g1", ttl=5),
                                         other.lock("jobs/g2", ttl=5))
    third = await asyncio.ensure_future(client.lock("jobs/g3", ttl=5))
    assert first.held and second.held and third.held
    for lease in (first, second, third):
        await lease.release()


@pytest.mark.asyncio
async def test_async_exception_in_the_block_releases(
        clients: tuple[aio.Client, aio.Client]) -> None:
    client, observer = clients
    with pytest.raises(KeyError):
        async with client.lock("jobs/a", ttl=5) as lease:
            raise KeyError("boom")
    assert lease.end_reason == "released"
    assert (await observer.inspect("jobs/a")).holders == []


@pytest.mark.asyncio
async def test_async_renewal_keeps_a_lease_for_several_ttls(
        clients: tuple[aio.Client, aio.Client]) -> None:
    """Live: holds a 0.6 s lease for 2.1 s."""
    client, other = clients
    lease = await client.lock("jobs/a", ttl=0.6)
    for _ in range(7):
        await asyncio.sleep(0.3)
        lease.check()
        assert await other.try_lock("jobs/a", ttl=1) is None
    assert (await other.inspect("jobs/a")).queue == []
    await lease.release()
    assert lease.end_reason == "released"


@pytest.mark.asyncio
async def test_async_wait_is_answered_at_the_release(
        clients: tuple[aio.Client, aio.Client]) -> None:
    first, second = clients
    lease = await first.lock("jobs/a", ttl=5)
    waiting = asyncio.ensure_future(second.lock("jobs/a", ttl=5, wait=10))
    while not (await first.inspect("jobs/a")).queue:
        await asyncio.sleep(0.01)
    released_at = time.monotonic()
    await lease.release()
    taken = await waiting
    assert taken.token == 2 and time.monotonic() - released_at < 1.0
    with pytest.raises(leasekeeper.LockBusy):
        await first.lock("jobs/a", ttl=5, wait=0.2)
    assert (await first.inspect("jobs/a")).queue == []
    await taken.release()


@pytest.mark.asyncio
async def test_async_cancelling_a_wait_withdraws_it(
        clients: tuple[aio.Client, aio.Client]) -> None:
    first, second = clients
    async with first.lock("jobs/a", ttl=5):
        waiting = asyncio.ensure_future(second.lock("jobs/a", ttl=5, wait=10))
        while not (await first.inspect("jobs/a")).queue:
            await asyncio.sleep(0.01)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        for _ in range(100):
            if not (await first.inspect("jobs/a")).queue:
                break
            await asyncio.sleep(0.01)
        assert (await first.inspect("jobs/a")).queue == []


@pytest.mark.asyncio
async def test_async_force_release_sets_lost(
        clients: tuple[aio.Client, aio.Client]) -> None:
    """Live: a 30 s lease is found lost within the 0.5 s session grace."""
    client, operator = clients
    with pytest.raises(leasekeeper.LeaseLost):
        async with client.lock("jobs/a", ttl=30) as lease:
            await operator.force_release("jobs/a", reason="test")
            await asyncio.wait_for(lease.lost.wait(), 0.5 + 0.3)
            assert lease.end_reason == "forced"
            with pytest.raises(leasekeeper.LeaseLost):
                await lease.write("k", b"v")


@pytest.mark.asyncio
async def test_async_old_holder_write_refused_and_errors_carry_code_and_reason(
        clients: tuple[aio.Client, aio.Client]) -> None:
    old_holder, new_holder = clients
    old = await old_holder.lock("jobs/a", ttl=5)
    await new_holder.force_release("jobs/a")
    async with new_holder.lock("jobs/a", ttl=5) as new:
        await new.write("k", b"new")
        with pytest.raises(leasekeeper.NotHolder) as not_holder:
            await old_holder._write(old._state, "k", b"old")
        assert not_holder.value.reason == "NOT_HOLDER"
    with pytest.raises(leasekeeper.LimitExceeded):
        await old_holder.lock("x" * 300, ttl=5)


@pytest.mark.asyncio
async def test_async_two_leaders_never_lead_at_once(
        clients: tuple[aio.Client, aio.Client]) -> None:
    stop = asyncio.Event()
    leading: list[int] = []
    overlaps: list[list[int]] = []
    terms: list[int] = []

    async def work(lease: aio.Lease, term: asyncio.Event) -> None:
        leading.append(lease.token)
        if len(leading) > 1:
            overlaps.append(list(leading))
        terms.append(lease.token)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(term.wait(), 0.1)
        leading.remove(lease.token)
        if len(terms) >= 4:
            stop.set()

    async def elect(client: aio.Client) -> None:
        while not stop.is_set():
            await client.run_as_leader("election", ttl=2, work=work,
                                       stop=stop)

    await asyncio.wait_for(asyncio.gather(*(elect(c) for c in clients)), 10)
    assert overlaps == [] and len(terms) >= 4
    assert terms == sorted(terms)


@pytest.mark.asyncio
async def test_async_bad_arguments_raise_before_any_call() -> None:
    client = aio.Client("127.0.0.1:1", call_timeout=0.2)
    with pytest.raises(ValueError):
        client.lock("", ttl=5)
    with pytest.raises(ValueError):
        client.lock("a", ttl=0)
    with pytest.raises(TypeError):
        client.lock("a", ttl=5, stop=object())  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        await client.try_lock("a", ttl="5")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        await client.read("a", "")
    await client.close()


@pytest.mark.asyncio
async def test_async_a_lost_lease_ends_the_term_and_it_contends_again(
        clients: tuple[aio.Client, aio.Client]) -> None:
    client, operator = clients
    stop = asyncio.Event()
    ends: list[leasekeeper.TermEnd] = []
    tokens: list[int] = []

    async def work(lease: aio.Lease, term: asyncio.Event) -> None:
        tokens.append(lease.token)
        if len(tokens) == 1:
            await operator.force_release("sweeper")
        else:
            stop.set()
        await asyncio.wait_for(term.wait(), 2.0)

    await client.run_as_leader("sweeper", ttl=5, work=work, stop=stop,
                               on_term_end=lambda lease, end: ends.append(end))
    assert ends == [leasekeeper.TermEnd.LEASE_LOST,
                    leasekeeper.TermEnd.CANCELLED]
    assert tokens == [1, 2]
    assert (await operator.inspect("sweeper")).holders == []


@pytest.mark.asyncio
async def test_async_a_newer_session_of_the_same_id_ends_the_older_ones(
        leasekeeperd: LocalServer) -> None:
    first = aio.Client(leasekeeperd.address, client_id="batch/shared-id")
    second = aio.Client(leasekeeperd.address, client_id="batch/shared-id")
    try:
        lease = await first.lock("jobs/a", ttl=30)
        async with second.lock("jobs/b", ttl=30):
            await asyncio.wait_for(lease.lost.wait(), 2.0)
            assert lease.end_reason == "session_lost"
        again = await first.lock("jobs/a", ttl=30, wait=5)
        assert again.token == 2
        await again.release()
    finally:
        await first.close()
        await second.close()


@pytest.mark.asyncio
async def test_async_delete_and_keys(
        clients: tuple[aio.Client, aio.Client]) -> None:
    client, observer = clients
    async with client.lock("jobs/a", ttl=5) as lease:
        await lease.write("part-1", b"v")
        await lease.write("part-2", b"v")
        assert await lease.delete("part-1") is True
        assert await lease.delete("part-1") is False
    with pytest.raises(leasekeeper.LeaseLost, match="not deleting"):
        await lease.delete("part-2")
    assert await observer.keys("jobs/a") == ["part-2"]
    page = await observer.list_keys("jobs/a", limit=1)
    assert page == leasekeeper.KeyPage(["part-2"], None)
