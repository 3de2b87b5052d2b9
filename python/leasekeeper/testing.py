"""A real leasekeeperd for tests, on a free loopback port.

    from leasekeeper.testing import LocalServer

    with LocalServer(session_grace=0.5) as server:
        with leasekeeper.Client(server.address) as client:
            ...

or, in pytest, the `leasekeeperd` fixture (conftest.py:
`from leasekeeper.testing import leasekeeperd  # noqa: F401`).

The binary is found by find_leasekeeperd ($LEASEKEEPER_BIN first). The
daemon listens on 127.0.0.1, on `port` if given, else on port 0 (the kernel
picks a free port; the daemon prints the one it got, so no port is ever
guessed); it keeps nothing on disk (--data-dir= empty), and is stopped by
its PID: SIGTERM, then SIGKILL after a few seconds.

Thread-safety: a LocalServer is used from one thread.
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import time
from types import TracebackType
from typing import Iterator, Optional, Sequence

LISTENING_PREFIX = "leasekeeperd listening on "


BINARY_NAME = "leasekeeperd"


def _checkout_binary(start: str) -> Optional[str]:
    """build/bin/leasekeeperd of the leasekeeper checkout that holds
    `start` (a directory), looking upwards; None if there is none."""
    directory = os.path.abspath(start)
    while True:
        candidate = os.path.join(directory, "build", "bin", BINARY_NAME)
        if (os.path.isfile(os.path.join(directory, "proto", "leasekeeper",
                                        "v1", "lock_service.proto"))
                and os.access(candidate, os.X_OK)):
            return candidate
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def find_leasekeeperd() -> str:
    """The leasekeeperd binary to run: $LEASEKEEPER_BIN; else the build of
    the checkout this package is imported from (python/ of a checkout);
    else `leasekeeperd` on PATH; else the build of the checkout the current
    directory lies in (a package installed into a venv, used from a
    checkout). Raises FileNotFoundError saying how to point at one."""
    env = os.environ.get("LEASEKEEPER_BIN", "")
    if env:
        if os.path.isfile(env) and os.access(env, os.X_OK):
            return env
        raise FileNotFoundError(
            f"LEASEKEEPER_BIN={env} is not an executable file; set it to "
            f"the path of a {BINARY_NAME} binary")
    found = (_checkout_binary(os.path.dirname(os.path.abspath(__file__)))
             or shutil.which(BINARY_NAME)
             or _checkout_binary(os.getcwd()))
    if found:
        return found
    raise FileNotFoundError(
        f"no {BINARY_NAME} binary: none on PATH and no build/bin/"
        f"{BINARY_NAME} in a leasekeeper checkout around this package or "
        f"the current directory; set LEASEKEEPER_BIN to its path, put it "
        f"on PATH, or run scripts/build in the checkout")


def _with_parent_death_signal(args: list[str]) -> list[str]:
    """Runs the daemon under util-linux's setpriv --pdeathsig, when there is
    one, so a crashed test process leaves no daemon behind. (Not a
    preexec_fn: forking a process that runs gRPC's threads is unsafe, and
    without one subprocess spawns with vfork.)"""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return args
    return [setpriv, "--pdeathsig", "KILL", *args]


class LocalServer:
    """One leasekeeperd child process.

    session_grace: --session-grace in seconds (short by default, so a
      crashed client's locks pass on quickly in tests).
    extra_flags: more flags (not --listen: the address is 127.0.0.1:port).
    port: the port to listen on; 0 (the default) lets the kernel pick a
      free one. `address` and `port` say which once started.
    Raises FileNotFoundError (no binary), ValueError (--listen given, a
    port outside 0..65535), RuntimeError (the daemon did not start within
    start_timeout, e.g. because the port is taken).
    """

    def __init__(self, session_grace: float = 0.5,
                 extra_flags: Sequence[str] = (), binary: Optional[str] = None,
                 start_timeout: float = 10.0, log_level: str = "warn",
                 port: int = 0) -> None:
        if any(flag.startswith("--listen") for flag in extra_flags):
            raise ValueError("LocalServer picks the address; no --listen "
                             "(give port= for a fixed port)")
        if isinstance(port, bool) or not isinstance(port, int):
            raise TypeError(f"port must be an int, not {type(port).__name__}")
        if not 0 <= port <= 65535:
            raise ValueError(f"port must be within 0..65535, not {port}")
        self._listen_port = port
        self.binary = binary or find_leasekeeperd()
        self.session_grace = session_grace
        self._flags = list(extra_flags)
        self._start_timeout = start_timeout
        self._log_level = log_level
        self._process: Optional[subprocess.Popen[bytes]] = None
        self.address = ""
        self.port = 0

    @property
    def pid(self) -> int:
        if self._process is None:
            raise RuntimeError("the server is not running")
        return self._process.pid

    def start(self) -> "LocalServer":
        args = [self.binary, f"--listen=127.0.0.1:{self._listen_port}",
                f"--session-grace={int(self.session_grace * 1000)}ms",
                f"--log-level={self._log_level}"]
        if not any(flag.startswith("--data-dir") for flag in self._flags):
            args.append("--data-dir=")
        args += self._flags
        self._process = subprocess.Popen(_with_parent_death_signal(args),
                                         stdout=subprocess.PIPE,
                                         stdin=subprocess.DEVNULL)
        assert self._process.stdout is not None
        line = b""
        deadline = time.monotonic() + self._start_timeout
        while b"\n" not in line:
            left = deadline - time.monotonic()
            if left <= 0:
                self.stop()
                raise RuntimeError(f"{self.binary} did not serve within "
                                   f"{self._start_timeout} s")
            ready, _, _ = select.select([self._process.stdout], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._process.stdout.fileno(), 256)
            if not chunk:
                code = self._process.wait()
                raise RuntimeError(f"{self.binary} exited ({code}) without "
                                   "printing its address")
            line += chunk
        first = line.split(b"\n", 1)[0].decode()
        if not first.startswith(LISTENING_PREFIX + "127.0.0.1:"):
            self.stop()
            raise RuntimeError(f"unexpected first line from leasekeeperd: "
                               f"{first!r}")
        self.address = first[len(LISTENING_PREFIX):]
        self.port = int(self.address.rsplit(":", 1)[1])
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """SIGTERM by PID, SIGKILL if it has not exited within `timeout`."""
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            os.kill(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                os.kill(process.pid, signal.SIGKILL)
                process.wait()
        if process.stdout is not None:
            process.stdout.close()

    def __enter__(self) -> "LocalServer":
        return self.start()

    def __exit__(self, exc_type: Optional[type[BaseException]],
                 exc: Optional[BaseException],
                 traceback: Optional[TracebackType]) -> None:
        self.stop()


try:
    import pytest
except ImportError:  # pytest is optional: LocalServer works without it
    pass
else:
    @pytest.fixture
    def leasekeeperd() -> Iterator[LocalServer]:
        """A fresh leasekeeperd per test (session grace 0.5 s)."""
        with LocalServer() as server:
            yield server
