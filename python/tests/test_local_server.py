"""leasekeeper.testing.LocalServer as a package installed elsewhere finds
it: the binary on PATH, else the build of the checkout it is used from; a
clear error naming LEASEKEEPER_BIN otherwise; and a port of the caller's
choice."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import leasekeeper
from leasekeeper.testing import LocalServer, find_leasekeeperd

PACKAGE = Path(leasekeeper.__file__).parent
FIND = "from leasekeeper.testing import find_leasekeeperd as f; print(f())"


def installed_copy(tmp_path: Path) -> Path:
    """The package as pip puts it into a venv outside any checkout."""
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    shutil.copytree(PACKAGE, site / "leasekeeper",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return site


def find_from(site: Path, cwd: Path, path: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "LEASEKEEPER_BIN"}
    env.update(PYTHONPATH=str(site), PATH=path)
    return subprocess.run([sys.executable, "-c", FIND], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=30)


@pytest.fixture
def daemon() -> str:
    return find_leasekeeperd()


def test_an_installed_package_finds_the_daemon_on_path(
        tmp_path: Path, daemon: str) -> None:
    site = installed_copy(tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "leasekeeperd").symlink_to(daemon)
    found = find_from(site, tmp_path, f"{bin_dir}:/usr/bin:/bin")
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip() == str(bin_dir / "leasekeeperd")


def test_an_installed_package_used_in_a_checkout_finds_its_build(
        tmp_path: Path, daemon: str) -> None:
    site = installed_copy(tmp_path)
    checkout = Path(daemon).resolve().parents[2]
    found = find_from(site, checkout / "docs", "/usr/bin:/bin")
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip() == str(checkout / "build" / "bin" /
                                       "leasekeeperd")


def test_no_daemon_anywhere_is_an_error_that_names_leasekeeper_bin(
        tmp_path: Path) -> None:
    site = installed_copy(tmp_path)
    found = find_from(site, tmp_path, "/usr/bin:/bin")
    assert found.returncode != 0
    last = found.stderr.strip().splitlines()[-1]
    assert last.startswith("FileNotFoundError: no leasekeeperd binary")
    assert "set LEASEKEEPER_BIN" in last and "python3.11/build" not in last


def test_a_local_server_listens_on_the_port_it_is_given() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with LocalServer(port=port) as server:
        assert server.port == port
        assert server.address == f"127.0.0.1:{port}"
        with leasekeeper.Client(server.address) as client:
            assert client.try_lock("t") is not None
    with pytest.raises(ValueError):
        LocalServer(port=65536)
