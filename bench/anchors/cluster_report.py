#!/usr/bin/env python3
"""Turns bench/run-cluster-anchors's raw results into the cluster table.

Reads the JSON lines leasekeeper-bench printed (labels lk-cluster: a
three-node leasekeeper cluster, clients on its leader; etcd-cluster: etcd's
own lock recipe on the same three-member etcd; grpc-floor: a Session server
that answers at once, W1 at 64 clients only), several runs of each, and
writes the tables between <!-- cluster-anchors:begin --> and
<!-- cluster-anchors:end --> in bench/README.md's "Cluster mode" section
(with --readme; the block is printed in any case):
every figure as the median and the min-max over the runs, the issue's two
targets, the etcd transactions per leasekeeper operation at 64 clients,
where the server CPU went, and the ceiling one core allows: a leader that
cost no more than the gRPC floor, with etcd's and the followers' cost as
measured in the same run. The grouping, the figure formats, the machine
facts and the README update are report.py's (bench/run-anchors's report).
Standard library only.
"""

import argparse
import statistics

from report import (Results, facts_sentence, load_results, machine_facts, num,
                    update_readme, us)

SECTION = "## Cluster mode: failover, etcd transactions per operation, etcd space per lock"
BEGIN = "<!-- cluster-anchors:begin -->"
END = "<!-- cluster-anchors:end -->"

LK = "lk-cluster"
ETCD = "etcd-cluster"
FLOOR = "grpc-floor"
NAMES = {LK: "leasekeeper, 3 nodes (clients on the leader)",
         ETCD: "etcd's lock recipe (`etcd_lock_client.h`)"}


def spread_text(spread, fmt):
    """"median (min–max)" of a (min, median, max), each formatted by fmt."""
    if spread is None:
        return "–"
    low, mid, high = spread
    if low == high:
        return fmt(mid)
    return f"{fmt(mid)} ({fmt(low)}–{fmt(high)})"


def ratio(a, b):
    return "–" if a is None or b is None or b == 0 else f"{a / b:.2f}×"


def per_run(res, config, workload, clients, compute):
    """compute(result) for each run that has what it needs: a spread."""
    values = [v for v in (compute(r) for r in res.runs(config, workload, clients))
              if v is not None]
    if not values:
        return None
    return min(values), statistics.median(values), max(values)


def transactions_per_operation(r):
    """etcd transactions over the W1 window per Acquire or Release in it."""
    if not r.get("etcd_transactions") or not r.get("pairs"):
        return None
    return r["etcd_transactions"] / (2 * r["pairs"])


def transaction_ms(r):
    """The mean time of the leader's batch transactions over the window."""
    if not r.get("etcd_transactions") or r.get("etcd_append_s") is None:
        return None
    return 1000 * r["etcd_append_s"] / r["etcd_transactions"]


def appender_busy(r):
    """The share of the window the leader had a batch transaction in etcd
    (it sends one at a time)."""
    if r.get("etcd_append_s") is None or not r.get("duration_s"):
        return None
    return 100 * r["etcd_append_s"] / r["duration_s"]


def records_per_transaction(r):
    if not r.get("etcd_transactions"):
        return None
    return r.get("etcd_records", 0) / r["etcd_transactions"]


def cpu_share(first, count):
    """us per pair of server_cpu_ms_each[first:first+count] (the leader is
    the first of the lk-cluster server pids, the etcd members follow)."""
    def compute(r):
        each = r.get("server_cpu_ms_each")
        if not each or not r.get("pairs") or len(each) < first + count:
            return None
        return 1000 * sum(max(v, 0) for v in each[first:first + count]) / r["pairs"]
    return compute


def observed_per_pair(r):
    each = r.get("observed_cpu_ms_each")
    if not each or not r.get("pairs"):
        return None
    return 1000 * sum(max(v, 0) for v in each) / r["pairs"]


def same_run(res, config, workload, clients, run):
    """The result of config's workload in that run, or None."""
    found = [r for r in res.runs(config, workload, clients) if r.get("run") == run]
    return found[0] if found else None


def ceiling_parts(res, lk):
    """(gRPC floor, cluster's etcd members, followers) server CPU per W1 pair
    at 64 clients in lk's run (lk: the cluster's W1 result), in us, or None
    if the run lacks one."""
    floor = same_run(res, FLOOR, "w1", 64, lk.get("run"))
    if floor is None or not floor.get("server_cpu_us_per_op"):
        return None
    parts = (floor["server_cpu_us_per_op"], cpu_share(1, 3)(lk), observed_per_pair(lk))
    return None if None in parts else parts


def ceiling_table(res):
    """What one core allows the cluster at W1, 64 clients: a leader that cost
    no more than gRPC's floor, with the etcd and follower work measured."""
    def spread(compute):
        """compute(parts, lk) over the runs with every part, as per_run."""
        def one(lk):
            parts = ceiling_parts(res, lk)
            return None if parts is None else compute(parts, lk)
        return per_run(res, LK, "w1", 64, one)

    def against_etcd(parts, lk):
        etcd = same_run(res, ETCD, "w1", 64, lk.get("run"))
        if etcd is None or not etcd.get("pairs_per_s"):
            return None
        return 1e6 / sum(parts) / etcd["pairs_per_s"]

    rows = ["| at W1, 64 clients, per run | figure |", "| --- | ---: |"]
    rows.append("| gRPC floor server, CPU per pair (the leader's least) | "
                f"{spread_text(spread(lambda parts, lk: parts[0]), us)} |")
    rows.append("| floor + the cluster's etcd members + the followers, CPU per pair | "
                f"{spread_text(spread(lambda parts, lk: sum(parts)), us)} |")
    rows.append("| the ceiling: pairs per CPU-second at that cost | "
                f"{spread_text(spread(lambda parts, lk: 1e6 / sum(parts)), num)} |")
    rows.append("| the ceiling against etcd's lock in the same run | "
                f"{spread_text(spread(against_etcd), lambda v: f'{v:.2f}×')} |")
    reached = spread(lambda parts, lk: 100 * lk["pairs_per_s"] * sum(parts) / 1e6)
    rows.append("| the cluster's W1 as a share of the ceiling | "
                f"{spread_text(reached, lambda v: f'{v:.0f}%')} |")
    return rows


def targets_table(res):
    rows = ["| target | measured (median of runs) | met |", "| --- | --- | --- |"]

    def check(name, text, ok):
        mark = "–" if ok is None else ("yes" if ok else "**no**")
        rows.append(f"| {name} | {text} | {mark} |")

    a = res.median(LK, "w1", "pairs_per_s", 64)
    b = res.median(ETCD, "w1", "pairs_per_s", 64)
    check("W1, 64 clients: cluster ≥ 5 × etcd's lock",
          f"{num(a)} vs 5 × {num(b)} = {num(None if b is None else 5 * b)} pairs/s"
          + ("" if a is None or b is None or b == 0 else f" ({a / b:.2f}×)"),
          None if a is None or b is None else a >= 5 * b)
    a = res.median(LK, "w1", "server_cpu_us_per_op", 64)
    b = res.median(ETCD, "w1", "server_cpu_us_per_op", 64)
    check("(per server CPU-second) W1, 64 clients: cluster ≥ 5 × etcd's lock",
          f"{num(None if not a else 1e6 / a)} vs 5 × {num(None if not b else 1e6 / b)} "
          "pairs per CPU-second"
          + ("" if not a or not b else f" ({b / a:.2f}×)"),
          None if not a or not b else b / a >= 5)
    a = res.median(LK, "w3", "handover.p99_us")
    b = res.median(ETCD, "w3", "handover.p99_us")
    check("W3 p99: cluster < etcd's lock", f"{us(a)} vs {us(b)}",
          None if a is None or b is None else a < b)
    return rows


def side_by_side(res):
    rows = [f"| figure | {NAMES[LK]} | {NAMES[ETCD]} | leasekeeper / etcd (medians) |",
            "| --- | ---: | ---: | ---: |"]

    def row(name, workload, path, fmt, clients=None, higher_is_better=True):
        a = res.spread(LK, workload, path, clients)
        b = res.spread(ETCD, workload, path, clients)
        rows.append(f"| {name} | {spread_text(a, fmt)} | {spread_text(b, fmt)} | "
                    f"{ratio(a and a[1], b and b[1])} |")

    for c in (1, 16, 64):
        row(f"W1 pairs/s, {c} client{'s' if c > 1 else ''}", "w1", "pairs_per_s", num, c)
    for c in (1, 16, 64):
        row(f"W1 acquire p50, {c}", "w1", "acquire.p50_us", us, c)
        row(f"W1 acquire p99, {c}", "w1", "acquire.p99_us", us, c)
    for c in (1, 16, 64):
        row(f"W1 server CPU per pair, {c}", "w1", "server_cpu_us_per_op", us, c)
    row("W2 grants/s (16 clients, one lock)", "w2", "grants_per_s", num)
    row("W2 hand-overs/s", "w2", "handovers_per_s", num)
    row("W2 wait p50", "w2", "wait.p50_us", us)
    row("W2 wait p99", "w2", "wait.p99_us", us)
    row("W3 release → waiter holds, p50", "w3", "handover.p50_us", us)
    row("W3 release → waiter holds, p99", "w3", "handover.p99_us", us)
    return rows


def batching_and_cpu(res):
    rows = ["| at W1, 64 clients | leasekeeper, 3 nodes | etcd's lock recipe |",
            "| --- | ---: | ---: |"]
    tpo = per_run(res, LK, "w1", 64, transactions_per_operation)
    rpt = per_run(res, LK, "w1", 64, records_per_transaction)
    rows.append("| etcd transactions per lock operation (Acquire or Release) | "
                f"{spread_text(tpo, lambda v: f'{v:.3f}')} | 1 (a Txn each) |")
    rows.append("| log records per etcd transaction (group commit) | "
                f"{spread_text(rpt, lambda v: f'{v:.1f}')} | – |")
    ms = per_run(res, LK, "w1", 64, transaction_ms)
    rows.append("| the leader's etcd transaction, mean time | "
                f"{spread_text(ms, lambda v: f'{v:.1f} ms')} | – |")
    busy = per_run(res, LK, "w1", 64, appender_busy)
    rows.append("| share of the window with a transaction in etcd (one at a time) | "
                f"{spread_text(busy, lambda v: f'{v:.0f}%')} | – |")
    leader = per_run(res, LK, "w1", 64, cpu_share(0, 1))
    lk_etcd = per_run(res, LK, "w1", 64, cpu_share(1, 3))
    etcd = per_run(res, ETCD, "w1", 64, cpu_share(0, 3))
    rows.append("| server CPU per pair: leasekeeper leader | "
                f"{spread_text(leader, us)} | – |")
    rows.append("| server CPU per pair: the three etcd members | "
                f"{spread_text(lk_etcd, us)} | {spread_text(etcd, us)} |")
    followers = per_run(res, LK, "w1", 64, observed_per_pair)
    rows.append("| not counted above: the two followers' CPU per pair | "
                f"{spread_text(followers, us)} | – |")
    return rows


def render(res, facts):
    runs = f"{facts['runs']} run{'' if facts['runs'] == 1 else 's'}"
    lines = [BEGIN, "",
             facts_sentence(facts, f"{runs}; each cell the median and, in brackets, "
                                   "the min–max over the runs", with_redis=False),
             "",
             "Server CPU is the leader's and the three etcd members' for the cluster, the "
             "members' for etcd's lock; everything ran on CPU 0 and the load generator on "
             "CPU 1 when pinned.", ""]
    errors = sum(r.get("errors", 0) for r in res.raw)
    if errors:
        lines += [f"**{errors} calls failed** during these runs (`errors` in the raw "
                  "results): the figures of those runs are suspect.", ""]
    lines += ["**Targets**", ""] + targets_table(res) + [""]
    lines += ["**Side by side**", ""] + side_by_side(res) + [""]
    lines += ["**Batching and where the server CPU went**", ""] + batching_and_cpu(res)
    if res.runs(FLOOR, "w1", 64):
        lines += ["", "**The ceiling on one core** (every server on CPU 0: gRPC's floor "
                  "for the leader, plus what etcd and the followers spent on the "
                  "cluster's log in the same run)", ""] + ceiling_table(res)
    lines += ["", END]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--raw", required=True)
    parser.add_argument("--readme", default=None,
                        help="rewrite its cluster-anchors block (default: "
                             "only print the block)")
    parser.add_argument("--pinned", default="1")
    parser.add_argument("--nice", default="0")
    args = parser.parse_args()
    res = load_results(args.raw)
    block = render(res, machine_facts(args, res))
    print(block)
    if args.readme:
        update_readme(args.readme, block, begin=BEGIN, end=END, section=SECTION)


if __name__ == "__main__":
    main()
