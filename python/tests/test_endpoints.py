"""Several endpoints: the Endpoints choice on its own, and a Client (sync and
asyncio) against a stand-in follower that refuses every call with NOT_LEADER
naming a real leasekeeperd, as a cluster node that is not the leader does."""

from __future__ import annotations

import asyncio
import socket
import threading
from concurrent import futures
from typing import Any, Iterator, Optional

import grpc
import pytest

import leasekeeper
import leasekeeper.aio
from leasekeeper._common import Endpoints
from leasekeeper.errors import NotLeader, from_rpc_error
from leasekeeper.testing import LocalServer
from leasekeeper.v1 import lock_service_pb2 as pb


class FakeFollower(grpc.GenericRpcHandler):  # type: ignore[misc]
    """Refuses every method: UNAVAILABLE "not leader", trailing metadata
    leasekeeper-reason NOT_LEADER, leasekeeper-error-bin and (when set)
    leasekeeper-leader. Counts the calls by method name."""

    def __init__(self, leader: str) -> None:
        self.leader = leader
        self.calls: dict[str, int] = {}
        self._mutex = threading.Lock()
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        self._server.add_generic_rpc_handlers((self,))
        port = self._server.add_insecure_port("127.0.0.1:0")
        self.address = f"127.0.0.1:{port}"
        self._server.start()

    def stop(self) -> None:
        self._server.stop(grace=None)

    def _refuse(self, context: grpc.ServicerContext) -> None:
        detail = pb.ErrorDetail(reason=pb.NOT_LEADER)
        metadata: list[tuple[str, Any]] = [
            ("leasekeeper-reason", "NOT_LEADER"),
            ("leasekeeper-error-bin", detail.SerializeToString())]
        if self.leader:
            metadata.append(("leasekeeper-leader", self.leader))
        context.set_trailing_metadata(tuple(metadata))
        context.abort(grpc.StatusCode.UNAVAILABLE,
                      f"not leader; leader is {self.leader}" if self.leader
                      else "not leader; leader unknown")

    def service(self, details: grpc.HandlerCallDetails
                ) -> Optional[grpc.RpcMethodHandler]:
        method = details.method.rsplit("/", 1)[-1]
        with self._mutex:
            self.calls[method] = self.calls.get(method, 0) + 1
        if method == "Session":
            def stream(requests: Iterator[bytes],
                       context: grpc.ServicerContext) -> Iterator[bytes]:
                self._refuse(context)
                yield b""  # never reached: abort raises
            return grpc.stream_stream_rpc_method_handler(stream)

        def unary(request: bytes, context: grpc.ServicerContext) -> bytes:
            self._refuse(context)
            return b""
        return grpc.unary_unary_rpc_method_handler(unary)


@pytest.fixture
def server() -> Iterator[LocalServer]:
    with LocalServer(session_grace=0.5) as started:
        yield started


@pytest.fixture
def follower(server: LocalServer) -> Iterator[FakeFollower]:
    fake = FakeFollower(server.address)
    yield fake
    fake.stop()


def dead_address() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"


def holders(server: LocalServer, lock: str) -> list[str]:
    with leasekeeper.Client(server.address) as direct:
        return [h.client_id for h in direct.inspect(lock).holders]


# -- the choice, without a server ---------------------------------------------

def endpoints(*targets: str) -> Endpoints:
    return Endpoints(list(targets), lambda target: grpc.insecure_channel(target))


def test_a_refusal_naming_a_leader_moves_there() -> None:
    choice = endpoints("a:1", "b:1", "c:1")
    generation, _ = choice.current()
    choice.failed(generation, "elsewhere:7233")
    assert choice.target == "elsewhere:7233"


def test_other_failures_move_to_the_next_endpoint_wrapping() -> None:
    choice = endpoints("a:1", "b:1")
    seen = []
    for _ in range(3):
        generation, _ = choice.current()
        choice.failed(generation)
        seen.append(choice.target)
    assert seen == ["b:1", "a:1", "b:1"]


def test_after_a_redirect_the_next_failure_goes_to_the_lists_next() -> None:
    choice = endpoints("a:1", "b:1", "c:1")
    generation, _ = choice.current()
    choice.failed(generation, "c:1")
    generation, _ = choice.current()
    choice.failed(generation)
    assert choice.target == "b:1"


def test_a_failure_of_an_older_generation_changes_nothing() -> None:
    choice = endpoints("a:1", "b:1", "c:1")
    old, _ = choice.current()
    choice.failed(old)
    choice.failed(old)
    assert choice.target == "b:1"


def test_a_node_naming_itself_counts_as_its_failure() -> None:
    choice = endpoints("a:1", "b:1")
    generation, _ = choice.current()
    choice.failed(generation, "a:1")
    assert choice.target == "b:1"


# -- against a server ---------------------------------------------------------

def test_the_refusal_carries_the_leader(follower: FakeFollower) -> None:
    with grpc.insecure_channel(follower.address) as channel:
        stub = leasekeeper.v1.lock_service_pb2_grpc.LockServiceStub(channel)
        with pytest.raises(grpc.RpcError) as raised:
            stub.Inspect(pb.InspectRequest(lock="x"), timeout=5)
    error = from_rpc_error(raised.value)
    assert isinstance(error, NotLeader)
    assert isinstance(error, leasekeeper.Unavailable)
    assert error.leader == follower.leader


def test_client_follows_not_leader_to_the_named_leader(
        server: LocalServer, follower: FakeFollower) -> None:
    with leasekeeper.Client(follower.address, client_id="py-redirected",
                            call_timeout=2) as client:
        with client.lock("py/redirected", ttl=10, wait=5) as lease:
            assert holders(server, "py/redirected") == ["py-redirected"]
            assert lease.token > 0
    assert follower.calls.get("Session", 0) + follower.calls.get(
        "Acquire", 0) >= 1


def test_client_skips_an_unreachable_endpoint(server: LocalServer) -> None:
    with leasekeeper.Client([dead_address(), server.address],
                            client_id="py-skipper", call_timeout=2) as client:
        with client.lock("py/skipper", ttl=10, wait=5):
            assert holders(server, "py/skipper") == ["py-skipper"]


def test_a_node_without_a_leader_sends_calls_to_the_next_endpoint(
        server: LocalServer, follower: FakeFollower) -> None:
    follower.leader = ""
    with leasekeeper.Client([follower.address, server.address],
                            client_id="py-next", call_timeout=2) as client:
        with client.lock("py/next", ttl=10, wait=5):
            assert holders(server, "py/next") == ["py-next"]


def test_asyncio_client_follows_not_leader(
        server: LocalServer, follower: FakeFollower) -> None:
    async def body() -> None:
        async with leasekeeper.aio.Client(
                follower.address, client_id="py-aio-redirected",
                call_timeout=2) as client:
            async with client.lock("py/aio", ttl=10, wait=5):
                assert holders(server, "py/aio") == ["py-aio-redirected"]
    asyncio.run(body())
