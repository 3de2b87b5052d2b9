"""Acquire+release pairs per second from one Python process, with the
leasekeeper Python client, against a local leasekeeperd.

    PYTHONPATH=python /usr/bin/python3 bench/python_client_bench.py \
        [--seconds 5] [--address HOST:PORT]

Without --address it starts build/bin/leasekeeperd (leasekeeper.testing) on
a free 127.0.0.1 port with nothing on disk. It measures, each for --seconds:
  - raw stubs, 1 thread: Acquire + Release unary calls on the generated stub
    with no library around them (the floor: gRPC's C core and protobuf);
  - Client, 1 thread and 16 threads: client.lock(...) then lease.release(),
    each thread with its own Client and its own lock;
  - aio.Client, 64 tasks on one event loop, each with its own client and
    lock;
and, for the 1-thread Client run, the CPU time per pair of the whole process
(Python and the gRPC C core's threads) and of the calling thread, and the
time per pair cProfile attributes to the leasekeeper package's own Python
code (its functions' tottime, excluding what they call into), which is the
client's Python-level overhead.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import threading
import time
from typing import Callable, Optional

import leasekeeper
from leasekeeper import aio
from leasekeeper.testing import LocalServer
from leasekeeper.v1 import lock_service_pb2 as pb
from leasekeeper.v1 import lock_service_pb2_grpc as pb_grpc

import grpc


def raw_pairs(address: str, seconds: float) -> float:
    channel = grpc.insecure_channel(address)
    stub = pb_grpc.LockServiceStub(channel)
    pairs = 0
    deadline = time.monotonic() + seconds
    started = time.monotonic()
    while time.monotonic() < deadline:
        stub.Acquire(pb.AcquireRequest(client_id="raw", lock="bench/raw",
                                       ttl_ms=30_000), timeout=5)
        stub.Release(pb.ReleaseRequest(client_id="raw", lock="bench/raw"),
                     timeout=5)
        pairs += 1
    rate = pairs / (time.monotonic() - started)
    channel.close()
    return rate


def client_loop(client: leasekeeper.Client, lock: str, deadline: float,
                counts: list[int], index: int) -> None:
    pairs = 0
    while time.monotonic() < deadline:
        client.lock(lock, ttl=30, wait=5).release()
        pairs += 1
    counts[index] = pairs


def threaded_pairs(address: str, threads: int, seconds: float) -> float:
    clients = [leasekeeper.Client(address) for _ in range(threads)]
    for i, client in enumerate(clients):  # open the sessions first
        client.lock(f"bench/t{i}", ttl=30).release()
    counts = [0] * threads
    started = time.monotonic()
    deadline = started + seconds
    workers = [threading.Thread(target=client_loop,
                                args=(c, f"bench/t{i}", deadline, counts, i))
               for i, c in enumerate(clients)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    rate = sum(counts) / (time.monotonic() - started)
    for client in clients:
        client.close()
    return rate


async def aio_pairs(address: str, tasks: int, seconds: float) -> float:
    clients = [aio.Client(address) for _ in range(tasks)]
    for i, client in enumerate(clients):
        await (await client.lock(f"bench/a{i}", ttl=30)).release()
    counts = [0] * tasks

    async def loop(client: aio.Client, lock: str, deadline: float,
                   index: int) -> None:
        while time.monotonic() < deadline:
            lease = await client.lock(lock, ttl=30, wait=5)
            await lease.release()
            counts[index] += 1

    started = time.monotonic()
    deadline = started + seconds
    await asyncio.gather(*(loop(c, f"bench/a{i}", deadline, i)
                           for i, c in enumerate(clients)))
    rate = sum(counts) / (time.monotonic() - started)
    for client in clients:
        await client.close()
    return rate


def overhead(address: str, pairs: int) -> tuple[float, float, float, float]:
    """(process CPU µs, calling thread CPU µs, leasekeeper Python µs,
    wall µs), per pair."""
    with leasekeeper.Client(address) as client:
        client.lock("bench/o", ttl=30).release()
        wall, process, thread = (time.monotonic(), time.process_time(),
                                 time.thread_time())
        for _ in range(pairs):
            client.lock("bench/o", ttl=30).release()
        wall = time.monotonic() - wall
        process = time.process_time() - process
        thread = time.thread_time() - thread
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(pairs):
            client.lock("bench/o", ttl=30).release()
        profiler.disable()
    package = os.path.dirname(os.path.abspath(leasekeeper.__file__))
    own = 0.0
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    for (filename, _, _), (_, _, tottime, _, _) in stats.items():
        if filename.startswith(package) and "/v1/" not in filename:
            own += tottime
    micro = 1e6 / pairs
    return process * micro, thread * micro, own * micro, wall * micro


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--address")
    parser.add_argument("--overhead-pairs", type=int, default=2000)
    args = parser.parse_args()

    server: Optional[LocalServer] = None
    address = args.address
    if address is None:
        server = LocalServer(session_grace=2.0).start()
        address = server.address
    try:
        runs: list[tuple[str, Callable[[], float]]] = [
            ("raw stubs, 1 thread", lambda: raw_pairs(address, args.seconds)),
            ("Client, 1 thread",
             lambda: threaded_pairs(address, 1, args.seconds)),
            ("Client, 16 threads",
             lambda: threaded_pairs(address, 16, args.seconds)),
            ("aio.Client, 64 tasks",
             lambda: asyncio.run(aio_pairs(address, 64, args.seconds))),
        ]
        print(f"{'run':<24} {'pairs/s':>9}")
        for name, run in runs:
            print(f"{name:<24} {run():>9.0f}", flush=True)
        process, thread, own, wall = overhead(address, args.overhead_pairs)
        print(f"per pair, Client 1 thread: wall {wall:.0f} us, process CPU "
              f"{process:.0f} us, calling thread CPU {thread:.0f} us, "
              f"leasekeeper Python code {own:.0f} us (cProfile tottime)")
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
