"""Child processes for test_processes.py: `python3 child.py MODE ADDRESS
...`. Each prints one line per step on stdout and flushes it, so the parent
can act (SIGSTOP, SIGKILL) at the right moment."""

from __future__ import annotations

import sys
import threading
import time

import leasekeeper


def say(*words: object) -> None:
    print(*words, flush=True)


def hold(address: str, ttl: str) -> None:
    """Takes "jobs/a", writes, says "holding TOKEN", then on each line of
    stdin writes again and says how that went."""
    with leasekeeper.Client(address) as client:
        lease = client.lock("jobs/a", ttl=float(ttl), wait=10)
        lease.write("owner", b"child")
        say("holding", lease.token)
        for _ in sys.stdin:
            try:
                lease.write("owner", b"child-late")
                say("written")
            except leasekeeper.LeaseLost as lost:
                say("refused", "LeaseLost", lost.end_reason)
            except leasekeeper.StaleToken:
                say("refused", "StaleToken")


def lead(address: str, log: str, terms: str) -> None:
    """Leads "election" for `terms` terms of about 0.3 s each, appending
    "start|end MONOTONIC TOKEN" lines to `log`."""
    with leasekeeper.Client(address) as client:
        for _ in range(int(terms)):
            def work(lease: leasekeeper.Lease, term: threading.Event) -> None:
                with open(log, "a") as out:
                    out.write(f"start {time.monotonic()} {lease.token}\n")
                term.wait(0.3)
                with open(log, "a") as out:
                    out.write(f"end {time.monotonic()} {lease.token}\n")

            client.run_as_leader("election", ttl=1.0, work=work,
                                 stop=threading.Event())
    say("done")


if __name__ == "__main__":
    if sys.argv[1] == "hold":
        hold(*sys.argv[2:])
    else:
        lead(*sys.argv[2:])
