"""deploy/Dockerfile and .dockerignore, checked without docker (it cannot
run where these tests run): the image's HEALTHCHECK runs a program the
image contains, against the health port the image's own command opens,
and that exact command, run against a real leasekeeperd started with the
image's flags, says healthy while it serves (plaintext, and under mutual
TLS without a client certificate) and unhealthy once it stopped. The
build context leaves out local data and build trees but keeps what the
build needs.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from deploy_support import (DEPLOY, SOURCE, Daemon, ctl, daemon_flags,
                            flag_values, make_pki, port_of)


def instructions(dockerfile: Path) -> list[tuple[str, str]]:
    """(KEYWORD, arguments) per instruction: comments dropped, continued
    lines joined, as docker's parser does."""
    out: list[tuple[str, str]] = []
    pending = ""
    for line in dockerfile.read_text().splitlines():
        if line.lstrip().startswith("#"):
            continue  # comments, also between continued lines
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        whole = (pending + line).strip()
        pending = ""
        if whole:
            keyword, _, rest = whole.partition(" ")
            out.append((keyword.upper(), rest.strip()))
    return out


def final_stage() -> list[tuple[str, str]]:
    every = instructions(DEPLOY / "Dockerfile")
    last_from = max(i for i, (k, _) in enumerate(every) if k == "FROM")
    return every[last_from:]


def exec_form(text: str) -> list[str]:
    """A JSON array (exec form), as ENTRYPOINT, CMD and HEALTHCHECK CMD
    should be written: no shell in between."""
    value = json.loads(text)
    assert isinstance(value, list) and all(isinstance(v, str) for v in value)
    return value


def healthcheck() -> tuple[dict[str, str], list[str]]:
    """The final stage's HEALTHCHECK: its --options and its command."""
    checks = [rest for k, rest in final_stage() if k == "HEALTHCHECK"]
    assert len(checks) == 1, "one HEALTHCHECK in the runtime stage"
    words = checks[0]
    options = {}
    while words.startswith("--"):
        option, _, words = words.partition(" ")
        name, _, value = option.partition("=")
        options[name] = value
        words = words.lstrip()
    keyword, _, command = words.partition(" ")
    assert keyword == "CMD", words
    return options, exec_form(command)


def image_command() -> list[str]:
    """ENTRYPOINT + CMD of the runtime stage."""
    stage = final_stage()
    [entrypoint] = [exec_form(r) for k, r in stage if k == "ENTRYPOINT"]
    [cmd] = [exec_form(r) for k, r in stage if k == "CMD"]
    return entrypoint + cmd


def copied_into_image() -> set[str]:
    """Absolute paths the runtime stage's COPY instructions create, for
    sources copied into a directory (destination ending in /)."""
    paths = set()
    for keyword, rest in final_stage():
        if keyword != "COPY":
            continue
        words = [w for w in shlex.split(rest) if not w.startswith("--")]
        *sources, destination = words
        if destination.endswith("/"):
            paths |= {destination + Path(s).name for s in sources
                      if not s.endswith("/")}
    return paths


def test_healthcheck_runs_the_ctl_the_image_contains_on_the_health_port() -> None:
    options, command = healthcheck()
    # Time to replay a large log before the first check counts, as the
    # Kubernetes startup probe allows.
    assert "--start-period" in options and "--timeout" in options
    program, *args = command
    assert program == "/usr/local/bin/leasekeeper-ctl"
    assert program in copied_into_image(), "the image has the program"
    assert args[-1] == "health"
    server = flag_values([a for a in args if a.startswith("--server=")])
    host, _, port = server["--server"].rpartition(":")
    assert host == "127.0.0.1", "inside the container: loopback"
    image = image_command()
    assert image[0] == "/usr/local/bin/leasekeeperd"
    assert image[0] in copied_into_image()
    flags = flag_values(image[1:])
    assert port_of(flags["--health-listen"]) == int(port), (
        "the check asks the plaintext health port the image opens, which "
        "needs no client certificate when TLS is on")
    assert set(flags) <= daemon_flags(), "the image's flags exist"
    exposed = {int(p) for k, r in final_stage() if k == "EXPOSE"
               for p in r.split()}
    for flag in ("--listen", "--health-listen", "--metrics-listen"):
        assert port_of(flags[flag]) in exposed, flag


def check_against(daemon: Daemon) -> subprocess.CompletedProcess[str]:
    """The HEALTHCHECK command, run as docker would, but with the build's
    leasekeeper-ctl and the daemon's actual health port."""
    _, command = healthcheck()
    args = [f"--server={daemon.health_address}" if a.startswith("--server=")
            else a for a in command[1:]]
    return ctl(*args)


def image_flags(tmp_path: Path) -> dict[str, str]:
    flags = flag_values(image_command()[1:])
    flags["--data-dir"] = str(tmp_path / "data")
    return flags


def test_healthcheck_passes_while_the_daemon_serves_and_fails_once_stopped(
        tmp_path: Path) -> None:
    with Daemon(image_flags(tmp_path)) as daemon:
        healthy = check_against(daemon)
        assert healthy.returncode == 0, healthy.stderr
        assert healthy.stdout == "SERVING\n"
    stopped = check_against(daemon)
    assert stopped.returncode != 0
    assert "UNAVAILABLE" in stopped.stderr, stopped.stderr


def test_healthcheck_needs_no_client_certificate_under_mutual_tls(
        tmp_path: Path) -> None:
    pki = make_pki(tmp_path)
    flags = image_flags(tmp_path)
    flags.update({"--tls-cert": str(pki.server_cert),
                  "--tls-key": str(pki.server_key),
                  "--client-ca": str(pki.ca_cert)})
    with Daemon(flags) as daemon:
        healthy = check_against(daemon)
        assert healthy.returncode == 0, healthy.stderr
        # The main port would not do: it wants TLS and a certificate.
        main = ctl(f"--server={daemon.address}", "--timeout=3s", "health")
        assert main.returncode != 0


# Docker's .dockerignore rules: patterns relative to the context root, `*`
# and `?` within one path element, `**` across elements, `!` re-includes;
# the last matching pattern wins, and a directory's exclusion covers what
# is in it.
def dockerignore_patterns() -> list[tuple[bool, re.Pattern[str]]]:
    patterns = []
    for line in (SOURCE / ".dockerignore").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        include = line.startswith("!")
        pattern = line[1:] if include else line
        pattern = pattern.strip("/")
        regex = ""
        i = 0
        while i < len(pattern):
            if pattern.startswith("**", i):
                regex += ".*"
                i += 2
                if pattern.startswith("/", i):
                    regex += "/?"
                    i += 1
            elif pattern[i] == "*":
                regex += "[^/]*"
                i += 1
            elif pattern[i] == "?":
                regex += "[^/]"
                i += 1
            else:
                regex += re.escape(pattern[i])
                i += 1
        patterns.append((include, re.compile(regex + "$")))
    return patterns


def ignored(path: str) -> bool:
    parts = path.split("/")
    result = False
    for include, pattern in dockerignore_patterns():
        if any(pattern.match("/".join(parts[:n]))
               for n in range(1, len(parts) + 1)):
            result = not include
    return result


@pytest.mark.parametrize("path", [
    "data/log-0000000001.wal", "data/snapshot-0000000010.snap",
    "build/bin/leasekeeperd", "build-fuzz/bin/replay_fuzzer",
    ".git/HEAD", "python/leasekeeper/__pycache__/client.cpython-311.pyc"])
def test_dockerignore_leaves_local_state_and_builds_out_of_the_context(
        path: str) -> None:
    assert ignored(path), path


@pytest.mark.parametrize("path", [
    "scripts/build", "scripts/lib.sh", "CMakeLists.txt", "server/main.cc",
    "proto/leasekeeper/v1/lock_service.proto", "deploy/Dockerfile",
    "storage/CMakeLists.txt", "client/ctl/main.cc"])
def test_dockerignore_keeps_what_the_image_build_needs(path: str) -> None:
    assert (SOURCE / path).exists(), path
    assert not ignored(path), path
