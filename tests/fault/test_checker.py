"""The fault checker on crafted histories: it accepts valid ones (including
unknown outcomes and killed processes) and fails each kind of violation."""

from __future__ import annotations

import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import checker  # noqa: E402


class HistoryBuilder:
    """Events at explicit times; cycle() records one full fenced RMW."""

    def __init__(self) -> None:
        self.events: list[dict[str, object]] = []

    def event(self, process: str, op: str, kind: str, time: int,
              lock: str = "L", **fields: object) -> None:
        self.events.append(dict(process=process, op=op, type=kind, time=time,
                                lock=lock, **fields))

    def step(self, process: str, op: str, start: int, end: int,
             outcome: str = "ok", lock: str = "L", **fields: object) -> None:
        self.event(process, op, "invoke", start, lock, **fields)
        self.event(process, op, outcome, end, lock, **fields)

    def cycle(self, process: str, start: int, token: int, read: int,
              lock: str = "L", write_outcome: str = "ok") -> int:
        """acquire, read `read`, write read+1, release: 10 time units."""
        self.step(process, "acquire", start, start + 1, lock=lock,
                  token=token)
        self.step(process, "read", start + 2, start + 3, lock=lock,
                  token=token, value=read)
        self.step(process, "write", start + 4, start + 5, write_outcome,
                  lock=lock, token=token, value=read + 1)
        self.step(process, "release", start + 6, start + 7, lock=lock,
                  token=token)
        return start + 10

    def final(self, time: int, value: int, lock: str = "L") -> None:
        self.step("final", "read", time, time + 1, lock=lock, value=value)

    def check(self) -> checker.Report:
        return checker.check(self.events)


def valid_history() -> HistoryBuilder:
    h = HistoryBuilder()
    t = h.cycle("w1", 0, token=1, read=0)
    t = h.cycle("w2", t, token=2, read=1)
    t = h.cycle("w1", t, token=3, read=2)
    h.final(t, 3)
    return h


def test_a_valid_history_passes() -> None:
    report = valid_history().check()
    assert report.valid, report.violations
    assert report.grants == 3
    assert report.acknowledged_writes == 3
    assert report.final_values == {"L": 3}


def test_unknown_outcomes_and_killed_processes_pass() -> None:
    h = HistoryBuilder()
    t = h.cycle("w1", 0, token=1, read=0)
    # w2's write may or may not have happened (UNAVAILABLE): the final value
    # may include it.
    t = h.cycle("w2", t, token=2, read=1, write_outcome="info")
    # w3 was killed after invoking its acquire.
    h.event("w3", "acquire", "invoke", t)
    t = h.cycle("w1", t + 2, token=4, read=2)
    h.final(t, 3)
    report = h.check()
    assert report.valid, report.violations


def test_concurrent_grants_may_come_in_either_token_order() -> None:
    # Two acquires overlapping in real time: no order is proven.
    h = HistoryBuilder()
    h.step("w1", "acquire", 0, 10, token=2)
    h.step("w2", "acquire", 1, 5, token=1)
    assert h.check().valid


def test_a_duplicate_token_fails() -> None:
    h = valid_history()
    h.step("w3", "acquire", 100, 101, token=2)
    report = h.check()
    assert any("duplicate token 2" in v for v in report.violations)


def test_a_lease_adopted_again_after_an_unconfirmed_release_passes() -> None:
    # w1's release of token 1 timed out; the server still held the lease,
    # and w1's next acquire adopted it: one grant at the server.
    h = HistoryBuilder()
    h.step("w1", "acquire", 0, 1, token=1)
    h.step("w1", "release", 2, 3, "info", token=1)
    h.step("w1", "acquire", 4, 5, "fail")
    h.step("w1", "acquire", 6, 7, token=1)
    assert h.check().valid


def test_writes_under_an_adopted_lease_are_one_lease_not_two() -> None:
    # As above, with holder-checked writes under both grants of token 1:
    # the intervals overlap, but they are the same lease at the server.
    h = HistoryBuilder()
    h.step("w1", "acquire", 0, 1, token=1)
    h.step("w1", "write", 2, 3, token=1, value=1)
    h.step("w1", "release", 4, 5, "info", token=1)
    h.step("w1", "acquire", 6, 7, token=1)
    h.step("w1", "write", 8, 9, token=1, value=2)
    report = h.check()
    assert report.valid, report.violations


def test_a_process_killed_during_a_write_and_restarted_passes() -> None:
    # w2 was killed with its write invoked (unknown outcome), started again
    # and went on: the killed write may account for the final value.
    h = HistoryBuilder()
    t = h.cycle("w1", 0, token=1, read=0)
    h.step("w2", "acquire", t, t + 1, token=2)
    h.step("w2", "read", t + 2, t + 3, token=2, value=1)
    h.event("w2", "write", "invoke", t + 4, token=2, value=2)
    t = h.cycle("w2", t + 10, token=3, read=2)
    h.final(t, 3)
    report = h.check()
    assert report.valid, report.violations
    assert report.unknown_writes == 1


def test_the_same_token_after_a_confirmed_release_fails() -> None:
    h = HistoryBuilder()
    h.step("w1", "acquire", 0, 1, token=1)
    h.step("w1", "release", 2, 3, token=1)
    h.step("w1", "acquire", 4, 5, token=1)
    report = h.check()
    assert any("duplicate token 1" in v for v in report.violations)


def test_a_falling_token_fails() -> None:
    h = HistoryBuilder()
    t = h.cycle("w1", 0, token=5, read=0)
    h.cycle("w2", t, token=4, read=1)
    report = h.check()
    assert any("falling token" in v for v in report.violations), \
        report.violations


def test_two_overlapping_exclusive_leases_fail() -> None:
    h = HistoryBuilder()
    # w1 holds token 1 from t=1 and the server accepts its write invoked at
    # t=20; w2 was granted token 2 at t=6: both held between 6 and 20.
    h.step("w1", "acquire", 0, 1, token=1)
    h.step("w2", "acquire", 2, 6, token=2)
    h.step("w2", "write", 7, 8, token=2, value=1)
    h.step("w1", "write", 20, 21, token=1, value=2)
    report = h.check()
    assert any("two exclusive leases at once" in v
               for v in report.violations), report.violations


def test_a_stale_token_accepted_by_the_store_fails() -> None:
    h = HistoryBuilder()
    h.step("w2", "write", 0, 1, token=2, value=1)
    h.step("w1", "write", 5, 6, token=1, value=2)
    report = h.check()
    assert any("stale token accepted" in v for v in report.violations)


def test_a_lost_acknowledged_write_fails() -> None:
    h = HistoryBuilder()
    t = h.cycle("w1", 0, token=1, read=0)
    t = h.cycle("w2", t, token=2, read=1)  # acknowledged: the value is 2
    h.final(t, 1)                          # ... but the server says 1
    report = h.check()
    assert any("lost acknowledged write" in v for v in report.violations)


def test_a_lost_increment_fails() -> None:
    h = HistoryBuilder()
    # Both read 0 and both writes were acknowledged: one increment is lost.
    h.step("w1", "acquire", 0, 1, token=1)
    h.step("w2", "acquire", 0, 1, lock="L", token=2)
    h.step("w1", "read", 2, 3, token=1, value=0)
    h.step("w2", "read", 2, 3, token=2, value=0)
    h.step("w1", "write", 4, 5, token=1, value=1)
    h.step("w2", "write", 4, 5, token=2, value=1)
    h.final(10, 1)
    report = h.check()
    assert any("lost increment" in v for v in report.violations)


def test_one_process_writing_the_same_value_twice_is_a_lost_increment() -> None:
    # What a stale leader does to a process that goes between it and the
    # new one: the same token on both (each grants it from the state they
    # shared), the same value read on both, two acknowledged writes of it.
    h = HistoryBuilder()
    t = h.cycle("w1", 0, token=1, read=0)
    t = h.cycle("w1", t, token=2, read=1)
    h.cycle("w1", t, token=2, read=1)
    report = h.check()
    assert any("lost increment: w1 (token 2) and w1 (token 2) both wrote 2"
               in v for v in report.violations), report.violations
    assert any("lost acknowledged write: w1 read 1" in v
               for v in report.violations), report.violations


def test_two_leaders_serving_from_one_state_break_every_rule() -> None:
    # The shape of a run against nodes built with the failpoint
    # LEASEKEEPER_FAILPOINT_UNGUARDED_APPEND (tests/fault/run-unguarded):
    # after a common start, the old leader (resumed, unfenced) serves w1
    # and the new one serves w2, each from its own copy of the state, both
    # granting the next tokens and counting on from the same value.
    h = HistoryBuilder()
    h.cycle("w1", 0, token=1, read=0)   # both leaders know this
    h.cycle("w1", 10, token=2, read=1)  # old leader
    h.cycle("w2", 12, token=3, read=1)  # new leader, overlapping w1's lease
    h.cycle("w1", 22, token=3, read=2)  # old leader: token 3 again
    h.cycle("w1", 32, token=4, read=3)
    h.cycle("w1", 42, token=5, read=4)
    h.cycle("w2", 52, token=4, read=2)  # new leader, from its own state
    h.final(70, 3)                      # the new leader answers
    found = checker.kinds(h.check())
    assert set(found) == {"duplicate token", "falling token",
                          "two exclusive leases at once",
                          "stale token accepted", "lost acknowledged write",
                          "lost increment"}, found


def test_a_value_nobody_wrote_fails() -> None:
    h = HistoryBuilder()
    t = h.cycle("w1", 0, token=1, read=0)
    h.final(t, 3)
    report = h.check()
    assert any("no write of [2, 3]" in v for v in report.violations), \
        report.violations


def test_locks_are_checked_apart() -> None:
    h = HistoryBuilder()
    t = h.cycle("w1", 0, token=1, read=0, lock="A")
    t = h.cycle("w2", t, token=1, read=0, lock="B")
    h.final(t, 1, lock="A")
    h.final(t, 1, lock="B")
    assert h.check().valid


def test_violations_are_counted_by_kind() -> None:
    h = valid_history()
    h.step("w3", "acquire", 100, 101, token=2)
    h.step("w4", "acquire", 102, 103, token=3)
    found = checker.kinds(h.check())
    assert found["duplicate token"][0] == 2


def test_the_command_line_exits_by_the_verdict() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        good = os.path.join(tmp, "good.jsonl")
        with open(good, "w", encoding="utf-8") as out:
            for event in valid_history().events:
                out.write(json.dumps(event) + "\n")
            out.write('{"process": "w1", "op": "acq')  # a line cut by SIGKILL
        assert checker.main([good]) == 0
        assert checker.main([good, "--expect-violation"]) == 1
        h = valid_history()
        h.step("w3", "acquire", 100, 101, token=2)
        bad = os.path.join(tmp, "bad.jsonl")
        with open(bad, "w", encoding="utf-8") as out:
            for event in h.events:
                out.write(json.dumps(event) + "\n")
        assert checker.main([bad]) == 1
        assert checker.main([bad, "--expect-violation"]) == 0
