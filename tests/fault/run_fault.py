#!/usr/bin/env python3
"""The fault-injection run: real leasekeeperd processes on loopback, several
fault_worker processes doing fenced read-modify-write under locks, a nemesis
that kills (SIGKILL) and pauses (SIGSTOP/SIGCONT) the servers, then a final
read of every counter and checker.py over the recorded history.

  run_fault.py --bin-dir build/bin --duration 20 --workers 4 --locks 2 \\
               --nemesis kill,pause [--out DIR] [--seed N]

Targets:
  single (default): one daemon on a fixed loopback port and a data dir; the
    nemesis kills it and starts it again on the same port and data (a
    restart), or pauses it.
  --split-brain: a deliberately broken service, for proving that the checker
    catches what an unfenced leader would do: two daemons, each with its own
    data, both serving the same locks, the workers split between them (as
    two nodes that both believe they lead, e.g. a node whose append skips
    the etcd compare). The run must then report violations; with
    --expect-violation the exit status says whether it did.
  --cluster: three etcd members and three leasekeeperd nodes through the
    cluster harness (tests/cluster/cluster.py), when it is there; the
    nemesis then kills and pauses leaders, followers and etcd members.

Everything listens on 127.0.0.1 only and is stopped by PID. Exit status: 0
when the history is valid (with --expect-violation: when it is not), 1
otherwise, 2 when the run itself could not be made.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import checker  # noqa: E402

LISTENING_PREFIX = b"leasekeeperd listening on "


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def pdeathsig(args: list[str]) -> list[str]:
    """util-linux's setpriv --pdeathsig: a crashed run leaves no daemon."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "KILL", *args] if setpriv else args


class Daemon:
    """One leasekeeperd on a fixed loopback port and data dir, which
    survive its restarts."""

    def __init__(self, binary: str, port: int, data_dir: str, log: str,
                 extra_flags: list[str]) -> None:
        self.binary = binary
        self.port = port
        self.address = f"127.0.0.1:{port}"
        self.data_dir = data_dir
        self.log_path = log
        self.extra_flags = extra_flags
        self.process: Optional[subprocess.Popen[bytes]] = None
        self.paused = False

    def start(self, timeout: float = 20.0) -> None:
        args = [self.binary, f"--listen={self.address}",
                f"--data-dir={self.data_dir}", "--log-level=warn",
                *self.extra_flags]
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(pdeathsig(args),
                                            stdout=subprocess.PIPE,
                                            stderr=log,
                                            stdin=subprocess.DEVNULL)
        assert self.process.stdout is not None
        line = b""
        deadline = time.monotonic() + timeout
        while b"\n" not in line:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError(f"leasekeeperd on {self.address} did not "
                                   f"serve within {timeout} s")
            ready, _, _ = select.select([self.process.stdout], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.process.stdout.fileno(), 256)
            if not chunk:
                # The port may still be held by the killed one's socket.
                code = self.process.wait()
                raise RuntimeError(f"leasekeeperd exited ({code}); see "
                                   f"{self.log_path}")
            line += chunk
        if not line.startswith(LISTENING_PREFIX):
            raise RuntimeError(f"unexpected first line {line!r}")

    def kill(self) -> None:
        if self.process is None:
            return
        self.resume()
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait()
        self.process = None

    def pause(self) -> None:
        if self.process is not None and not self.paused:
            os.kill(self.process.pid, signal.SIGSTOP)
            self.paused = True

    def resume(self) -> None:
        if self.process is not None and self.paused:
            os.kill(self.process.pid, signal.SIGCONT)
            self.paused = False

    def stop(self) -> None:
        if self.process is None:
            return
        self.resume()
        os.kill(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self.process = None


class NemesisLog:
    def __init__(self, path: str) -> None:
        self.out = open(path, "a", encoding="utf-8")

    def record(self, action: str, target: str) -> None:
        self.out.write(json.dumps({"process": "nemesis", "op": action,
                                   "type": "info", "lock": "",
                                   "target": target,
                                   "time": time.monotonic_ns()}) + "\n")
        self.out.flush()
        print(f"nemesis: {action} {target}", flush=True)


def run_nemesis(daemons: list[Daemon], actions: list[str], until: float,
                rng: random.Random, log: NemesisLog) -> None:
    """Single-node nemesis: kill-and-restart or pause-and-resume a daemon,
    one fault at a time, a fault every 1 to 3 s."""
    while time.monotonic() < until:
        time.sleep(rng.uniform(1.0, 3.0))
        if time.monotonic() >= until or not actions:
            break
        daemon = rng.choice(daemons)
        action = rng.choice(actions)
        if action == "kill":
            log.record("kill", daemon.address)
            daemon.kill()
            time.sleep(rng.uniform(0.1, 0.8))
            daemon.start()
            log.record("restarted", daemon.address)
        elif action == "pause":
            log.record("pause", daemon.address)
            daemon.pause()
            time.sleep(rng.uniform(0.2, 1.5))
            daemon.resume()
            log.record("resume", daemon.address)


def final_read(ctl: str, server: str, lock: str, key: str,
               history: str) -> None:
    """Reads the counter as process "final", recorded like a worker's."""
    with open(history, "a", encoding="utf-8") as out:
        def record(kind: str, **fields: object) -> None:
            out.write(json.dumps({"process": "final", "op": "read",
                                  "type": kind, "lock": lock,
                                  "time": time.monotonic_ns(), **fields})
                      + "\n")
            out.flush()
        for attempt in range(20):
            record("invoke")
            result = subprocess.run(
                [ctl, "--server", server, "--timeout", "5s", "-o", "json",
                 "read", lock, key], capture_output=True, text=True,
                timeout=30)
            if result.stdout.strip():
                answer = json.loads(result.stdout)
                value = int(answer["value"]) if answer.get("found") else 0
                record("ok", value=value)
                return
            record("info", message=result.stderr.strip())
            time.sleep(0.5)
    raise RuntimeError(f"could not read {lock} from {server}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--locks", type=int, default=2)
    parser.add_argument("--ttl", default="2s")
    parser.add_argument("--nemesis", default="kill,pause",
                        help="comma-separated: kill, pause (empty: none)")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--out", default=None,
                        help="keep the histories and logs here")
    parser.add_argument("--split-brain", action="store_true")
    parser.add_argument("--expect-violation", action="store_true")
    args = parser.parse_args()

    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    print(f"fault run: seed {seed}, {args.workers} workers, {args.locks} "
          f"locks, {args.duration} s, nemesis {args.nemesis or 'none'}"
          f"{', split brain' if args.split_brain else ''}", flush=True)
    leasekeeperd = os.path.join(args.bin_dir, "leasekeeperd")
    worker = os.path.join(args.bin_dir, "fault_worker")
    ctl = os.path.join(args.bin_dir, "leasekeeper-ctl")
    out = args.out or tempfile.mkdtemp(prefix="leasekeeper_fault_")
    os.makedirs(out, exist_ok=True)
    locks = [f"fault/{i}" for i in range(args.locks)]
    flags = ["--session-grace=3s"]

    daemons = [Daemon(leasekeeperd, free_port(), os.path.join(out, f"data{i}"),
                      os.path.join(out, f"leasekeeperd{i}.log"), flags)
               for i in range(2 if args.split_brain else 1)]
    workers: list[subprocess.Popen[bytes]] = []
    histories: list[str] = []
    try:
        for daemon in daemons:
            os.makedirs(daemon.data_dir, exist_ok=True)
            daemon.start()
        for i in range(args.workers):
            history = os.path.join(out, f"w{i}.jsonl")
            histories.append(history)
            servers = daemons[i % len(daemons)].address
            workers.append(subprocess.Popen(pdeathsig([
                worker, f"--servers={servers}", f"--process=w{i}",
                f"--locks={','.join(locks)}", "--key=counter",
                f"--duration={args.duration}s", f"--ttl={args.ttl}",
                f"--history={history}"]), stdin=subprocess.DEVNULL))
        nemesis = NemesisLog(os.path.join(out, "nemesis.jsonl"))
        actions = [a for a in args.nemesis.split(",") if a]
        run_nemesis(daemons, actions, time.monotonic() + args.duration, rng,
                    nemesis)
        for process in workers:
            try:
                process.wait(args.duration + 60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        final = os.path.join(out, "final.jsonl")
        histories.append(final)
        for lock in locks:
            final_read(ctl, daemons[0].address, lock, "counter", final)
    except RuntimeError as error:
        print(f"fault run could not be made: {error}", file=sys.stderr)
        return 2
    finally:
        for process in workers:
            if process.poll() is None:
                process.kill()
                process.wait()
        for daemon in daemons:
            daemon.stop()

    report = checker.check(checker.read_events(histories))
    for kind, (count, example) in checker.kinds(report).items():
        print(f"VIOLATION x{count} {kind}: e.g. {example}")
    print(report.summary())
    if report.grants == 0 or report.acknowledged_writes == 0:
        print("no grant or write was acknowledged: the run tested nothing",
              file=sys.stderr)
        print(f"histories in {out}")
        return 2
    as_expected = report.valid != args.expect_violation
    if as_expected and args.out is None:
        shutil.rmtree(out, ignore_errors=True)
    else:
        print(f"histories in {out}")
    return 0 if as_expected else 1


if __name__ == "__main__":
    sys.exit(main())
