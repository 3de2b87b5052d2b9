#!/usr/bin/env python3
"""Local processes for trying and testing leasekeeper: leasekeeperd daemons
on fixed loopback ports and data dirs (which survive a restart), and a
leasekeeper cluster on one machine: three etcd members and three
leasekeeperd nodes (--cluster, --etcd-endpoints, --node-id, --advertise).

As a program (what `scripts/run --cluster` runs):
  local_cluster.py --bin-dir build/bin [--dir DIR] [--nodes 3] [--etcd 3]
                   [--metrics] [--state FILE]
starts the cluster, prints the endpoints and a leasekeeper-ctl line to try,
supervises the nodes (a node that exits by itself, as a deposed leader
does, is started again) and stops everything (by PID) on SIGINT or SIGTERM.
--metrics gives each node a /metrics listener on a free port; --state
writes the processes (name, pid, address, metrics address) and the leader
as JSON to FILE once the cluster serves, and again after each change.
SIGUSR1 stops the leasekeeperd nodes and keeps etcd running (for a
benchmark that drives etcd alone next: bench/run-cluster-anchors).

As a module (tests/fault/run_fault.py): Daemon, EtcdMember, LocalCluster.
Everything listens on 127.0.0.1 only; ports are picked free, below the
ephemeral range.

Thread-safety: one owner thread.
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
import urllib.request
from typing import Optional

LISTENING_PREFIX = b"leasekeeperd listening on "


def free_port() -> int:
    """A port nothing listens on, below the kernel's ephemeral range.

    A port the kernel hands out for bind(0) comes from the ephemeral range,
    where the members' own outgoing connections (etcd peers, clients) also
    take their local ports: one could take it between the pick and the
    member's bind. Below that range only listeners take ports.
    """
    with open("/proc/sys/net/ipv4/ip_local_port_range") as ports:
        ephemeral_low = int(ports.read().split()[0])
    low = 10_000 if ephemeral_low > 20_000 else 1_024
    for _ in range(1_000):
        port = random.randrange(low, ephemeral_low)
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free loopback port below the ephemeral range")


def pdeathsig(args: list[str]) -> list[str]:
    """util-linux's setpriv --pdeathsig: a crashed owner leaves nothing."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "KILL", *args] if setpriv else args


class Process:
    """A child process that can be killed, paused and started again with
    the same arguments."""

    def __init__(self, name: str, args: list[str], log: str) -> None:
        self.name = name
        self.args = args
        self.log_path = log
        self.process: Optional[subprocess.Popen[bytes]] = None
        self.paused = False

    @property
    def running(self) -> bool:
        return self.process is not None

    def spawn(self, stdout: int = subprocess.DEVNULL) -> None:
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(pdeathsig(self.args),
                                            stdout=stdout, stderr=log,
                                            stdin=subprocess.DEVNULL)

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

    def stop(self, grace: float = 10.0) -> None:
        if self.process is None:
            return
        self.resume()
        os.kill(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(grace)
        except subprocess.TimeoutExpired:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self.process = None


class Daemon(Process):
    """One leasekeeperd on a fixed loopback port and data dir."""

    def __init__(self, binary: str, data_dir: str, log: str,
                 extra_flags: list[str], port: Optional[int] = None,
                 name: str = "leasekeeperd") -> None:
        self.port = port or free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.data_dir = data_dir
        os.makedirs(data_dir, exist_ok=True)
        super().__init__(name, [binary, f"--listen={self.address}",
                                f"--data-dir={data_dir}", "--log-level=warn",
                                *extra_flags], log)

    def start(self, timeout: float = 30.0) -> None:
        """Starts it and returns once it prints that it listens."""
        self.spawn(stdout=subprocess.PIPE)
        assert self.process is not None and self.process.stdout is not None
        line = b""
        deadline = time.monotonic() + timeout
        while b"\n" not in line:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                raise RuntimeError(f"{self.name} on {self.address} did not "
                                   f"serve within {timeout} s")
            ready, _, _ = select.select([self.process.stdout], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.process.stdout.fileno(), 256)
            if not chunk:
                code = self.process.wait()
                self.process = None
                raise RuntimeError(f"{self.name} exited ({code}); see "
                                   f"{self.log_path}")
            line += chunk
        if not line.startswith(LISTENING_PREFIX):
            raise RuntimeError(f"{self.name}: unexpected first line {line!r}")


class EtcdMember(Process):
    """One member of a local etcd cluster, with fast heartbeats (50 ms) and
    elections (500 ms), so a lost member is replaced quickly."""

    def __init__(self, binary: str, name: str, data_dir: str, log: str,
                 client_port: int, peer_port: int, initial_cluster: str,
                 token: str) -> None:
        self.client_address = f"127.0.0.1:{client_port}"
        client_url = f"http://{self.client_address}"
        peer_url = f"http://127.0.0.1:{peer_port}"
        super().__init__(name, [
            binary, "--name", name, "--data-dir", data_dir,
            "--listen-client-urls", client_url,
            "--advertise-client-urls", client_url,
            "--listen-peer-urls", peer_url,
            "--initial-advertise-peer-urls", peer_url,
            "--initial-cluster", initial_cluster,
            "--initial-cluster-state", "new",
            "--initial-cluster-token", token,
            "--heartbeat-interval", "50", "--election-timeout", "500",
            "--log-level", "warn"], log)

    def start(self) -> None:
        self.spawn()

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(
                    f"http://{self.client_address}/health", timeout=1) as r:
                return bool(json.loads(r.read()).get("health") == "true")
        except (OSError, ValueError):
            return False


class LocalCluster:
    """Three (or `etcd`) etcd members and `nodes` leasekeeperd nodes of one
    cluster on loopback, under `root` (a data dir and a log per process)."""

    def __init__(self, bin_dir: str, root: str, nodes: int = 3,
                 etcd: int = 3, name: str = "local",
                 node_flags: Optional[list[str]] = None,
                 etcd_binary: str = "", metrics: bool = False) -> None:
        self.bin_dir = bin_dir
        self.ctl = os.path.join(bin_dir, "leasekeeper-ctl")
        etcd_binary = etcd_binary or shutil.which("etcd") or "/usr/bin/etcd"
        ports = [(free_port(), free_port()) for _ in range(etcd)]
        initial = ",".join(f"e{i}=http://127.0.0.1:{peer}"
                           for i, (_, peer) in enumerate(ports))
        token = f"leasekeeper-{name}-{os.getpid()}"
        self.etcd = [EtcdMember(etcd_binary, f"e{i}",
                                os.path.join(root, f"etcd{i}"),
                                os.path.join(root, f"etcd{i}.log"),
                                client, peer, initial, token)
                     for i, (client, peer) in enumerate(ports)]
        self.etcd_endpoints = ",".join(m.client_address for m in self.etcd)
        self.nodes: list[Daemon] = []
        # Each node's /metrics address ("" without metrics), by node name.
        self.metrics: dict[str, str] = {}
        for i in range(nodes):
            port = free_port()
            self.metrics[f"n{i}"] = (f"127.0.0.1:{free_port()}" if metrics
                                     else "")
            listen = ([f"--metrics-listen={self.metrics[f'n{i}']}"]
                      if metrics else [])
            self.nodes.append(Daemon(
                os.path.join(bin_dir, "leasekeeperd"),
                os.path.join(root, f"node{i}"),
                os.path.join(root, f"node{i}.log"),
                ["--cluster", name, "--etcd-endpoints", self.etcd_endpoints,
                 "--node-id", f"n{i}", "--advertise", f"127.0.0.1:{port}",
                 *listen, *(node_flags or [])],
                port=port, name=f"n{i}"))
        self.endpoints = ",".join(n.address for n in self.nodes)

    def start(self, timeout: float = 60.0) -> Daemon:
        """Starts etcd, then the nodes; returns the node elected leader."""
        for member in self.etcd:
            member.start()
        deadline = time.monotonic() + timeout
        while not all(m.healthy() for m in self.etcd):
            if time.monotonic() > deadline:
                raise RuntimeError("etcd did not become healthy; see the "
                                   "etcd*.log files")
            time.sleep(0.2)
        for node in self.nodes:
            node.start()
        leader = self.leader(timeout=deadline - time.monotonic())
        if leader is None:
            raise RuntimeError("no leasekeeper leader was elected")
        return leader

    def status(self, node: Daemon) -> Optional[dict[str, object]]:
        """The node's `cluster status -o json`, or None."""
        if not node.running or node.paused:
            return None
        try:
            result = subprocess.run(
                [self.ctl, "--server", node.address, "--timeout", "2s",
                 "-o", "json", "cluster", "status"],
                capture_output=True, text=True, timeout=10)
        except subprocess.TimeoutExpired:
            return None
        if result.returncode != 0 or not result.stdout.strip():
            return None
        answer: dict[str, object] = json.loads(result.stdout)
        return answer

    def leader(self, timeout: float = 10.0) -> Optional[Daemon]:
        """The node that says it leads (asked of every running node), once
        one does within `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            self.supervise()
            for node in self.nodes:
                status = self.status(node)
                if status is not None and status.get("role") == "leader":
                    return node
            if time.monotonic() > deadline:
                return None
            time.sleep(0.2)

    def supervise(self) -> list[str]:
        """What a supervisor (systemd, the kubelet) does: starts again every
        node that exited by itself (a deposed leader exits with 75 so that
        it comes back as a follower). Returns the names restarted."""
        restarted = []
        for node in self.nodes:
            if node.process is not None and node.process.poll() is not None:
                node.process = None
                node.start()
                restarted.append(node.name)
        return restarted

    def stop_nodes(self) -> None:
        """Stops every leasekeeperd node (by PID); etcd keeps running."""
        for node in self.nodes:
            node.stop()

    def stop(self) -> None:
        for process in [*self.nodes, *self.etcd]:
            process.stop()

    def state(self, leader: Optional[Daemon]) -> dict[str, object]:
        """The running processes and the leader, for --state."""
        def pid(process: Process) -> Optional[int]:
            return process.process.pid if process.process is not None else None
        return {
            "etcd": [{"name": m.name, "pid": pid(m),
                      "address": m.client_address} for m in self.etcd],
            "nodes": [{"name": n.name, "pid": pid(n), "address": n.address,
                       "metrics": self.metrics[n.name]} for n in self.nodes],
            "leader": leader.name if leader is not None and leader.running
                      else None,
        }


def write_state(path: str, state: dict[str, object]) -> None:
    """Replaces `path` with `state` as JSON in one rename, so that a reader
    never sees half a file."""
    with open(path + ".tmp", "w") as out:
        json.dump(state, out, indent=1)
    os.replace(path + ".tmp", path)


def main() -> int:
    parser = argparse.ArgumentParser(
        description="A leasekeeper cluster on loopback: 3 etcd members and "
                    "3 leasekeeperd nodes; Ctrl-C stops it.")
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--dir", default=None,
                        help="data dirs and logs (default: a temp dir, "
                             "removed at the end)")
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--etcd", type=int, default=3)
    parser.add_argument("--name", default="local")
    parser.add_argument("--metrics", action="store_true",
                        help="a /metrics listener on each node")
    parser.add_argument("--state", default=None,
                        help="write the processes and the leader as JSON")
    args, node_flags = parser.parse_known_args()
    root = args.dir or tempfile.mkdtemp(prefix="leasekeeper_cluster_")
    os.makedirs(root, exist_ok=True)
    cluster = LocalCluster(args.bin_dir, root, args.nodes, args.etcd,
                           args.name, node_flags, metrics=args.metrics)
    stopping = False
    stop_nodes = False

    def stop(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    def stop_the_nodes(signum: int, frame: object) -> None:
        nonlocal stop_nodes
        stop_nodes = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGUSR1, stop_the_nodes)
    try:
        leader = cluster.start()
        print(f"etcd:        {cluster.etcd_endpoints}")
        print(f"leasekeeper: {cluster.endpoints} (leader {leader.name})")
        for process in [*cluster.etcd, *cluster.nodes]:
            assert process.process is not None
            where = (process.address if isinstance(process, Daemon)
                     else process.client_address)  # type: ignore[attr-defined]
            print(f"  {process.name:4} pid {process.process.pid:<8} {where}")
        print(f"data, logs:  {root}")
        print(f"try:         LEASEKEEPER_SERVER={cluster.endpoints} "
              f"{cluster.ctl} cluster status")
        print("Ctrl-C stops everything.", flush=True)
        if args.state:
            write_state(args.state, cluster.state(leader))
        while not stopping:
            restarted = cluster.supervise()
            for name in restarted:
                print(f"{name} exited and was started again", flush=True)
            stopped = stop_nodes
            if stop_nodes:
                stop_nodes = False
                cluster.stop_nodes()
                print("leasekeeperd nodes stopped; etcd runs on", flush=True)
            if args.state and (restarted or stopped):
                write_state(args.state, cluster.state(leader))
            time.sleep(0.2)
    except RuntimeError as error:
        print(f"local cluster: {error}", file=sys.stderr)
        return 1
    finally:
        cluster.stop()
        if args.dir is None:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
