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
  --cluster: three etcd members and three leasekeeperd nodes
    (scripts/local_cluster.py); the nemesis then kills and pauses leaders,
    followers and etcd members (--roles narrows it, --leader-pause sets how
    long a leader stays stopped). Each worker is given every node, or with
    --pin-workers only node i mod 3 (it follows redirects, but goes back to
    that node after a failure), so that some workers stay with a leader that
    was paused and resumed: with nodes built with the failpoint
    LEASEKEEPER_FAILPOINT_UNGUARDED_APPEND (tests/fault/run-unguarded) such
    a leader serves on from its stale core beside the new one, and the run
    must report violations (--expect-violation).

Everything listens on 127.0.0.1 only and is stopped by PID. Exit status: 0
when the history is valid (with --expect-violation: when it is not), 1
otherwise, 2 when the run itself could not be made.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Callable, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))

import checker  # noqa: E402
from local_cluster import (Daemon, LocalCluster, Process,  # noqa: E402
                           pdeathsig)

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
        inject(daemon, daemon.address, rng.choice(actions), rng, log,
               down=(0.1, 0.8), paused=(0.2, 1.5))


def inject(target: Process, name: str, action: str, rng: random.Random,
           log: NemesisLog, down: tuple[float, float],
           paused: tuple[float, float]) -> None:
    """One fault, over before it returns: SIGKILL and a restart on the same
    data after `down` seconds, or SIGSTOP and SIGCONT after `paused`."""
    if action == "kill":
        log.record("kill", name)
        target.kill()
        time.sleep(rng.uniform(*down))
        target.start()  # type: ignore[attr-defined]
        log.record("restarted", name)
    elif action == "pause":
        log.record("pause", name)
        target.pause()
        time.sleep(rng.uniform(*paused))
        target.resume()
        log.record("resume", name)


def run_cluster_nemesis(cluster: LocalCluster, actions: list[str],
                        until: float, rng: random.Random,
                        log: NemesisLog,
                        roles: tuple[str, ...] = ("leader", "follower",
                                                  "etcd"),
                        leader_pause: tuple[float, float] = (1.5, 3.0)
                        ) -> None:
    """Cluster nemesis, one fault at a time, a fault every 1 to 3 s: kill
    or pause the leader (by default a pause of 1.5 to 3 s, which outlasts
    its etcd lease, so it is deposed while stopped), a follower, or one
    etcd member (of `roles`); each comes back (restarted on its data, or
    resumed) before the next fault."""
    while time.monotonic() < until:
        time.sleep(rng.uniform(1.0, 3.0))
        for name in cluster.supervise():
            log.record("supervisor-restarted", name)
        if time.monotonic() >= until or not actions:
            break
        action = rng.choice(actions)
        role = rng.choice(roles)
        target: Optional[Process] = None
        if role == "etcd":
            target = rng.choice(cluster.etcd)
        else:
            leader = cluster.leader(timeout=5)
            if role == "leader":
                target = leader
            else:
                followers = [n for n in cluster.nodes if n is not leader]
                target = rng.choice(followers) if followers else None
        if target is None:
            log.record("no-target", role)
            continue
        inject(target, f"{role} {target.name}", action, rng, log,
               down=(0.5, 2.0),
               paused=leader_pause if role == "leader" else (0.2, 1.5))


def final_read(ctl: str, server: str, lock: str, key: str, history: str,
               between: Callable[[], object] = lambda: None) -> None:
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
            between()
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
    parser.add_argument("--cluster", action="store_true",
                        help="3 etcd members and 3 leasekeeperd nodes")
    parser.add_argument("--pin-workers", action="store_true",
                        help="cluster: worker i is given node i mod 3 only")
    parser.add_argument("--roles", default="leader,follower,etcd",
                        help="cluster: whom the nemesis targets")
    parser.add_argument("--leader-pause", default="1.5,3.0",
                        help="cluster: MIN,MAX seconds a paused leader "
                             "stays stopped")
    parser.add_argument("--expect-violation", action="store_true")
    args = parser.parse_args()
    roles = tuple(r for r in args.roles.split(",") if r)
    pause_bounds = [float(x) for x in args.leader_pause.split(",")]
    if (not roles or any(r not in ("leader", "follower", "etcd")
                         for r in roles)
            or len(pause_bounds) != 2 or not
            0 <= pause_bounds[0] <= pause_bounds[1]):
        parser.error("--roles takes leader,follower,etcd; --leader-pause "
                     "takes MIN,MAX seconds")
    leader_pause = (pause_bounds[0], pause_bounds[1])

    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    print(f"fault run: seed {seed}, {args.workers} workers, {args.locks} "
          f"locks, {args.duration} s, nemesis {args.nemesis or 'none'}"
          f"{', split brain' if args.split_brain else ''}"
          f"{', cluster' if args.cluster else ''}"
          f"{', pinned workers' if args.cluster and args.pin_workers else ''}"
          f"{f', targets {args.roles}' if args.cluster else ''}",
          flush=True)
    leasekeeperd = os.path.join(args.bin_dir, "leasekeeperd")
    worker = os.path.join(args.bin_dir, "fault_worker")
    ctl = os.path.join(args.bin_dir, "leasekeeper-ctl")
    out = args.out or tempfile.mkdtemp(prefix="leasekeeper_fault_")
    os.makedirs(out, exist_ok=True)
    locks = [f"fault/{i}" for i in range(args.locks)]
    flags = ["--session-grace=3s"]

    cluster: Optional[LocalCluster] = None
    daemons: list[Daemon] = []
    if args.cluster:
        cluster = LocalCluster(args.bin_dir, out, node_flags=flags)
    else:
        daemons = [Daemon(leasekeeperd, os.path.join(out, f"data{i}"),
                          os.path.join(out, f"leasekeeperd{i}.log"), flags)
                   for i in range(2 if args.split_brain else 1)]
    workers: list[subprocess.Popen[bytes]] = []
    histories: list[str] = []
    try:
        if cluster is not None:
            cluster.start()
        for daemon in daemons:
            daemon.start()
        for i in range(args.workers):
            history = os.path.join(out, f"w{i}.jsonl")
            histories.append(history)
            if cluster is None:
                servers = daemons[i % len(daemons)].address
            elif args.pin_workers:
                servers = cluster.nodes[i % len(cluster.nodes)].address
            else:
                servers = cluster.endpoints
            workers.append(subprocess.Popen(pdeathsig([
                worker, f"--servers={servers}", f"--process=w{i}",
                f"--locks={','.join(locks)}", "--key=counter",
                f"--duration={args.duration}s", f"--ttl={args.ttl}",
                f"--history={history}"]), stdin=subprocess.DEVNULL))
        nemesis = NemesisLog(os.path.join(out, "nemesis.jsonl"))
        actions = [a for a in args.nemesis.split(",") if a]
        until = time.monotonic() + args.duration
        if cluster is not None:
            run_cluster_nemesis(cluster, actions, until, rng, nemesis,
                                roles, leader_pause)
        else:
            run_nemesis(daemons, actions, until, rng, nemesis)
        for process in workers:
            try:
                process.wait(args.duration + 60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        final = os.path.join(out, "final.jsonl")
        histories.append(final)
        target = cluster.endpoints if cluster is not None else daemons[0].address
        for lock in locks:
            final_read(ctl, target, lock, "counter", final,
                       cluster.supervise if cluster is not None else
                       lambda: None)
    except RuntimeError as error:
        # Safety is still checked on what was recorded; the run fails.
        report = checker.check(checker.read_events(histories))
        for kind, (count, example) in checker.kinds(report).items():
            print(f"VIOLATION x{count} {kind}: e.g. {example}")
        print(f"fault run could not be completed: {error}; the history so "
              f"far: {report.summary()}; histories in {out}", file=sys.stderr)
        return 2
    finally:
        for process in workers:
            if process.poll() is None:
                process.kill()
                process.wait()
        for daemon in daemons:
            daemon.stop()
        if cluster is not None:
            cluster.stop()

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
