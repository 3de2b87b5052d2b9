"""The exception tree written in docs/clients.md is the package's: every
LeasekeeperError subclass, under its real base class, and nothing else."""

from __future__ import annotations

import re
from pathlib import Path

import leasekeeper
from leasekeeper import errors

CLIENTS_MD = Path(__file__).resolve().parents[2] / "docs" / "clients.md"
# A class name after the tree's drawing characters, then spaces or the end.
ENTRY = re.compile(r"^([ │├└─]*)([A-Z][a-z]+(?:[A-Z][a-z]+)*)(?:\s|$)")


def documented_tree() -> dict[str, str]:
    """{class: its parent in the drawing} of the ```text block that starts
    with LeasekeeperError; the root's parent is ""."""
    text = CLIENTS_MD.read_text()
    start = text.index("```text\nLeasekeeperError")
    block = text[start:text.index("```\n", start + 3)].splitlines()[1:]
    parents: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    for line in block:
        match = ENTRY.match(line)
        if match is None:
            continue
        column, name = len(match.group(1)), match.group(2)
        while stack and stack[-1][0] >= column:
            stack.pop()
        parents[name] = stack[-1][1] if stack else ""
        stack.append((column, name))
    return parents


def actual_tree() -> dict[str, str]:
    parents = {"LeasekeeperError": ""}
    pending = [errors.LeasekeeperError]
    while pending:
        cls = pending.pop()
        for sub in cls.__subclasses__():
            if sub.__module__ == errors.__name__:
                parents[sub.__name__] = cls.__name__
                pending.append(sub)
    return parents


def test_the_documented_exception_tree_is_the_packages() -> None:
    assert documented_tree() == actual_tree()


def test_every_documented_exception_is_exported() -> None:
    for name in documented_tree():
        assert getattr(leasekeeper, name) is getattr(errors, name), name
        assert name in leasekeeper.__all__, name
