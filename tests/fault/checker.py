"""The fault suite's checker: reads the histories the workers (and the final
read) recorded and reports every violation of leasekeeper's safety rules.

A history is JSON lines, one per step event: {"process", "op" (acquire,
read, write, release), "type" (invoke, ok, fail, info), "time" (CLOCK_MONOTONIC
ns, shared by every process on the machine), "lock", "token", "value"}.
Each process does one step at a time, so a step is its invoke and the next
completion of that process; an invoke without one (the process was killed)
is "info": unknown outcome.

The rules, per lock (a step's server instant lies somewhere between its
invoke and its completion, so every rule is checked only where real time
proves the order, and a violation is certain):
  1. No duplicate token: two grants never carry the same token. A process
     that is handed its own token again is not granted twice when its
     release of that lease was never confirmed: the library adopts a lease
     the server still holds for it (one grant at the server); after a
     confirmed release it is a duplicate.
  2. No falling token: a grant that completed before another was invoked
     has the lower token.
  3. No two overlapping exclusive leases on the server's word: a lease is
     certainly held from its grant's completion to the invoke of the last
     holder-checked write the server accepted under it (the server said
     "you hold it" at an instant after that invoke). Two such intervals of
     different tokens must not overlap.
  4. No stale token accepted: a write the store accepted after an accepted
     write with a higher token completed.
  5. No lost acknowledged write: a read (the final one included) invoked
     after an acknowledged write of value v completed returns at least v
     (the counter only grows: each write is the value read plus one).
  6. No lost increment: no two acknowledged writes carry the same value
     (two read-modify-writes from the same read: one increment is lost);
     and every value up to the final one was written by some write that was
     acknowledged or of unknown outcome (no value from nowhere).

Usage: checker.py HISTORY... [--expect-violation]. Exit status 0 when the
history is valid (or, with --expect-violation, when it is not), 1 otherwise;
the violations and a summary go to stdout.

Thread-safety: pure functions.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from typing import Iterable, Optional, Sequence


@dataclass
class Step:
    process: str
    op: str
    lock: str
    invoke: int
    complete: Optional[int]  # None: never completed (killed)
    outcome: str             # ok, fail, info
    token: Optional[int] = None
    value: Optional[int] = None


@dataclass
class Report:
    violations: list[str] = field(default_factory=list)
    steps: int = 0
    grants: int = 0
    acknowledged_writes: int = 0
    unknown_writes: int = 0
    final_values: dict[str, int] = field(default_factory=dict)

    @property
    def valid(self) -> bool:
        return not self.violations

    def summary(self) -> str:
        return (f"{self.steps} steps, {self.grants} grants, "
                f"{self.acknowledged_writes} acknowledged writes, "
                f"{self.unknown_writes} of unknown outcome, final values "
                f"{self.final_values}: "
                + ("valid" if self.valid
                   else f"{len(self.violations)} violation(s)"))


def read_events(paths: Sequence[str]) -> list[dict[str, object]]:
    events: list[dict[str, object]] = []
    for path in paths:
        with open(path, encoding="utf-8") as lines:
            for line in lines:
                line = line.strip()
                if not line:
                    continue
                try:
                    events.append(json.loads(line))
                except json.JSONDecodeError:
                    continue  # a line cut by a SIGKILL
    return events


def _int(event: dict[str, object], name: str) -> Optional[int]:
    value = event.get(name)
    return value if isinstance(value, int) else None


def pair_steps(events: Iterable[dict[str, object]]) -> list[Step]:
    """Each process's invokes paired with their completions."""
    by_process: dict[str, list[dict[str, object]]] = {}
    for event in events:
        if event.get("process") == "nemesis":
            continue
        by_process.setdefault(str(event["process"]), []).append(event)
    steps: list[Step] = []
    for process, own in by_process.items():
        own.sort(key=lambda e: int(e["time"]))  # type: ignore[call-overload]
        open_step: Optional[Step] = None
        for event in own:
            kind = event["type"]
            if kind == "invoke":
                if open_step is not None:
                    steps.append(open_step)  # never completed: info
                open_step = Step(process, str(event["op"]), str(event["lock"]),
                                 int(event["time"]),  # type: ignore[call-overload]
                                 None, "info", _int(event, "token"),
                                 _int(event, "value"))
            elif open_step is not None and event["op"] == open_step.op:
                open_step.complete = int(event["time"])  # type: ignore[call-overload]
                open_step.outcome = str(kind)
                if _int(event, "token") is not None:
                    open_step.token = _int(event, "token")
                if _int(event, "value") is not None:
                    open_step.value = _int(event, "value")
                steps.append(open_step)
                open_step = None
        if open_step is not None:
            steps.append(open_step)
    return steps


def _lower_after(completed: list[Step], invoked: list[Step],
                 key: str) -> list[tuple[Step, Step]]:
    """Each step of `invoked` whose `key` is lower than that of a step of
    `completed` that completed before it was invoked (real time proves the
    order), with the highest such step. Cost: O(n log n)."""
    done = sorted(completed, key=lambda s: s.complete or 0)
    found: list[tuple[Step, Step]] = []
    best: Optional[Step] = None
    index = 0
    for step in sorted(invoked, key=lambda s: s.invoke):
        while index < len(done) and (done[index].complete or 0) < step.invoke:
            candidate = done[index]
            if best is None or (getattr(candidate, key) or 0) > (
                    getattr(best, key) or 0):
                best = candidate
            index += 1
        if best is not None and (getattr(step, key) or 0) < (
                getattr(best, key) or 0):
            found.append((step, best))
    return found


def _repeats(steps: list[Step], key: str) -> list[tuple[Step, Step]]:
    """(first, again) for each step whose `key` an earlier one had."""
    first: dict[object, Step] = {}
    found: list[tuple[Step, Step]] = []
    for step in steps:
        earlier = first.setdefault(getattr(step, key), step)
        if earlier is not step:
            found.append((earlier, step))
    return found


def check_lock(lock: str, steps: list[Step], report: Report) -> None:
    grants = [s for s in steps if s.op == "acquire" and s.outcome == "ok"
              and s.token is not None]
    writes_ok = [s for s in steps if s.op == "write" and s.outcome == "ok"]
    writes_unknown = [s for s in steps if s.op == "write"
                      and s.outcome == "info" and s.value is not None]
    reads_ok = [s for s in steps if s.op == "read" and s.outcome == "ok"
                and s.value is not None]
    report.grants += len(grants)
    report.acknowledged_writes += len(writes_ok)
    report.unknown_writes += len(writes_unknown)
    bad = report.violations

    # 1. Duplicate tokens.
    released = {(s.process, s.token): s.complete or 0 for s in steps
                if s.op == "release" and s.outcome == "ok"}
    for first, again in _repeats(grants, "token"):
        adopted = first.process == again.process and (
            released.get((first.process, first.token), again.invoke + 1)
            > again.invoke)
        if not adopted:
            bad.append(f"{lock}: duplicate token {again.token} granted to "
                       f"{first.process} and {again.process}")

    # 2. Falling tokens.
    for grant, before in _lower_after(grants, grants, "token"):
        bad.append(f"{lock}: falling token: {grant.process} was granted "
                   f"{grant.token} after {before.process}'s grant of "
                   f"{before.token} had completed")

    # 3. Overlapping exclusive leases on the server's word.
    last_proof: dict[tuple[str, Optional[int]], int] = {}
    for write in writes_ok:
        key = (write.process, write.token)
        last_proof[key] = max(last_proof.get(key, write.invoke), write.invoke)
    intervals: list[tuple[int, int, Step]] = []
    for grant in grants:
        proof = last_proof.get((grant.process, grant.token))
        if proof is not None and grant.complete is not None and (
                proof > grant.complete):
            intervals.append((grant.complete, proof, grant))
    intervals.sort(key=lambda i: i[0])
    widest: Optional[tuple[int, int, Step]] = None
    for interval in intervals:
        if widest is not None and interval[0] < widest[1] and (
                interval[2].token != widest[2].token):
            bad.append(f"{lock}: two exclusive leases at once on the "
                       f"server's word: {widest[2].process} (token "
                       f"{widest[2].token}) and {interval[2].process} "
                       f"(token {interval[2].token})")
        if widest is None or interval[1] > widest[1]:
            widest = interval

    # 4. A stale token accepted by the fenced store.
    for write, before in _lower_after(writes_ok, writes_ok, "token"):
        bad.append(f"{lock}: stale token accepted: {write.process}'s "
                   f"write with token {write.token} after "
                   f"{before.process}'s with token {before.token}")

    # 5. Lost acknowledged writes.
    for read, before in _lower_after(writes_ok, reads_ok, "value"):
        bad.append(f"{lock}: lost acknowledged write: {read.process} "
                   f"read {read.value} after {before.process}'s write "
                   f"of {before.value} was acknowledged")

    # 6. Lost increments.
    for first, again in _repeats(writes_ok, "value"):
        bad.append(f"{lock}: lost increment: {first.process} (token "
                   f"{first.token}) and {again.process} (token "
                   f"{again.token}) both wrote {again.value}")
    written = {s.value for s in writes_ok}
    final = [s for s in reads_ok if s.process == "final"]
    if final:
        value = max(s.value or 0 for s in final)
        report.final_values[lock] = value
        possible = written | {s.value for s in writes_unknown}
        missing = [v for v in range(1, value + 1) if v not in possible]
        if missing:
            bad.append(f"{lock}: final value {value} but no write of "
                       f"{missing[:5]}{'...' if len(missing) > 5 else ''}")


def check(events: Iterable[dict[str, object]]) -> Report:
    steps = pair_steps(events)
    report = Report(steps=len(steps))
    by_lock: dict[str, list[Step]] = {}
    for step in steps:
        by_lock.setdefault(step.lock, []).append(step)
    for lock in sorted(by_lock):
        check_lock(lock, by_lock[lock], report)
    return report


KINDS = ("duplicate token", "falling token", "two exclusive leases at once",
         "stale token accepted", "lost acknowledged write", "lost increment",
         "no write of")


def kinds(report: Report) -> dict[str, tuple[int, str]]:
    """The violations by kind: how many, and the first one."""
    found: dict[str, tuple[int, str]] = {}
    for violation in report.violations:
        kind = next((k for k in KINDS if k in violation), "other")
        count, first = found.get(kind, (0, violation))
        found[kind] = (count + 1, first)
    return found


def main(argv: Sequence[str]) -> int:
    expect_violation = "--expect-violation" in argv
    paths = [a for a in argv if not a.startswith("--")]
    if not paths:
        print("usage: checker.py HISTORY... [--expect-violation]",
              file=sys.stderr)
        return 2
    report = check(read_events(paths))
    for violation in report.violations:
        print("VIOLATION", violation)
    for kind, (count, _) in kinds(report).items():
        print(f"{count} x {kind}")
    print(report.summary())
    if expect_violation:
        return 0 if not report.valid else 1
    return 0 if report.valid else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
