"""Every command shown in README.md and docs/, run as a reader would.

Each page's fenced code blocks are read in page order:

- ```sh blocks are split into commands (a line, continued by a trailing
  backslash, a here-document, or until bash parses it: an open quote, a
  loop, a condition); ```python blocks are one
  command each (`python3 -` with the block on stdin). Every command must
  exit 0; a page shows another exit status with the shell itself
  (`... || [ $? -eq 75 ]`, or `echo "exit $?"` and its shown line).
- A shown answer is checked: `# {...}` or `# [...]` on the line after a
  command is the JSON the command prints; `#> TEXT` lines after a command
  (or anywhere in a python block) are lines its output must contain, in
  that order (fnmatch patterns: `*` stands for what varies).
- ```text, ```json, ```yaml, ```cpp, ```cmake, ```proto and ```diff
  blocks are displays (an output, a file, source code) and never run. A
  sh or python block that cannot run here (Kubernetes, Docker, systemd, a
  package manager, certificates of your own) carries `<!-- not run: WHY
  -->` on the line before its fence; the test fails on any other block it
  would not run (no language, another language) and on an indented code
  block.

Each page runs in one bash, against its own fresh leasekeeperd (from
--bin-dir, plaintext, a data dir of its own, --session-grace 2s), in a
fresh working directory that looks like a checkout after `scripts/build`
(the repository's top-level entries linked in, build/bin the binaries
under test). `127.0.0.1:7233` in a command is that daemon's address; every
other 127.0.0.1:PORT the page names (a valid port) is a free port of its
own, the same for the whole page, so a page can start daemons of its own. A page that
needs other flags for its daemon says so with `<!-- docs-test: daemon
FLAGS -->`, one that starts everything itself with `<!-- docs-test: no
daemon -->`. On PATH come first: build/bin, `grpcurl` (the reflection-only
stand-in, tests/grpcurl/grpcurl_standin.py) and `python3` (this
interpreter, with the checkout's python/ on PYTHONPATH).

Also checks the stand-in's reflection on README.md's daemon: v1 is asked
first and answers, v1alpha alone gives the same listing, and README.md
shows a grpcurl listing, describe and health check.

usage: docs_commands_test.py --root SRC --bin-dir DIR --standin FILE
       --stubs DIR [PAGE.md ...]   (default: README.md and docs/**/*.md)
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Optional

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from leasekeeper.testing import LocalServer  # noqa: E402
from local_cluster import free_port  # noqa: E402

NOT_RUN = re.compile(r"^<!--\s*not run:\s*(\S.*?)\s*-->$")
DIRECTIVE = re.compile(r"^<!--\s*docs-test:\s*(.*?)\s*-->$")
FENCE = re.compile(r"^```\s*([\w+-]*)\s*$")
ADDRESS = re.compile(r"127\.0\.0\.1:(\d+)")
HEREDOC = re.compile(r"<<-?\s*(['\"]?)(\w+)\1")
SHELLS = {"sh", "bash", "shell"}
RUNNABLE = SHELLS | {"python"}
# Shown, never run: outputs and files, and source in languages that are
# not commands.
DISPLAYS = {"text", "json", "yaml", "cpp", "c++", "cmake", "proto", "diff"}
DEFAULT_PORT = "7233"
PAGE_TIMEOUT_S = 90


@dataclass
class Command:
    line: int                    # 1-based line of the page
    text: str                    # as the page shows it
    python: bool = False
    expected_json: object = None
    expected_lines: list[str] = field(default_factory=list)


@dataclass
class Page:
    path: str
    commands: list[Command] = field(default_factory=list)
    skipped: list[tuple[int, str]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    daemon_flags: Optional[list[str]] = None   # None: no daemon
    has_grpcurl: set[str] = field(default_factory=set)


def syntax_error(text: str) -> str:
    """bash's complaint about `text` as a script; empty if it parses."""
    checked = subprocess.run(["bash", "-n"], input=text, text=True,
                             capture_output=True)
    return checked.stderr.strip() if checked.returncode else ""


def with_here_documents(line: str, block: list[tuple[int, str]], i: int
                        ) -> tuple[str, int]:
    """`line` with the bodies of the here-documents it starts (which follow
    from block[i] on), and the index after them."""
    text = line
    for match in HEREDOC.finditer(line):
        terminator = match.group(2)
        while i < len(block) and block[i][1].strip() != terminator:
            text += "\n" + block[i][1]
            i += 1
        if i < len(block):
            text += "\n" + block[i][1]
            i += 1
    return text, i


def split_shell(block: list[tuple[int, str]], page: Page) -> None:
    """Adds the block's commands (with their shown answers) to the page."""
    i = 0
    while i < len(block):
        number, line = block[i]
        stripped = line.strip()
        i += 1
        if not stripped:
            continue
        if stripped.startswith("#"):
            last = page.commands[-1] if page.commands else None
            if last is None or last.python:
                continue
            if stripped.startswith("#> "):
                last.expected_lines.append(stripped[3:])
            elif stripped.startswith("# {") or stripped.startswith("# ["):
                last.expected_json, _ = json.JSONDecoder().raw_decode(
                    stripped[2:])
            continue
        text, i = with_here_documents(line, block, i)
        while text.endswith("\\") or syntax_error(text):
            if i >= len(block):
                page.problems.append(f"{page.path}:{number}: the command "
                                     "does not end (bash -n: "
                                     f"{syntax_error(text)})")
                return
            more, i = with_here_documents(block[i][1], block, i + 1)
            text += "\n" + more
        command = Command(number, text)
        if re.match(r"^\s*grpcurl\b", text):
            words = shlex.split(text, comments=True)
            page.has_grpcurl.add("describe" if "describe" in words
                                 else words[-1])
        page.commands.append(command)


def parse(path: str, text: str) -> Page:
    page = Page(os.path.relpath(path, ROOT), daemon_flags=[])
    lines = text.splitlines()
    i = 0
    previous = ""   # the last non-blank line before a fence
    while i < len(lines):
        line = lines[i]
        directive = DIRECTIVE.match(line.strip())
        if directive:
            words = directive.group(1).split()
            if words[:2] == ["no", "daemon"]:
                page.daemon_flags = None
            elif words[:1] == ["daemon"]:
                page.daemon_flags = words[1:]
            else:
                page.problems.append(f"{page.path}:{i + 1}: unknown "
                                     f"directive {directive.group(1)!r}")
        fence = FENCE.match(line)
        if not fence:
            if (line.startswith("    ") and line.strip() and i > 0
                    and not lines[i - 1].strip()
                    and not re.match(r"^\s*([-*]|\d+\.)\s", previous)
                    and not previous.startswith("|")):
                page.problems.append(f"{page.path}:{i + 1}: an indented code "
                                     "block; use a fenced ```sh block")
            if line.strip():
                previous = line
            i += 1
            continue
        language = fence.group(1)
        start = i + 1
        i += 1
        block: list[tuple[int, str]] = []
        while i < len(lines) and not lines[i].startswith("```"):
            block.append((i + 1, lines[i]))
            i += 1
        i += 1
        marked = NOT_RUN.match(previous.strip())
        previous = "```"
        if marked:
            page.skipped.append((start, marked.group(1)))
        elif language in DISPLAYS:
            continue
        elif language not in RUNNABLE:
            page.problems.append(
                f"{page.path}:{start}: a ```{language or '(no language)'} "
                "block that is neither run nor marked <!-- not run: WHY -->")
        elif language in SHELLS:
            split_shell(block, page)
        else:
            code = "\n".join(text for _, text in block)
            page.commands.append(Command(
                start, code, python=True,
                expected_lines=[text.strip()[3:] for _, text in block
                                if text.strip().startswith("#> ")]))
    return page


def checkout_dir(root: str, bin_dir: str, work: str) -> None:
    """A working directory that looks like a checkout after scripts/build."""
    for entry in os.listdir(root):
        if entry in ("build", ".git") or entry.startswith("build-"):
            continue
        os.symlink(os.path.join(root, entry), os.path.join(work, entry))
    os.makedirs(os.path.join(work, "build"))
    os.symlink(os.path.abspath(bin_dir), os.path.join(work, "build", "bin"))


def tools_dir(args: argparse.Namespace, where: str) -> str:
    os.makedirs(where)
    scripts = {
        "grpcurl": f'PYTHONPATH={shlex.quote(args.stubs)} exec '
                   f'{shlex.quote(sys.executable)} '
                   f'{shlex.quote(os.path.abspath(args.standin))} "$@"',
        "python3": f'exec {shlex.quote(sys.executable)} "$@"',
    }
    for name, body in scripts.items():
        path = os.path.join(where, name)
        with open(path, "w") as out:
            out.write(f"#!/bin/sh\n{body}\n")
        os.chmod(path, 0o755)
    return where


def addresses(page: Page) -> dict[str, str]:
    """The page's 127.0.0.1 ports, each mapped to a free port of this run
    (7233 too; it becomes the daemon's address once the daemon serves)."""
    mapping: dict[str, str] = {}
    for text in [c.text for c in page.commands] + (page.daemon_flags or []):
        for port in ADDRESS.findall(text):
            if port not in mapping and int(port) <= 65535:
                mapping[port] = f"127.0.0.1:{free_port()}"
    return mapping


def substitute(text: str, mapping: dict[str, str]) -> str:
    return ADDRESS.sub(lambda m: mapping.get(m.group(1), m.group(0)), text)


def script(page: Page, mapping: dict[str, str], results: str) -> str:
    parts = []
    for n, command in enumerate(page.commands):
        body = substitute(command.text, mapping)
        if command.python:
            body = f"python3 - <<'__LK_DOCS_PY__'\n{body}\n__LK_DOCS_PY__"
        out = shlex.quote(os.path.join(results, str(n)))
        parts.append(f"{{ {body}\n}} >{out}.out 2>{out}.err </dev/null; "
                     f"echo $? >{out}.rc")
    return "\n".join(parts) + "\n"


def check(command: Command, results: str, n: int) -> Optional[str]:
    """None if the command did as the page shows, else what went wrong."""
    base = os.path.join(results, str(n))
    if not os.path.exists(base + ".rc"):
        return "did not run (the page's shell ended or timed out before it)"
    with open(base + ".rc") as rc, open(base + ".out") as out, \
            open(base + ".err") as err:
        code, stdout, stderr = int(rc.read()), out.read(), err.read()
    if code != 0:
        return f"exit code {code}\n{stderr.strip()}\n{stdout.strip()}"
    if command.expected_json is not None:
        try:
            answer = json.loads(stdout)
        except json.JSONDecodeError:
            return f"printed no JSON: {stdout!r}"
        if answer != command.expected_json:
            return (f"answered {json.dumps(answer)}, the page shows "
                    f"{json.dumps(command.expected_json)}")
    unmatched = [line.rstrip() for line in (stdout + stderr).splitlines()]
    for pattern in command.expected_lines:
        shown = re.compile(".*".join(
            re.escape(part) for part in pattern.rstrip().split("*")))
        line = next((line for line in unmatched if shown.fullmatch(line)),
                    None)
        if line is None:
            return (f"printed no line {pattern!r}; it printed:\n"
                    + stdout + stderr)
        unmatched.remove(line)
    return None


def run_standin(args: argparse.Namespace, argv: list[str]
                ) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=args.stubs)
    return subprocess.run([sys.executable, args.standin, *argv], env=env,
                          capture_output=True, text=True, timeout=60)


def check_reflection_versions(args: argparse.Namespace, address: str
                              ) -> list[str]:
    problems = []
    default = run_standin(args, ["-plaintext", "-v", address, "list"])
    if "reflection: grpc.reflection.v1.ServerReflection" not in default.stderr:
        problems.append("the stand-in did not get its answer from "
                        f"reflection v1: {default.stderr.strip()}")
    alpha = run_standin(args, ["-plaintext", "-reflection-version", "v1alpha",
                               address, "list"])
    if alpha.returncode != 0 or alpha.stdout != default.stdout:
        problems.append(f"v1alpha lists {alpha.stdout!r} (exit "
                        f"{alpha.returncode}), v1 {default.stdout!r}")
    for service in ("leasekeeper.v1.LockService", "grpc.health.v1.Health",
                    "grpc.reflection.v1.ServerReflection"):
        if service not in default.stdout.split():
            problems.append(f"list does not name {service}")
    return problems


def run_page(args: argparse.Namespace, page: Page) -> int:
    """Runs the page's commands; returns the number of failures."""
    failures = len(page.problems)
    for problem in page.problems:
        print(f"FAIL {problem}")
    if not page.commands:
        return failures
    with tempfile.TemporaryDirectory(prefix="lk-docs-") as temp:
        work = os.path.join(temp, "checkout")
        results = os.path.join(temp, "results")
        os.makedirs(work)
        os.makedirs(results)
        checkout_dir(args.root, args.bin_dir, work)
        tools = tools_dir(args, os.path.join(temp, "tools"))
        daemon = None
        try:
            mapping = addresses(page)
            if page.daemon_flags is not None:
                daemon = LocalServer(
                    session_grace=2.0,
                    binary=os.path.join(args.bin_dir, "leasekeeperd"),
                    extra_flags=[f"--data-dir={temp}/daemon-data",
                                 *[substitute(f, mapping)
                                   for f in page.daemon_flags]])
                daemon.start()
                mapping[DEFAULT_PORT] = daemon.address
            env = dict(os.environ,
                       PATH=os.pathsep.join([tools, os.path.abspath(
                           args.bin_dir), os.environ.get("PATH", "")]),
                       PYTHONPATH=os.path.join(args.root, "python"),
                       HOME=temp)
            for name in list(env):
                if name.startswith("LEASEKEEPER_"):
                    del env[name]
            shell = subprocess.Popen(
                ["bash", "-c", script(page, mapping, results)], cwd=work,
                env=env, start_new_session=True,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                shell.wait(timeout=PAGE_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                print(f"FAIL {page.path}: still running after "
                      f"{PAGE_TIMEOUT_S} s")
                failures += 1
            finally:
                # What the page left running in the background (its
                # process group, which this test started), then the shell.
                try:
                    os.killpg(shell.pid, signal.SIGTERM)
                    time.sleep(0.3)
                    os.killpg(shell.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                shell.wait()
            for n, command in enumerate(page.commands):
                problem = check(command, results, n)
                first = command.text.strip().splitlines()[0]
                print(f"{'ok  ' if problem is None else 'FAIL'} "
                      f"{page.path}:{command.line}: "
                      f"{'```python ' if command.python else ''}{first}")
                if problem is not None:
                    failures += 1
                    print("     " + problem.strip().replace("\n", "\n     "))
            if page.path == "README.md" and daemon is not None:
                for problem in check_reflection_versions(args,
                                                         daemon.address):
                    failures += 1
                    print(f"FAIL reflection: {problem}")
        finally:
            if daemon is not None:
                daemon.stop()
    for line, reason in page.skipped:
        print(f"skip {page.path}:{line}: not run: {reason}")
    return failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=ROOT)
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--standin", required=True)
    parser.add_argument("--stubs", required=True)
    parser.add_argument("pages", nargs="*")
    args = parser.parse_args()
    for name in ("root", "bin_dir", "standin", "stubs"):
        setattr(args, name, os.path.abspath(getattr(args, name)))
    paths = args.pages or [os.path.join(args.root, "README.md"), *sorted(
        glob.glob(os.path.join(args.root, "docs", "**", "*.md"),
                  recursive=True))]
    failures = commands = skipped = 0
    for path in paths:
        with open(path, encoding="utf-8") as file:
            page = parse(os.path.abspath(path), file.read())
        if page.path == "README.md":
            for needed in ("list", "describe", "grpc.health.v1.Health/Check"):
                if needed not in page.has_grpcurl:
                    print(f"FAIL README.md has no `grpcurl ... {needed}` "
                          "recipe (or the extraction lost it)")
                    failures += 1
        started = time.monotonic()
        failures += run_page(args, page)
        commands += len(page.commands)
        skipped += len(page.skipped)
        print(f"---- {page.path}: {len(page.commands)} commands, "
              f"{len(page.skipped)} blocks not run, "
              f"{time.monotonic() - started:.1f} s")
    print(f"{commands} commands in {len(paths)} pages, {skipped} blocks "
          f"marked not run, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
