"""Against a real cluster (three etcd members, three leasekeeperd nodes on
loopback, scripts/local_cluster.py): `leasekeeper-ctl run` keeps its job
running and its lease (same token) when the leader is SIGKILLed, and the
ctl given all three endpoints finds the new leader.

Run by ctest with LEASEKEEPER_BIN_DIR pointing at build/bin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator, Optional

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from local_cluster import LocalCluster  # noqa: E402

BIN = os.environ.get("LEASEKEEPER_BIN_DIR", str(ROOT / "build" / "bin"))


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    started = LocalCluster(BIN, str(tmp_path))
    try:
        started.start()
        yield started
    finally:
        started.stop()


def holders(cluster: LocalCluster, lock: str) -> Optional[list[dict[str, object]]]:
    result = subprocess.run(
        [cluster.ctl, "--server", cluster.endpoints, "--timeout", "3s", "-o",
         "json", "inspect", lock], capture_output=True, text=True, timeout=30)
    if result.returncode != 0:
        return None
    found: list[dict[str, object]] = json.loads(result.stdout)["holders"]
    return found


def test_run_keeps_its_job_and_token_across_a_leader_kill(
        cluster: LocalCluster, tmp_path: Path) -> None:
    lock = "ride/run"
    done = tmp_path / "done"
    job = subprocess.Popen(
        [cluster.ctl, "--server", cluster.endpoints, "run", lock, "--ttl",
         "4s", "--", "sh", "-c",
         f'sleep 6; echo "$LEASEKEEPER_FENCING_TOKEN" > {done}'],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        before: Optional[list[dict[str, object]]] = None
        while time.monotonic() < deadline:
            before = holders(cluster, lock)
            if before:
                break
            time.sleep(0.1)
        assert before, "the job never held the lock"
        leader = cluster.leader()
        assert leader is not None
        leader.kill()
        out, err = job.communicate(timeout=40)
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()
    assert job.returncode == 0, err
    # The job ran to its end under the one grant it started with.
    assert done.read_text().strip() == str(before[0]["token"])
    after = holders(cluster, lock)
    assert after == [], "the lease was released on the new leader"
