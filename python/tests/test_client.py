"""The threaded Client against a real leasekeeperd: every call and outcome.

Live tests: a few sleep for some ttls of a short lease (marked in their
docstrings); nothing sleeps for a ttl that the test does not set itself.
"""

from __future__ import annotations

import re
import threading
import time

import grpc
import pytest

import leasekeeper
from leasekeeper.errors import from_rpc_error
from leasekeeper.testing import LocalServer
from leasekeeper.v1 import lock_service_pb2 as pb
from leasekeeper.v1 import lock_service_pb2_grpc as pb_grpc

from conftest import MakeClient


def test_lock_grants_a_token_and_releases_on_exit(
        make_client: MakeClient) -> None:
    client, observer = make_client(), make_client()
    with client.lock("jobs/a", ttl=5, wait=5) as lease:
        assert lease.token == 1 and lease.held and not lease.lost.is_set()
        [holder] = observer.inspect("jobs/a").holders
        assert holder.client_id == client.client_id
        assert holder.token == 1
    assert lease.end_reason is leasekeeper.EndReason.RELEASED
    assert lease.lost.is_set() and not lease.held
    assert observer.inspect("jobs/a").holders == []


def test_an_exception_in_the_block_releases_and_propagates(
        make_client: MakeClient) -> None:
    client, observer = make_client(), make_client()
    with pytest.raises(ZeroDivisionError):
        with client.lock("jobs/a", ttl=5) as lease:
            1 / 0
    assert lease.end_reason == "released"
    assert observer.inspect("jobs/a").holders == []


def test_renewal_keeps_a_lease_for_several_ttls(
        make_client: MakeClient) -> None:
    """Live: holds a 0.6 s lease for 2.4 s."""
    client, other = make_client(), make_client()
    with client.lock("jobs/a", ttl=0.6) as lease:
        for _ in range(8):
            time.sleep(0.3)
            lease.check()
            assert other.try_lock("jobs/a", ttl=1) is None
        assert lease.time_left() > 0.2
    assert lease.end_reason == "released"


def test_the_server_wait_hands_over_at_release_in_fifo_order(
        make_client: MakeClient) -> None:
    first, second = make_client(), make_client()
    lease = first.lock("jobs/a", ttl=5)
    got: list[leasekeeper.Lease] = []
    waiter = threading.Thread(
        target=lambda: got.append(second.lock("jobs/a", ttl=5, wait=10)))
    waiter.start()
    while not first.inspect("jobs/a").queue:
        time.sleep(0.01)
    [waiting] = first.inspect("jobs/a").queue
    assert waiting.client_id == second.client_id and waiting.position == 1
    released_at = time.monotonic()
    lease.release()
    waiter.join(5)
    assert time.monotonic() - released_at < 1.0
    assert got[0].token == 2
    got[0].release()


def test_try_lock_on_a_busy_lock_answers_none_and_leaves_nothing_queued(
        make_client: MakeClient) -> None:
    holder, other = make_client(), make_client()
    with holder.lock("jobs/a", ttl=5):
        assert other.try_lock("jobs/a", ttl=5) is None
        info = holder.inspect("jobs/a")
        assert info.queue == [] and len(info.holders) == 1
        assert other.status().waiting_for == ""
    lease = other.try_lock("jobs/a", ttl=5)
    assert lease is not None and lease.token == 2
    lease.release()


def test_a_wait_that_runs_out_raises_lock_busy_and_withdraws(
        make_client: MakeClient) -> None:
    holder, other = make_client(), make_client()
    with holder.lock("jobs/a", ttl=5):
        started = time.monotonic()
        with pytest.raises(leasekeeper.LockBusy) as busy:
            other.lock("jobs/a", ttl=5, wait=0.3)
        assert 0.25 < time.monotonic() - started < 2.0
        assert busy.value.code == grpc.StatusCode.DEADLINE_EXCEEDED
        assert busy.value.reason == "WAIT_TIMEOUT"
        assert holder.inspect("jobs/a").queue == []
        with pytest.raises(leasekeeper.LockBusy):
            other.lock("jobs/a", ttl=5, wait=0)
        assert holder.inspect("jobs/a").queue == []


def test_shared_leases_are_held_together(make_client: MakeClient) -> None:
    a, b, writer = make_client(), make_client(), make_client()
    with a.lock("jobs/s", ttl=5, shared=True) as first, \
            b.lock("jobs/s", ttl=5, shared=True, wait=1) as second:
        assert first.shared and second.shared
        assert len(a.inspect("jobs/s").holders) == 2
        assert writer.try_lock("jobs/s", ttl=5) is None


def test_a_semaphore_grants_up_to_its_capacity_each_its_own_token(
        make_client: MakeClient) -> None:
    a, b, c, observer = make_client(), make_client(), make_client(), make_client()
    with a.lock("pool", ttl=5, semaphore=2) as first, \
            b.lock("pool", ttl=5, semaphore=2) as second:
        assert (first.token, second.token) == (1, 2)
        info = observer.inspect("pool")
        assert info.capacity == 2 and len(info.holders) == 2
        assert c.try_lock("pool", ttl=5, semaphore=2) is None
        with pytest.raises(leasekeeper.CapacityMismatch) as capacity:
            c.lock("pool", ttl=5, wait=0, semaphore=3)
        assert capacity.value.message == (
            "capacity mismatch: pool is a semaphore of 2, asked 3")
        with pytest.raises(leasekeeper.ModeMismatch) as mode:
            c.lock("pool", ttl=5, wait=0)
        assert mode.value.message == "mode mismatch: pool is a semaphore of 2"
        waiting = threading.Thread(
            target=lambda: c.lock("pool", ttl=5, wait=5, semaphore=2).release())
        waiting.start()
        while observer.inspect("pool").queue == []:
            time.sleep(0.01)
        first.release()
        waiting.join(5)
        assert not waiting.is_alive()
    assert observer.inspect("pool").capacity == 0


def test_holders_name_their_mode(make_client: MakeClient) -> None:
    a, b, c, observer = make_client(), make_client(), make_client(), make_client()
    with a.lock("m/x", ttl=5), b.lock("m/s", ttl=5, shared=True), \
            c.lock("m/p", ttl=5, semaphore=1):
        modes = {s.lock: (s.holders[0].mode, s.holders[0].shared)
                 for s in observer.list_locks("m/")}
        assert modes == {"m/x": ("exclusive", False), "m/s": ("shared", True),
                         "m/p": ("semaphore", False)}
        assert c.status().holds[0].mode == "semaphore"
    observer.lock("m/q", ttl=5, semaphore=2)
    released = observer.force_release("m/q")
    assert [(r.mode, r.shared) for r in released] == [("semaphore", False)]


def test_a_bad_semaphore_capacity_is_refused_before_any_call(
        make_client: MakeClient) -> None:
    client = make_client()
    with pytest.raises(ValueError):
        client.lock("pool", semaphore=0)
    with pytest.raises(ValueError):
        client.lock("pool", semaphore=65536)
    with pytest.raises(ValueError):
        client.lock("pool", shared=True, semaphore=2)
    with pytest.raises(TypeError):
        client.lock("pool", semaphore=True)


def test_holding_a_lock_twice_is_client_busy_before_any_call(
        make_client: MakeClient) -> None:
    client = make_client()
    with client.lock("jobs/a", ttl=5) as lease:
        with pytest.raises(leasekeeper.ClientBusy):
            client.lock("jobs/a", ttl=5)
        assert lease.held


def test_writes_are_fenced_by_the_token_and_checked_against_the_holder(
        make_client: MakeClient, leasekeeperd: LocalServer) -> None:
    old_holder, new_holder = make_client(), make_client()
    old = old_holder.lock("jobs/a", ttl=5)
    old.write("cursor", b"1")
    assert new_holder.read("jobs/a", "cursor") == b"1"
    assert new_holder.read("jobs/a", "nothing") is None
    new_holder.force_release("jobs/a", reason="test: take over")
    with new_holder.lock("jobs/a", ttl=5) as new:
        new.write("cursor", "2")
        # The old holder's own write (past the lease's end on its side too)
        # is refused by the holder check.
        with pytest.raises(leasekeeper.NotHolder) as not_holder:
            old_holder._write(old._state, "cursor", b"3")
        assert not_holder.value.code == grpc.StatusCode.FAILED_PRECONDITION
        assert not_holder.value.reason == "NOT_HOLDER"
        # A write that only carries the old token (a store-only writer, no
        # holder check) is refused by the token rule.
        stub = pb_grpc.LockServiceStub(
            grpc.insecure_channel(leasekeeperd.address))
        with pytest.raises(grpc.RpcError) as raw:
            stub.Write(pb.WriteRequest(lock="jobs/a", key="cursor",
                                       value=b"3", token=old.token))
        stale = from_rpc_error(raw.value)
        assert isinstance(stale, leasekeeper.StaleToken)
        assert stale.code == grpc.StatusCode.FAILED_PRECONDITION
        assert stale.reason == "STALE_TOKEN"
        assert isinstance(stale, leasekeeper.LeasekeeperError)
    assert new_holder.read("jobs/a", "cursor") == b"2"


def test_force_release_sets_lost_within_the_grace_and_the_exit_reports_it(
        make_client: MakeClient) -> None:
    """Live: a 30 s lease is found lost within the 0.5 s session grace (a
    keepalive at least every grace), not at its next third of the ttl."""
    client, operator = make_client(), make_client()
    with pytest.raises(leasekeeper.LeaseLost) as lost:
        with client.lock("jobs/a", ttl=30) as lease:
            [released] = operator.force_release("jobs/a", client.client_id,
                                                "test")
            released_at = time.monotonic()
            assert released.token == lease.token
            assert lease.lost.wait(2.0)
            assert time.monotonic() - released_at < 0.5 + 0.3
            assert lease.end_reason == leasekeeper.EndReason.FORCED
            with pytest.raises(leasekeeper.LeaseLost):
                lease.check()
            with pytest.raises(leasekeeper.LeaseLost):
                lease.write("k", b"v")
    assert lost.value.end_reason == "forced"


def test_force_release_of_a_free_lock_says_it_has_no_holder(
        make_client: MakeClient) -> None:
    with pytest.raises(leasekeeper.NoHolder) as error:
        make_client().force_release("jobs/free")
    assert error.value.reason == "NO_HOLDER"
    assert error.value.message == "jobs/free has no holder"
    assert not isinstance(error.value, leasekeeper.NotHolder)


def test_a_lease_without_renewals_expires_on_the_client_first(
        make_client: MakeClient) -> None:
    """Live: lets a 0.5 s lease run out."""
    client, observer = make_client(), make_client()
    lease = client.lock("jobs/a", ttl=0.5)
    client.pause_renewals_for_testing(True)
    assert lease.lost.wait(1.0)
    assert lease.end_reason == "expired"
    with pytest.raises(leasekeeper.LeaseLost) as lost:
        lease.check()
    assert lost.value.end_reason == leasekeeper.EndReason.EXPIRED
    time.sleep(0.1)
    assert observer.inspect("jobs/a").holders == []


def test_a_session_cut_past_the_grace_ends_its_leases_session_lost(
        make_client: MakeClient) -> None:
    """Live: the fixture's server has a 0.5 s grace."""
    client, other = make_client(), make_client()
    lease = client.lock("jobs/a", ttl=10)
    client.suspend_session_for_testing(1.5)
    with other.lock("jobs/a", ttl=5, wait=5) as taken:
        assert taken.token == 2
    assert lease.lost.wait(3.0)
    assert lease.end_reason == "session_lost"
    again = client.lock("jobs/a", ttl=5, wait=5)  # a new session
    assert again.token == 3
    again.release()


def test_a_wait_for_cycle_aborts_the_youngest_client(
        make_client: MakeClient) -> None:
    older, younger = make_client(), make_client()
    older_lease = older.lock("cycle/x", ttl=10)
    younger_lease = younger.lock("cycle/y", ttl=10)
    got: list[leasekeeper.Lease] = []
    waiter = threading.Thread(
        target=lambda: got.append(older.lock("cycle/y", ttl=10, wait=10)))
    waiter.start()
    while not older.inspect("cycle/y").queue:
        time.sleep(0.01)
    with pytest.raises(leasekeeper.DeadlockVictim) as victim:
        younger.lock("cycle/x", ttl=10, wait=10)
    assert victim.value.code == grpc.StatusCode.ABORTED
    assert younger.client_id in victim.value.victims
    assert younger_lease.end_reason == "deadlock_victim"
    waiter.join(5)
    assert got[0].held and older_lease.held


def test_a_server_limit_is_limit_exceeded_naming_it(
        make_client: MakeClient) -> None:
    with pytest.raises(leasekeeper.LimitExceeded) as limit:
        make_client().lock("x" * 300, ttl=5)
    assert limit.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert limit.value.limit == "max-lock-name-bytes"
    assert limit.value.limit_value == 256


def test_an_unreachable_server_is_unavailable() -> None:
    with LocalServer() as server:
        address = server.address
    with leasekeeper.Client(address, call_timeout=0.3) as client:
        with pytest.raises(leasekeeper.Unavailable) as down:
            client.lock("jobs/a", ttl=5, wait=0.2)
        assert down.value.code == grpc.StatusCode.UNAVAILABLE


def test_a_dead_first_endpoint_fails_over_to_the_next(
        leasekeeperd: LocalServer) -> None:
    with LocalServer() as gone:
        dead = gone.address
    with leasekeeper.Client([dead, leasekeeperd.address],
                            call_timeout=1.0) as client:
        with client.lock("jobs/a", ttl=5, wait=5) as lease:
            assert lease.token == 1


def test_observation_calls(make_client: MakeClient) -> None:
    client = make_client(holder_label="pod-7")
    assert client.status().registered is False
    with client.lock("jobs/a", ttl=5), client.lock("jobs/b", ttl=5):
        status = client.status()
        assert status.registered and status.session == "open"
        assert sorted(h.lock for h in status.holds) == ["jobs/a", "jobs/b"]
        assert {h.holder_label for h in status.holds} == {"pod-7"}
        locks = client.list_locks("jobs/", page_size=1)
        assert isinstance(locks, list), "every page, fetched at the call"
        assert [s.lock for s in locks] == ["jobs/a", "jobs/b"]
        assert client.list_locks("other/") == []


def test_the_default_client_id_is_host_pid_random() -> None:
    client_id = leasekeeper.default_client_id()
    assert re.fullmatch(r"[^/]+/\d+/[0-9a-f]{8}", client_id)
    assert client_id.split("/")[1] == str(__import__("os").getpid())
    assert leasekeeper.default_client_id() != client_id


def test_closing_the_client_releases_its_leases(
        make_client: MakeClient) -> None:
    observer = make_client()
    with leasekeeper.Client(observer_address(observer)) as client:
        lease = client.lock("jobs/a", ttl=30)
    assert lease.end_reason == "released"
    assert observer.inspect("jobs/a").holders == []


def observer_address(client: leasekeeper.Client) -> str:
    return client._endpoints._targets[0]


BAD_LOCK_ARGUMENTS = [
    ({"name": ""}, ValueError),
    ({"name": 7}, TypeError),
    ({"ttl": 0}, ValueError),
    ({"ttl": 86401}, ValueError),
    ({"ttl": "30"}, TypeError),
    ({"ttl": True}, TypeError),
    ({"wait": -1}, ValueError),
    ({"shared": 1}, TypeError),
    ({"holder_label": "x" * 257}, ValueError),
]


@pytest.mark.parametrize("arguments,exception", BAD_LOCK_ARGUMENTS)
def test_bad_lock_arguments_raise_before_any_call(
        arguments: dict[str, object], exception: type[Exception]) -> None:
    # Nothing listens on the address: any call would end in Unavailable.
    with leasekeeper.Client("127.0.0.1:1", call_timeout=0.2) as client:
        call = {"name": "jobs/a", "ttl": 5.0, **arguments}
        with pytest.raises(exception):
            client.lock(**call)  # type: ignore[arg-type]
        if "wait" not in arguments:
            with pytest.raises(exception):
                client.try_lock(**call)  # type: ignore[arg-type]


def test_bad_client_and_store_arguments_raise_before_any_call() -> None:
    with pytest.raises(TypeError):
        leasekeeper.Client(7)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        leasekeeper.Client([])
    with pytest.raises(ValueError):
        leasekeeper.Client("127.0.0.1:1", client_id="")
    with pytest.raises(ValueError):
        leasekeeper.Client("127.0.0.1:1", call_timeout=0)
    with pytest.raises(ValueError):
        leasekeeper.Client("127.0.0.1:1", tls=leasekeeper.TlsFiles(
            cert_chain="only-the-cert.pem"))
    with leasekeeper.Client("127.0.0.1:1", call_timeout=0.2) as client:
        with pytest.raises(ValueError):
            client.read("", "k")
        with pytest.raises(TypeError):
            client.read("a", b"k")  # type: ignore[arg-type]
        with pytest.raises(ValueError):
            client.list_locks(page_size=-1)
        with pytest.raises(TypeError):
            client.run_as_leader("a", 5, work=lambda lease, term: None,
                                 stop=None)  # type: ignore[arg-type]


def test_a_lease_write_checks_its_arguments_before_any_call(
        make_client: MakeClient) -> None:
    with make_client().lock("jobs/a", ttl=5) as lease:
        with pytest.raises(ValueError):
            lease.write("k", b"")
        with pytest.raises(TypeError):
            lease.write("k", 5)  # type: ignore[arg-type]
        with pytest.raises(ValueError):
            lease.write("", b"v")


def test_renew_extends_the_deadline_and_reports_a_lost_lease(
        make_client: MakeClient) -> None:
    client, operator = make_client(), make_client()
    lease = client.lock("jobs/a", ttl=3)
    client.pause_renewals_for_testing(True)
    time.sleep(0.2)
    before = lease.time_left()
    lease.renew()
    assert lease.time_left() > before + 0.1
    operator.force_release("jobs/a")
    with pytest.raises(leasekeeper.LeaseLost) as lost:
        lease.renew()
    assert lost.value.end_reason == "forced" and lease.lost.is_set()
    with pytest.raises(leasekeeper.LeaseLost):
        lease.release()  # ended already


def test_releasing_twice_reports_the_first_release(
        make_client: MakeClient) -> None:
    lease = make_client().lock("jobs/a", ttl=5)
    lease.release()
    with pytest.raises(leasekeeper.LeaseLost) as again:
        lease.release()
    assert again.value.end_reason == "released"


def test_a_session_cut_shorter_than_the_grace_is_resumed(
        make_client: MakeClient) -> None:
    """Live: cuts the stream for 0.2 s of the 0.5 s grace."""
    client, observer = make_client(), make_client()
    with client.lock("jobs/a", ttl=3) as lease:
        client.suspend_session_for_testing(0.2)
        time.sleep(0.1)
        assert observer.status(client.client_id).session == "grace"
        time.sleep(0.6)
        assert observer.status(client.client_id).session == "open"
        assert lease.held and not lease.lost.is_set()
        [holder] = observer.inspect("jobs/a").holders
        assert holder.token == lease.token


def test_a_newer_session_of_the_same_client_id_ends_the_older_ones_leases(
        make_client: MakeClient) -> None:
    first = make_client(client_id="batch/shared-id")
    second = make_client(client_id="batch/shared-id")
    lease = first.lock("jobs/a", ttl=30)
    with second.lock("jobs/b", ttl=30):
        assert lease.lost.wait(2.0)
        assert lease.end_reason == "session_lost"
    again = first.lock("jobs/a", ttl=30, wait=5)  # on a session of its own
    assert again.held and again.token == 2
    again.release()


def test_delete_is_fenced_and_holder_checked_like_a_write(
        make_client: MakeClient) -> None:
    old_holder, new_holder = make_client(), make_client()
    old = old_holder.lock("jobs/a", ttl=5)
    old.write("part-1", b"a")
    old.write("part-2", b"a")
    assert old.delete("part-1") is True
    assert old.delete("part-1") is False  # nothing left: not an error
    assert new_holder.read("jobs/a", "part-1") is None
    new_holder.force_release("jobs/a", reason="test: take over")
    with new_holder.lock("jobs/a", ttl=5) as new:
        # The old holder, past its lease, is refused by the holder check.
        with pytest.raises(leasekeeper.NotHolder) as not_holder:
            old_holder._delete(old._state, "part-2")
        assert not_holder.value.reason == "NOT_HOLDER"
        assert new.delete("part-2") is True
    # Once the lease has ended nothing is sent.
    with pytest.raises(leasekeeper.LeaseLost, match="not deleting"):
        new.delete("part-2")
    with pytest.raises(ValueError):
        old.delete("")


def test_keys_lists_a_locks_keys_in_pages(make_client: MakeClient) -> None:
    client, observer = make_client(), make_client()
    with client.lock("jobs/a", ttl=5) as lease:
        for key in ("part-3", "part-1", "part-2"):
            lease.write(key, b"v")
        lease.delete("part-2")
    first = observer.list_keys("jobs/a", limit=1)
    assert first == leasekeeper.KeyPage(["part-1"], "part-1")
    rest = observer.list_keys("jobs/a", after=first.next_after or "")
    assert rest == leasekeeper.KeyPage(["part-3"], None)
    assert observer.keys("jobs/a") == ["part-1", "part-3"]
    assert observer.keys("nobody/uses") == []
    with pytest.raises(ValueError):
        observer.list_keys("jobs/a", limit=-1)
    with pytest.raises(ValueError):
        observer.list_keys("")
