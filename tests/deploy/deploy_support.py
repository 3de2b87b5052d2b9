"""What the deploy/ tests share: the paths ctest passes in, a leasekeeperd
started with flags taken from a deploy file (its addresses moved to free
loopback ports), a throwaway mutual-TLS PKI, and the health and /metrics
checks a probe or a scraper makes.

Every daemon listens on 127.0.0.1 only and is stopped by its PID.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

SOURCE = Path(os.environ["LEASEKEEPER_SOURCE_DIR"])
BUILD = Path(os.environ["LEASEKEEPER_BUILD_DIR"])
VERSION = os.environ.get("LEASEKEEPER_VERSION", "")
DEPLOY = SOURCE / "deploy"
LEASEKEEPERD = BUILD / "bin" / "leasekeeperd"
CTL = BUILD / "bin" / "leasekeeper-ctl"

LISTENING_PREFIX = "leasekeeperd listening on "
METRICS_LINE = re.compile(r"event=metrics_listening address=(\S+)")


def free_port() -> int:
    """A loopback port nobody listens on now (another process may take it
    before the daemon does: Daemon.start retries then)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_of(address: str) -> int:
    return int(address.rsplit(":", 1)[1])


def flag_values(args: list[str]) -> dict[str, str]:
    """{"--listen": "0.0.0.0:7233", ...} from --name=value arguments."""
    values = {}
    for arg in args:
        name, equals, value = arg.partition("=")
        assert name.startswith("--") and equals, f"not --name=value: {arg}"
        values[name] = value
    return values


def daemon_flags() -> set[str]:
    """The flags leasekeeperd --help lists."""
    help_text = subprocess.run([str(LEASEKEEPERD), "--help"], check=True,
                               capture_output=True, text=True).stdout
    return set(re.findall(r"^\s+(--[a-z][a-z0-9-]*)", help_text, re.MULTILINE))


class Daemon:
    """leasekeeperd with `flags`, each listener moved to loopback:
    --listen and --metrics-listen to port 0 (the daemon reports the port it
    got), --health-listen to a free port. `address`, `health_address` and
    `metrics_address` are where they serve."""

    def __init__(self, flags: dict[str, str]) -> None:
        self._flags = dict(flags)
        self._process: Optional[subprocess.Popen[str]] = None
        self._stderr: list[str] = []
        self.address = ""
        self.health_address = ""
        self.metrics_address = ""

    def start(self, timeout: float = 20.0) -> "Daemon":
        for _ in range(3):
            if self._try_start(timeout):
                return self
        raise RuntimeError("leasekeeperd did not start:\n" + self.log())

    def _try_start(self, timeout: float) -> bool:
        flags = dict(self._flags)
        flags["--listen"] = "127.0.0.1:0"
        if "--health-listen" in flags:
            self.health_address = f"127.0.0.1:{free_port()}"
            flags["--health-listen"] = self.health_address
        if "--metrics-listen" in flags:
            flags["--metrics-listen"] = "127.0.0.1:0"
        flags["--log-level"] = "info"  # the metrics address is logged
        args = [str(LEASEKEEPERD)] + [f"{k}={v}" for k, v in flags.items()]
        setpriv = shutil.which("setpriv")
        if setpriv is not None:  # a crashed test leaves no daemon behind
            args = [setpriv, "--pdeathsig", "KILL", *args]
        self._stderr = []
        self._process = subprocess.Popen(args, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, text=True)
        drain = threading.Thread(target=self._drain, daemon=True)
        drain.start()
        assert self._process.stdout is not None
        # The line comes once it serves, or never: then stdout closes.
        line = self._process.stdout.readline()
        if not line.startswith(LISTENING_PREFIX):
            self._process.wait(timeout)
            drain.join(timeout)
            self._process = None
            if "cannot listen on" in self.log():  # the health port was taken
                return False
            raise RuntimeError(f"leasekeeperd printed {line!r}:\n{self.log()}")
        self.address = line[len(LISTENING_PREFIX):].strip()
        if "--metrics-listen" in flags:
            deadline = time.monotonic() + timeout
            while not self.metrics_address:
                match = METRICS_LINE.search(self.log())
                if match:
                    self.metrics_address = match.group(1)
                elif time.monotonic() > deadline:
                    raise RuntimeError("no metrics address:\n" + self.log())
                else:
                    time.sleep(0.01)
        return True

    def _drain(self) -> None:
        process = self._process
        assert process is not None and process.stderr is not None
        for line in process.stderr:
            self._stderr.append(line)

    def log(self) -> str:
        return "".join(self._stderr)

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()

    def __enter__(self) -> "Daemon":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@dataclass
class Pki:
    ca_cert: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def make_pki(directory: Path, client_identity: str = "ops-oncall") -> Pki:
    """A CA, a server certificate for 127.0.0.1/localhost and a client
    certificate with CN `client_identity`, made with openssl."""
    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True)

    ca_key, ca_cert = directory / "ca.key", directory / "ca.crt"
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            "-subj", "/CN=leasekeeper test CA", "-keyout", str(ca_key),
            "-out", str(ca_cert))
    certs = {}
    for name, cn, san in (
            ("server", "localhost", "DNS:localhost,IP:127.0.0.1"),
            ("client", client_identity, f"DNS:{client_identity}")):
        key, csr, cert = (directory / f"{name}.key", directory / f"{name}.csr",
                          directory / f"{name}.crt")
        ext = directory / f"{name}.ext"
        usage = "serverAuth" if name == "server" else "clientAuth"
        ext.write_text(f"subjectAltName={san}\nextendedKeyUsage={usage}\n")
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={cn}",
                "-keyout", str(key), "-out", str(csr))
        openssl("x509", "-req", "-in", str(csr), "-CA", str(ca_cert),
                "-CAkey", str(ca_key), "-CAcreateserial", "-days", "2",
                "-extfile", str(ext), "-out", str(cert))
        certs[name] = (cert, key)
    return Pki(ca_cert, certs["server"][0], certs["server"][1],
               certs["client"][0], certs["client"][1])


def ctl(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """leasekeeper-ctl from the build, with no LEASEKEEPER_* variable of the
    caller's environment."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("LEASEKEEPER_")}
    return subprocess.run([str(CTL), *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


def scrape(metrics_address: str) -> str:
    """GET http://ADDRESS/metrics, as Prometheus does; the body."""
    with urllib.request.urlopen(f"http://{metrics_address}/metrics",
                                timeout=10) as response:
        assert response.status == 200
        return response.read().decode()
