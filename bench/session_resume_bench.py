"""Time from a restarted leasekeeperd's listen to the first resumed keepalive
of every one of N sessions (default 1,000), after a SIGKILL.

    PYTHONPATH=python /usr/bin/python3 bench/session_resume_bench.py \
        [--sessions 1000] [--channels 8] [--fsync batch] [--runs 3] \
        [--binary build/bin/leasekeeperd]

Each run starts leasekeeperd on a free 127.0.0.1 port with a fresh data
dir, opens N sessions (raw Session streams on the generated stubs, spread
over --channels channels) and has each take a lease on its own lock through
its session, so every session has something to keep. Then it SIGKILLs the
daemon, starts it again on the same data dir, and, from the moment the new
process prints its "listening" line, has every client resume: a new stream
whose `open` names the old session id, then one keepalive. It reports:
  - recovery: from the restart's exec to its listen line (log replay);
  - resume: from listen to the last of the N keepalive acks, and the
    median and 99th percentile of the per-session times (listen to that
    session's ack);
  - the server's side: from listen to the last resumption in its log
    (event=session_resumed, at --log-level=debug on the restarted daemon);
and checks that every session came back `resumed` and renewed its lease.
The clients are Python (grpc.aio, one event loop): their own cost is part
of the figure, so it is an upper bound on the server's.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from typing import IO, Dict, List, Optional, Tuple

import grpc

from leasekeeper.v1 import lock_service_pb2 as pb
from leasekeeper.v1 import lock_service_pb2_grpc as pb_grpc


def start_daemon(binary: str, data_dir: str, fsync: str, log_level: str,
                 log: Optional[IO[bytes]] = None) -> Tuple[subprocess.Popen, str, float, float, float]:
    """Starts leasekeeperd; returns it, its address, the exec instant and
    the instant its listen line was read (time.monotonic()), and the latter
    on the wall clock (the clock of its log's timestamps)."""
    started = time.monotonic()
    process = subprocess.Popen(
        [binary, "--listen=127.0.0.1:0", f"--data-dir={data_dir}",
         f"--fsync={fsync}", f"--log-level={log_level}"],
        stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL)
    assert process.stdout is not None
    line = process.stdout.readline().decode()
    listening = time.monotonic()
    listening_wall = time.time()
    prefix = "leasekeeperd listening on "
    if not line.startswith(prefix):
        process.kill()
        raise RuntimeError(f"leasekeeperd did not start: {line!r}")
    return process, line[len(prefix):].strip(), started, listening, listening_wall


def last_resume_after(log_path: str, listening_wall: float) -> float:
    """Seconds from listen to the server's last session_resumed log line."""
    last = None
    with open(log_path, encoding="utf-8") as log:
        for line in log:
            if "event=session_resumed" not in line:
                continue
            stamp = line.split(" ", 1)[0].removeprefix("ts=")
            last = datetime.datetime.fromisoformat(stamp).timestamp()
    if last is None:
        raise RuntimeError("no session_resumed in the log")
    return last - listening_wall


class Session:
    """One client's Session stream (written and read in turn)."""

    def __init__(self, stub: pb_grpc.LockServiceStub) -> None:
        self._call = stub.Session()

    async def ask(self, request: pb.SessionRequest) -> pb.SessionResponse:
        await self._call.write(request)
        while True:
            response = await self._call.read()
            if response is grpc.aio.EOF:
                raise RuntimeError("session stream ended")
            if not response.HasField("notice"):
                return response

    def cancel(self) -> None:
        self._call.cancel()


async def open_sessions(address: str, count: int, channels: int) -> Tuple[List[grpc.aio.Channel], List[Session], List[str]]:
    chans = [grpc.aio.insecure_channel(address) for _ in range(channels)]
    stubs = [pb_grpc.LockServiceStub(c) for c in chans]

    sessions: List[Session] = []

    async def one(i: int) -> str:
        session = Session(stubs[i % channels])
        sessions.append(session)
        opened = await session.ask(pb.SessionRequest(
            open=pb.OpenSession(client_id=f"c{i}")))
        call = pb.SessionRequest(call=pb.SessionCall(
            call_id=1, acquire=pb.AcquireRequest(lock=f"lock-{i}", ttl_ms=60_000)))
        answer = await session.ask(call)
        if not answer.call_result.HasField("acquire"):
            raise RuntimeError(f"acquire failed: {answer}")
        # Left open: the SIGKILL breaks it, as a crash would.
        return opened.opened.session_id

    ids = await asyncio.gather(*(one(i) for i in range(count)))
    return chans, sessions, list(ids)


async def resume_all(address: str, ids: List[str], channels: int, listening: float) -> List[float]:
    chans = [grpc.aio.insecure_channel(address) for _ in range(channels)]
    stubs = [pb_grpc.LockServiceStub(c) for c in chans]

    async def one(i: int, session_id: str) -> float:
        session = Session(stubs[i % channels])
        opened = await session.ask(pb.SessionRequest(open=pb.OpenSession(
            client_id=f"c{i}", resume_session_id=session_id)))
        if not opened.opened.resumed:
            raise RuntimeError(f"session {session_id} not resumed: {opened}")
        ack = await session.ask(pb.SessionRequest(
            keepalive=pb.Keepalive(sequence=1)))
        done = time.monotonic() - listening
        if ack.keepalive_ack.renewed_leases != 1:
            raise RuntimeError(f"session {session_id} renewed {ack}")
        session.cancel()
        return done

    times = await asyncio.gather(*(one(i, s) for i, s in enumerate(ids)))
    for c in chans:
        await c.close()
    return list(times)


async def run_once(binary: str, sessions: int, channels: int, fsync: str) -> Dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="lk-resume-") as data_dir:
        first, address, _, _, _ = start_daemon(binary, data_dir, fsync, "warn")
        chans, streams, ids = await open_sessions(address, sessions, channels)
        first.send_signal(signal.SIGKILL)
        first.wait()
        for stream in streams:
            stream.cancel()
        for c in chans:
            await c.close()
        log_path = os.path.join(data_dir, "restart.log")
        with open(log_path, "wb") as log:
            # debug: the server logs each resumption (event=session_resumed).
            second, address, started, listening, listening_wall = start_daemon(
                binary, data_dir, fsync, "debug", log)
            try:
                times = await resume_all(address, ids, channels, listening)
            finally:
                second.terminate()
                second.wait()
        server_side = last_resume_after(log_path, listening_wall)
    times.sort()
    return {
        "recovery": listening - started,
        "last": times[-1],
        "median": statistics.median(times),
        "p99": times[min(len(times) - 1, int(len(times) * 0.99))],
        "server_last_resume": server_side,
    }


async def run_all(args: argparse.Namespace) -> None:
    for run in range(args.runs):
        r = await run_once(args.binary, args.sessions, args.channels, args.fsync)
        print(f"run {run + 1}: recovery (exec to listen) {r['recovery'] * 1000:.0f} ms; "
              f"listen to all {args.sessions} resumed keepalives acknowledged "
              f"{r['last'] * 1000:.0f} ms (per session median {r['median'] * 1000:.0f} ms, "
              f"p99 {r['p99'] * 1000:.0f} ms); the server's last resumption "
              f"{r['server_last_resume'] * 1000:.0f} ms after listen")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--channels", type=int, default=8)
    parser.add_argument("--fsync", default="batch", choices=["always", "batch", "never"])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--binary", default=os.path.join("build", "bin", "leasekeeperd"))
    args = parser.parse_args()
    print(f"sessions={args.sessions} channels={args.channels} fsync={args.fsync}")
    asyncio.run(run_all(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
