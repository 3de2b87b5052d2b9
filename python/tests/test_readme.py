"""The README's batch-job example, extracted from python/README.md and run
as it stands against a real leasekeeperd; and the offline install it
describes, from a copy of the sources without generated modules."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

from leasekeeper.testing import LocalServer

from conftest import MakeClient

PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARKER = "<!-- batch-job-example -->"


def readme_example() -> str:
    with open(os.path.join(PACKAGE, "README.md")) as readme:
        text = readme.read()
    match = re.search(re.escape(MARKER) + r"\s*```python\n(.*?)```", text,
                      re.S)
    assert match, "the README lost its batch-job example"
    return match.group(1)


def run_example(address: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, LEASEKEEPER_SERVER=address, PYTHONPATH=PACKAGE)
    return subprocess.run([sys.executable, "-c", readme_example()], env=env,
                          capture_output=True, text=True, timeout=60)


def test_the_readme_batch_job_exports_every_part_fenced(
        leasekeeperd: LocalServer, make_client: MakeClient) -> None:
    first = run_example(leasekeeperd.address)
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == "exported 3 parts with token 1"
    client = make_client()
    assert client.read("exports/daily", "cursor") == b"eu,us,apac"
    assert client.read("exports/daily", "part/us") == b"rows of us"
    again = run_example(leasekeeperd.address)
    assert again.stdout.strip() == "exported 3 parts with token 2"


def test_the_readme_batch_job_skips_while_another_run_holds_the_lock(
        leasekeeperd: LocalServer, make_client: MakeClient) -> None:
    with make_client().lock("exports/daily", ttl=90):
        impatient = readme_example().replace("wait=60", "wait=0.2")
        env = dict(os.environ, LEASEKEEPER_SERVER=leasekeeperd.address,
                   PYTHONPATH=PACKAGE)
        skipped = subprocess.run([sys.executable, "-c", impatient], env=env,
                                 capture_output=True, text=True, timeout=60)
    assert skipped.returncode == 75, skipped.stderr
    assert "skipping" in skipped.stderr


def test_pip_installs_a_fresh_checkout_offline(tmp_path: object) -> None:
    """`pip install --no-build-isolation --no-deps ./python` on a copy of
    python/ and proto/ without the generated modules, as a fresh clone has
    them; the installed package imports and generates what it needs."""
    root = str(tmp_path)
    shutil.copytree(os.path.join(os.path.dirname(PACKAGE), "proto"),
                    os.path.join(root, "proto"))
    shutil.copytree(PACKAGE, os.path.join(root, "python"),
                    ignore=shutil.ignore_patterns(
                        "*_pb2.py", "*_pb2.pyi", "*_pb2_grpc.py",
                        "__pycache__", ".mypy_cache", ".pytest_cache",
                        "build", "*.egg-info"))
    target = os.path.join(root, "site")
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("PYTHONPATH", None)
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-build-isolation",
         "--no-deps", "--target", target, "./python"],
        cwd=root, env=env, capture_output=True, text=True, timeout=120)
    assert install.returncode == 0, install.stdout + install.stderr
    probe = subprocess.run(
        [sys.executable, "-c",
         "import leasekeeper, leasekeeper.aio, leasekeeper.testing;"
         "from leasekeeper.v1 import lock_service_pb2_grpc;"
         "print(leasekeeper.__file__)"],
        cwd=root, env=dict(env, PYTHONPATH=target), capture_output=True,
        text=True, timeout=60)
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.startswith(target)
    installed = os.path.join(target, "leasekeeper")
    assert os.path.exists(os.path.join(installed, "py.typed"))
    assert os.path.exists(os.path.join(installed, "v1", "lock_service_pb2.pyi"))
