"""`cmake --install` makes a tree a job outside this repository can build
against: find_package(leasekeeper) with leasekeeper::client, or
pkg-config's leasekeeper.pc, and the result takes and releases a lock at a
real leasekeeperd (the installed one) on loopback.

Run by ctest (tests/install/CMakeLists.txt passes the build's paths in
LEASEKEEPER_* variables). The prefix is a fresh directory under the build
tree, at the same path every run, so ccache (the build's launcher) hits
when nothing changed.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SOURCE = Path(os.environ["LEASEKEEPER_SOURCE_DIR"])
BUILD = Path(os.environ["LEASEKEEPER_BUILD_DIR"])
CMAKE = os.environ["LEASEKEEPER_CMAKE"]
CXX = os.environ["LEASEKEEPER_CXX"]
CCACHE = os.environ.get("LEASEKEEPER_CCACHE", "")
GENERATOR = os.environ["LEASEKEEPER_GENERATOR"]
MAKE_PROGRAM = os.environ.get("LEASEKEEPER_MAKE_PROGRAM", "")
VERSION = os.environ["LEASEKEEPER_VERSION"]
OUTSIDE = SOURCE / "tests" / "install" / "outside"
WORK = BUILD / "tests" / "install" / "work"

sys.path.insert(0, str(SOURCE / "python"))
from leasekeeper.testing import LocalServer  # noqa: E402


def run(args: list[str], **kwargs) -> subprocess.CompletedProcess[str]:
    """Runs `args`; fails the test with its output if it exits non-zero."""
    result = subprocess.run(args, capture_output=True, text=True,
                            timeout=600, **kwargs)
    assert result.returncode == 0, (
        f"{shlex.join(args)} exited {result.returncode}\n"
        f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}")
    return result


@pytest.fixture(scope="module")
def prefix() -> Path:
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    prefix = WORK / "prefix"
    run([CMAKE, "--install", str(BUILD), "--prefix", str(prefix)])
    return prefix


@pytest.fixture(scope="module")
def daemon(prefix: Path):
    with LocalServer(binary=str(prefix / "bin" / "leasekeeperd")) as server:
        yield server


def libdir(prefix: Path) -> Path:
    """lib/ or lib/<multiarch>/, whichever GNUInstallDirs chose."""
    [pc] = prefix.glob("lib*/**/pkgconfig/leasekeeper.pc")
    return pc.parent.parent


def compiler() -> list[str]:
    return [CCACHE, CXX] if CCACHE else [CXX]


def held_by(prefix: Path, server: LocalServer, lock: str) -> list[str]:
    """The lock's holders, asked with the installed leasekeeper-ctl."""
    result = run([str(prefix / "bin" / "leasekeeper-ctl"), "--server",
                  server.address, "inspect", lock, "-o", "json"])
    return [holder["client"] for holder in json.loads(result.stdout)["holders"]]


def lock_once(program: Path, server: LocalServer, lock: str) -> int:
    """Runs the outside program; returns the token it was granted."""
    result = run([str(program), server.address, lock])
    match = re.fullmatch(
        rf"acquired {re.escape(lock)} token (\d+)\nreleased {re.escape(lock)}\n",
        result.stdout)
    assert match, result.stdout
    return int(match.group(1))


def test_install_puts_binaries_libraries_headers_package_files_and_man_pages(
        prefix: Path) -> None:
    for binary in ("leasekeeperd", "leasekeeper-ctl"):
        assert os.access(prefix / "bin" / binary, os.X_OK), binary
    lib = libdir(prefix)
    for name in ("libleasekeeper_client.a", "libleasekeeper_proto.a",
                 "cmake/leasekeeper/leasekeeperConfig.cmake",
                 "cmake/leasekeeper/leasekeeperConfigVersion.cmake",
                 "cmake/leasekeeper/leasekeeperTargets.cmake",
                 "pkgconfig/leasekeeper.pc"):
        assert (lib / name).is_file(), name
    for header in ("client/client.h", "client/lease.h", "client/errors.h",
                   "client/rpc_client.h",
                   "leasekeeper/v1/lock_service.pb.h",
                   "leasekeeper/v1/lock_service.grpc.pb.h"):
        assert (prefix / "include" / header).is_file(), header
    # Only the public headers: not the library's internals, the ctl's or
    # the test fixture's.
    installed = {p.relative_to(prefix / "include").as_posix()
                 for p in (prefix / "include" / "client").rglob("*")}
    assert not [p for p in installed
                if p.split("/")[1] in ("internal", "ctl", "testing")], installed
    assert (prefix / "share/man/man8/leasekeeperd.8").is_file()
    assert (prefix / "share/man/man1/leasekeeper-ctl.1").is_file()
    # The installed daemon runs from there.
    help_text = run([str(prefix / "bin" / "leasekeeperd"), "--help"]).stdout
    assert "--listen" in help_text


def system_include_dirs() -> list[Path]:
    """The compiler's own search path for <...> (where absl, grpcpp and
    google/protobuf live on Debian)."""
    result = subprocess.run([CXX, "-xc++", "-E", "-v", "-"], input="",
                            capture_output=True, text=True, check=True)
    lines = result.stderr.splitlines()
    start = lines.index("#include <...> search starts here:") + 1
    end = lines.index("End of search list.")
    return [Path(line.strip()) for line in lines[start:end]]


def test_installed_headers_include_only_installed_or_system_headers(
        prefix: Path) -> None:
    include = prefix / "include"
    search = [include, *system_include_dirs()]
    missing = []
    for header in sorted(include.rglob("*.h")):
        for name in re.findall(r'^\s*#\s*include\s*["<]([^">]+)[">]',
                               header.read_text(), re.MULTILINE):
            if not any((d / name).exists() for d in search):
                missing.append(f"{header.relative_to(include)}: {name}")
    assert not missing, ("installed headers include files that are not "
                         "installed: " + ", ".join(missing))


def test_pkg_config_file_is_relocatable_and_names_the_version(
        prefix: Path) -> None:
    env = dict(os.environ, PKG_CONFIG_PATH=str(libdir(prefix) / "pkgconfig"))
    version = run(["pkg-config", "--modversion", "leasekeeper"], env=env)
    assert version.stdout.strip() == VERSION
    includedir = run(["pkg-config", "--variable=includedir", "leasekeeper"],
                     env=env).stdout.strip()
    assert Path(includedir).resolve() == (prefix / "include").resolve()


def test_cmake_find_package_build_takes_and_releases_a_lock(
        prefix: Path, daemon: LocalServer) -> None:
    build = WORK / "cmake-build"
    configure = [CMAKE, "-S", str(OUTSIDE), "-B", str(build), "-G", GENERATOR,
                 f"-DCMAKE_PREFIX_PATH={prefix}",
                 f"-DCMAKE_CXX_COMPILER={CXX}",
                 "-DCMAKE_BUILD_TYPE=Release"]
    if MAKE_PROGRAM:
        configure.append(f"-DCMAKE_MAKE_PROGRAM={MAKE_PROGRAM}")
    if CCACHE:
        configure.append(f"-DCMAKE_CXX_COMPILER_LAUNCHER={CCACHE}")
    run(configure)
    run([CMAKE, "--build", str(build)])
    lock = "install-test/cmake"
    first = lock_once(build / "lock_once", daemon, lock)
    second = lock_once(build / "lock_once", daemon, lock)
    assert second > first >= 1, "each run was granted the lock anew"
    assert held_by(prefix, daemon, lock) == [], "and released it"


def test_pkg_config_build_takes_and_releases_a_lock(
        prefix: Path, daemon: LocalServer) -> None:
    env = dict(os.environ, PKG_CONFIG_PATH=str(libdir(prefix) / "pkgconfig"))
    cflags = run(["pkg-config", "--cflags", "leasekeeper"], env=env).stdout
    libs = run(["pkg-config", "--libs", "leasekeeper"], env=env).stdout
    program = WORK / "lock_once_pkg_config"
    objects = WORK / "lock_once_pkg_config.o"
    # Compiled and linked in two steps: ccache caches only the first.
    run([*compiler(), "-std=c++20", "-O1", *cflags.split(), "-c",
         str(OUTSIDE / "lock_once.cc"), "-o", str(objects)])
    run([CXX, str(objects), "-o", str(program), *libs.split()])
    lock = "install-test/pkg-config"
    token = lock_once(program, daemon, lock)
    assert token >= 1
    assert held_by(prefix, daemon, lock) == []
