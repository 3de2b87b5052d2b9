#!/usr/bin/env python3
"""Differential test: leasekeeper-replay against the naive model (model.py).

Runs random operation sequences (fixed seeds, so a failure reproduces)
through both and demands identical JSON results, operation by operation.
Prints the first differing operation of each failing sequence, and a closing
'N passed, M failed' line.

usage: differential_test.py REPLAY_BINARY [SEQUENCES] [FIRST_SEED]
       differential_test.py --semaphores SEMAPHORE_DRIVER [SEQUENCES] [FIRST_SEED]

With --semaphores the binary is semaphore_driver (the core with the daemon's
counting semaphores, which the replay does not have) and the model runs with
semaphores=True; the sequences are well-typed and mix semaphore, shared and
exclusive requests on the same locks.
"""

import json
import random
import subprocess
import sys

from model import run as model_run

CLIENTS = ["a", "b", "c", "d", "e", "f"]
LOCKS = ["L1", "L2", "L3", "M"]


def random_value(rng):
    return rng.choice([0, -1, 1.0, True, None, "", "x", [], {}, 86401, 2 ** 70])


def random_op(rng, ts, long_leases):
    kind = rng.choices(
        ["acquire", "renew", "release", "write", "read", "inspect", "status", "repeat", "bad"],
        weights=[40, 10, 16, 8, 4, 5, 5, 2, 3])[0]
    c, l = rng.choice(CLIENTS), rng.choice(LOCKS)
    ttl = rng.randint(1, 60) if rng.random() < 0.93 else rng.choice([0, 86400, 86401])
    if long_leases:
        ttl = rng.randint(100, 1000)
    if kind == "acquire":
        op = ["acquire", ts, c, l, ttl]
        if rng.random() < 0.5:
            op.append(rng.choice(["shared", "shared", "exclusive", "read"]))
    elif kind == "renew":
        op = ["renew", ts, c, l, ttl]
    elif kind == "release":
        op = ["release", ts, c, l]
    elif kind == "write":
        op = ["write", ts, l, rng.choice(["k1", "k2"]), rng.choice(["v1", "v2", "v3"]),
              rng.choice([1, 2, 3, 4, 5, rng.randint(1, 12), 0])]
    elif kind == "read":
        op = ["read", ts, l, rng.choice(["k1", "k2"])]
    elif kind == "inspect":
        op = ["inspect", ts, l]
    elif kind == "status":
        op = ["status", ts, c]
    elif kind == "repeat":
        template = rng.choice([
            ["acquire", "{i%6}", "L{i%3}", rng.randint(1, 20)],
            ["acquire", "r{i}", "S{i+1%2}", rng.randint(1, 20), "shared"],
            ["release", "{i%6}", "L{i%3}"],
            ["inspect", "L{i}"],
            ["nope", "x"],
        ])
        op = ["repeat", ts, template, rng.randint(1, 30), rng.randint(0, 3)]
    else:
        op = rng.choice([
            ["acquire", ts, c], ["frobnicate", ts], ["acquire", True, c, l, 5], [],
            ["release", ts, c, l, 1], ["write", ts, l, "k", "v", 1.0],
        ])
    if rng.random() < 0.03 and len(op) > 2:
        op[rng.randrange(2, len(op))] = random_value(rng)
    return op


def random_sequence(rng, make_op=random_op, long_lease_odds=0.35, longest_jump=5000):
    # Some sequences (one in three by default) use long leases and small
    # steps, so that clients pile up holding several locks and wait-for
    # cycles (deadlocks) are common.
    long_leases = rng.random() < long_lease_odds
    ts, ops = 0, []
    for _ in range(rng.randint(10, 120)):
        r = rng.random()
        ts += 0 if r < 0.3 else rng.randint(1, 8) if r < 0.95 else rng.randint(50, longest_jump)
        ops.append(make_op(rng, ts, long_leases))
    return ops


def random_semaphore_op(rng, ts, long_leases):
    kind = rng.choices(["acquire", "renew", "release", "inspect", "status"],
                       weights=[50, 8, 22, 10, 5])[0]
    c, l = rng.choice(CLIENTS), rng.choice(LOCKS)
    ttl = rng.randint(100, 1000) if long_leases else rng.randint(1, 40)
    if kind == "acquire":
        op = ["acquire", ts, c, l, ttl]
        # L1 and L2 are mostly semaphores, L3 mostly a plain lock, M either:
        # mostly one kind and capacity per lock, sometimes the other (a
        # mismatch, or a new kind once the lock is idle).
        semaphore_odds = {"L1": 0.95, "L2": 0.95, "L3": 0.05, "M": 0.5}[l]
        if rng.random() < semaphore_odds:
            n = {"L1": 2, "L2": 1, "L3": 3, "M": 2}[l] if rng.random() < 0.95 else rng.randint(1, 4)
            op += ["semaphore", n]
        elif rng.random() < 0.5:
            op.append(rng.choice(["shared", "exclusive"]))
    elif kind == "renew":
        op = ["renew", ts, c, l, ttl]
    elif kind == "release":
        op = ["release", ts, c, l]
    elif kind == "inspect":
        op = ["inspect", ts, l]
    else:
        op = ["status", ts, c]
    return op


def random_semaphore_sequence(rng):
    return random_sequence(rng, random_semaphore_op, long_lease_odds=0.5, longest_jump=2000)


def main():
    args = sys.argv[1:]
    semaphores = bool(args) and args[0] == "--semaphores"
    if semaphores:
        args = args[1:]
    replay = args[0]
    sequences = int(args[1]) if len(args) > 1 else 2000
    first_seed = int(args[2]) if len(args) > 2 else 1
    make = random_semaphore_sequence if semaphores else random_sequence
    batch = []
    for seed in range(first_seed, first_seed + sequences):
        batch.append((seed, make(random.Random(seed))))
    # One replay process per sequence would dominate the run time; a
    # sequence's operations are self-contained, so run each through its own
    # replay invocation only when needed: here, in chunks joined by a marker.
    passed = failed = 0
    for seed, ops in batch:
        out = subprocess.run([replay], input=json.dumps(ops), capture_output=True, text=True)
        if out.returncode != 0:
            failed += 1
            print(f"seed {seed}: replay exited {out.returncode}: {out.stderr.strip()}")
            continue
        got, want = json.loads(out.stdout), model_run(ops, semaphores)
        if got == want:
            passed += 1
            continue
        failed += 1
        for i, (g, w) in enumerate(zip(got, want)):
            if g != w:
                print(f"seed {seed}: operation {i} {json.dumps(ops[i])}\n  replay: {json.dumps(g)}\n  model:  {json.dumps(w)}")
                break
        else:
            print(f"seed {seed}: result counts differ ({len(got)} vs {len(want)})")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
