"""The man pages help2man makes at build time (packaging/CMakeLists.txt)
carry every flag and command the binaries' own --help lists, render
without groff warnings, and have the sections a man page needs.

Run by ctest with LEASEKEEPER_BUILD_DIR set (the pages are in build/man/,
the binaries in build/bin/).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

BUILD = Path(os.environ["LEASEKEEPER_BUILD_DIR"])
DAEMON_PAGE = BUILD / "man" / "leasekeeperd.8"
CTL_PAGE = BUILD / "man" / "leasekeeper-ctl.1"
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def output(args: list[str]) -> str:
    return subprocess.run(args, capture_output=True, text=True, check=True,
                          timeout=60).stdout


def rendered(page: Path) -> str:
    """The page as man shows it, on lines long enough that no flag is
    hyphenated or broken."""
    warnings = subprocess.run(["groff", "-man", "-ww", "-z", str(page)],
                              capture_output=True, text=True, check=True)
    assert warnings.stderr == "", f"{page.name}: {warnings.stderr}"
    return output(["groff", "-man", "-Tascii", "-rLL=300n", "-rHY=0",
                   "-P-c", "-P-b", "-P-u", str(page)])


def section(text: str, name: str) -> str:
    """The body of a top-level section (a line of its own in capitals)."""
    match = re.search(rf"^{re.escape(name)}\n(.*?)(?=^[A-Z][A-Z ]+\n|\Z)",
                      text, re.MULTILINE | re.DOTALL)
    assert match, f"no {name} section"
    return match.group(1)


def test_daemon_page_lists_every_flag_of_its_help() -> None:
    help_flags = set(FLAG.findall(output([str(BUILD / "bin" / "leasekeeperd"),
                                          "--help"])))
    # The flags operators look up first; a --help that lost them is a bug
    # too.
    assert {"--listen", "--health-listen", "--metrics-listen", "--data-dir",
            "--fsync", "--session-grace", "--tls-cert", "--tls-key",
            "--client-ca", "--policy", "--log-level"} <= help_flags
    text = rendered(DAEMON_PAGE)
    assert "leasekeeperd - the leasekeeper lock service daemon" in section(
        text, "NAME")
    assert "leasekeeperd [FLAGS]" in section(text, "SYNOPSIS")
    assert "SIGTERM" in section(text, "EXIT STATUS")
    assert "leasekeeper-ctl(1)" in section(text, "SEE ALSO")
    missing = help_flags - set(FLAG.findall(section(text, "DESCRIPTION")))
    assert not missing, f"leasekeeperd.8 lacks {sorted(missing)}"


def ctl_commands(overview: str) -> list[str]:
    """The commands `overview` (leasekeeper-ctl --help) lists, `help`
    aside."""
    block = overview.split("\nCommands:\n", 1)[1].split("\n\n", 1)[0]
    return [line.split()[0] for line in block.splitlines()
            if line.split() and line.split()[0] != "help"]


def test_ctl_page_has_every_command_with_each_of_its_flags() -> None:
    overview = output([str(BUILD / "bin" / "leasekeeper-ctl"), "--help"])
    commands = ctl_commands(overview)
    assert {"acquire", "release", "run", "inspect", "locks", "force-release",
            "version", "health", "completion"} <= set(commands)
    text = rendered(CTL_PAGE)
    assert "leasekeeper-ctl - command-line client" in section(text, "NAME")
    assert "leasekeeper-ctl [GLOBAL FLAGS] COMMAND" in section(text,
                                                              "SYNOPSIS")
    global_flags = set(FLAG.findall(overview))
    assert {"--server", "--output", "--timeout", "--tls", "--ca", "--cert",
            "--key", "--tls-server-name"} <= global_flags
    missing = global_flags - set(FLAG.findall(section(text, "DESCRIPTION")))
    assert not missing, f"leasekeeper-ctl.1 lacks {sorted(missing)}"

    details = section(text, "COMMANDS IN DETAIL")
    # Subsections: "   NAME" at three spaces, then its text.
    parts = re.split(r"^   ([a-z][a-z-]*)\n", details, flags=re.MULTILINE)
    bodies = dict(zip(parts[1::2], parts[2::2]))
    assert list(bodies) == commands, "one subsection per command, in order"
    for command in commands:
        flags = set(FLAG.findall(output(
            [str(BUILD / "bin" / "leasekeeper-ctl"), command, "--help"])))
        missing = flags - set(FLAG.findall(bodies[command]))
        assert not missing, f"{command}: the page lacks {sorted(missing)}"
    assert "--kill-grace" in bodies["run"]
    assert "--reason" in bodies["force-release"]
    assert "leasekeeperd(8)" in section(text, "SEE ALSO")
