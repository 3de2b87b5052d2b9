"""Every grpcurl recipe of README.md, run against a real leasekeeperd.

Extracts each `grpcurl ...` command from the README's code blocks (with the
shell variables the block sets, and commands continued over several lines
inside a quoted JSON), points it at a fresh plaintext daemon on 127.0.0.1,
and runs it through grpcurl_standin.py, which knows only what the server's
reflection tells it. Each recipe must succeed; where the README shows the
answer (`# {...}` on the next line) the JSON must be that answer. Recipes
run in README order against one daemon, as a reader would type them.

Also checks the stand-in's reflection: v1 is asked first and answers, and
v1alpha alone gives the same listing.

usage: readme_recipes_test.py --readme README.md --leasekeeperd BIN
       --standin grpcurl_standin.py --stubs DIR
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "python"))
from leasekeeper.testing import LocalServer  # noqa: E402

README_ADDRESS = re.compile(r"^(127\.0\.0\.1|localhost):\d+$")
ASSIGNMENTS = re.compile(r"^\s*(?:[A-Z_][A-Z0-9_]*=\S+?;?\s*)+$")


@dataclass
class Recipe:
    line: int                  # 1-based line in the README
    text: str                  # as written, continuation lines joined
    argv: list[str]            # after the block's variables
    expected: object | None = None   # the JSON answer the README shows
    variables: dict[str, str] = field(default_factory=dict)


def extract(readme: str) -> list[Recipe]:
    lines = readme.splitlines()
    recipes: list[Recipe] = []
    variables: dict[str, str] = {}
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if not line.startswith("    "):
            if stripped and not line.startswith(" "):
                variables = {}  # a new paragraph: the block's shell is gone
            i += 1
            continue
        if ASSIGNMENTS.match(stripped):
            for assignment in stripped.replace(";", " ").split():
                name, _, value = assignment.partition("=")
                variables[name] = value
            i += 1
            continue
        if not stripped.startswith("grpcurl "):
            i += 1
            continue
        start = i
        text = stripped
        while True:
            try:
                words = shlex.split(text, comments=True)
                break
            except ValueError:  # a quote continues on the next line
                i += 1
                if i >= len(lines):
                    raise SystemExit(f"README.md:{start + 1}: unterminated "
                                     "grpcurl recipe")
                text += "\n" + lines[i].strip()
        expanded = [re.sub(r"\$(\w+)", lambda m: variables.get(
            m.group(1), m.group(0)), word) for word in words]
        recipe = Recipe(start + 1, text, expanded, variables=dict(variables))
        following = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if following.startswith("# {") or following.startswith("# ["):
            recipe.expected, _ = json.JSONDecoder().raw_decode(following[2:])
        recipes.append(recipe)
        i += 1
    return recipes


def run_standin(args: argparse.Namespace, argv: list[str]
                ) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=args.stubs)
    return subprocess.run([sys.executable, args.standin, *argv], env=env,
                          capture_output=True, text=True, timeout=60)


def check_recipe(args: argparse.Namespace, daemon: LocalServer,
                 recipe: Recipe) -> str | None:
    """None if the recipe works as the README says, else what went wrong."""
    argv = recipe.argv[1:]
    targets = [i for i, word in enumerate(argv) if README_ADDRESS.match(word)]
    if len(targets) != 1:
        return f"names {len(targets)} addresses of the form 127.0.0.1:PORT"
    argv[targets[0]] = daemon.address
    result = run_standin(args, argv)
    if result.returncode != 0:
        return (f"exit code {result.returncode}\n{result.stderr.strip()}")
    if recipe.expected is not None:
        try:
            answer = json.loads(result.stdout)
        except json.JSONDecodeError:
            return f"printed no JSON: {result.stdout!r}"
        if answer != recipe.expected:
            return (f"answered {json.dumps(answer)}, the README shows "
                    f"{json.dumps(recipe.expected)}")
    return None


def check_reflection_versions(args: argparse.Namespace, daemon: LocalServer
                              ) -> list[str]:
    problems = []
    default = run_standin(args, ["-plaintext", "-v", daemon.address, "list"])
    if "reflection: grpc.reflection.v1.ServerReflection" not in default.stderr:
        problems.append("the stand-in did not get its answer from "
                        f"reflection v1: {default.stderr.strip()}")
    alpha = run_standin(args, ["-plaintext", "-reflection-version", "v1alpha",
                               daemon.address, "list"])
    if alpha.returncode != 0 or alpha.stdout != default.stdout:
        problems.append(f"v1alpha lists {alpha.stdout!r} (exit "
                        f"{alpha.returncode}), v1 {default.stdout!r}")
    for service in ("leasekeeper.v1.LockService", "grpc.health.v1.Health",
                    "grpc.reflection.v1.ServerReflection"):
        if service not in default.stdout.split():
            problems.append(f"list does not name {service}")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--readme", required=True)
    parser.add_argument("--leasekeeperd", required=True)
    parser.add_argument("--standin", required=True)
    parser.add_argument("--stubs", required=True)
    args = parser.parse_args()
    with open(args.readme, encoding="utf-8") as file:
        recipes = extract(file.read())
    # The README's own promises: a listing, a describe, the health check and
    # calls of LockService; an extraction that found none of them is broken.
    verbs = {r.argv[-1] if r.argv[-2:-1] != ["describe"] else "describe"
             for r in recipes}
    for needed in ("list", "describe", "grpc.health.v1.Health/Check"):
        if needed not in verbs:
            print(f"FAIL: README.md has no `grpcurl ... {needed}` recipe "
                  "(or the extraction lost it)")
            return 1
    failures = 0
    # The daemon's own session grace (2 s), with a data dir, as a reader's.
    with tempfile.TemporaryDirectory(prefix="lk-recipes-") as data_dir, \
            LocalServer(session_grace=2.0, binary=args.leasekeeperd,
                        extra_flags=[f"--data-dir={data_dir}"]) as daemon:
        for recipe in recipes:
            problem = check_recipe(args, daemon, recipe)
            status = "ok  " if problem is None else "FAIL"
            print(f"{status} README.md:{recipe.line}: {recipe.text}")
            if problem is not None:
                failures += 1
                print("     " + problem.replace("\n", "\n     "))
        for problem in check_reflection_versions(args, daemon):
            failures += 1
            print(f"FAIL reflection: {problem}")
    print(f"{len(recipes)} recipes, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
