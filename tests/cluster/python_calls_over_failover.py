"""A Python client's one-shot calls over a failover, for
client_failover_test.cc: takes a lease with the sync Client and one with the
asyncio Client on `endpoints`, prints "ready", waits until `go_file` exists
(the test creates it right after it killed the leader), then writes under
each lease, reads and inspects, each call within the Client's call timeout.
Prints "ok sync SECONDS" and "ok aio SECONDS", or "failed sync|aio ERROR".

Usage: python_calls_over_failover.py ENDPOINTS GO_FILE"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time

import leasekeeper
import leasekeeper.aio

CALL_TIMEOUT = 8.0


def wait_for(path: str) -> float:
    while not os.path.exists(path):
        time.sleep(0.005)
    return time.monotonic()


def sync_calls(lease: leasekeeper.Lease, client: leasekeeper.Client,
               go: threading.Event, started: list[float]) -> None:
    go.wait()
    try:
        lease.write("k", b"sync")
        assert client.read("py-sync", "k") == b"sync"
        holders = client.inspect("py-sync").holders
        assert [h.token for h in holders] == [lease.token], holders
        print(f"ok sync {time.monotonic() - started[0]:.3f}", flush=True)
    except Exception as error:  # the test reads the line
        print(f"failed sync {error!r}", flush=True)


async def main(endpoints: str, go_file: str) -> None:
    with leasekeeper.Client(endpoints, client_id="py-sync",
                            call_timeout=CALL_TIMEOUT) as client:
        lease = client.lock("py-sync", ttl=30, wait=10)
        async with leasekeeper.aio.Client(
                endpoints, client_id="py-aio",
                call_timeout=CALL_TIMEOUT) as aclient:
            alease = await aclient.lock("py-aio", ttl=30, wait=10)
            go = threading.Event()
            started: list[float] = []
            worker = threading.Thread(target=sync_calls,
                                      args=(lease, client, go, started))
            worker.start()
            print("ready", flush=True)
            loop = asyncio.get_running_loop()
            started.append(await loop.run_in_executor(None, wait_for,
                                                      go_file))
            go.set()
            try:
                await alease.write("k", b"aio")
                holders = (await aclient.inspect("py-aio")).holders
                assert [h.token for h in holders] == [alease.token], holders
                print(f"ok aio {time.monotonic() - started[0]:.3f}",
                      flush=True)
            except Exception as error:
                print(f"failed aio {error!r}", flush=True)
            await loop.run_in_executor(None, worker.join)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
