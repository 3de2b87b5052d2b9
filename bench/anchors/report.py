#!/usr/bin/env python3
"""Turns leasekeeper-bench's raw results into the report.

Reads the JSON lines bench/run-anchors collected (one per bench invocation,
several runs of each), takes the median over the runs of every figure, and
writes:
  <results>/anchors.json   machine facts, medians, and every raw result
  <results>/anchors.csv    one row per figure: median and each run
  <results>/latency.dat    the plot's data (bench/plot.gnuplot)
  <readme>                 the tables between the markers
                           <!-- anchors:begin --> and <!-- anchors:end -->
                           in the section "Leasekeeper against Redis and etcd"
Run by bench/run-anchors; standard library only.
"""

import argparse
import csv
import datetime
import json
import os
import platform
import re
import statistics
import subprocess
from collections import defaultdict

SECTION = "## Leasekeeper against Redis and etcd"
BEGIN = "<!-- anchors:begin -->"
END = "<!-- anchors:end -->"

LK_FSYNC = os.environ.get("LK_FSYNC", "0") == "1"

# config -> (tier, display name)
CONFIGS = {
    "lk-batch": ("durable", "leasekeeper `--fsync batch`"),
    "lk-default": ("both", "leasekeeper (in memory: no `--fsync` flag yet)"),
    "redis-aof": ("durable", "Redis, AOF `appendfsync everysec`"),
    "etcd": ("durable", "etcd, defaults (WAL fsync per raft batch)"),
    "lk-never": ("memory", "leasekeeper `--fsync never`"),
    "grpc-floor": ("memory", "gRPC floor: Session server that answers at once (no lock work)"),
    "redis-none": ("memory", "Redis, no persistence"),
}
ORDER = ["lk-batch", "lk-default", "redis-aof", "etcd", "lk-never", "grpc-floor",
         "redis-none"]
# Not lock services (bench/anchors/grpc_floor_server.cc): W1 only, shown in
# the W1 table as what gRPC alone costs, and in no other table or target.
W1_ONLY = {"grpc-floor"}
SHORT = {
    "lk-batch": "leasekeeper batch",
    "lk-default": "leasekeeper",
    "redis-aof": "Redis AOF",
    "etcd": "etcd",
    "lk-never": "leasekeeper never",
    "grpc-floor": "gRPC floor",
    "redis-none": "Redis no-persist",
}


def tier_name(config):
    tier = CONFIGS[config][0]
    return {"durable": "durable", "memory": "in memory", "both": "(see note)"}[tier]


def get(obj, path):
    for part in path.split("."):
        if not isinstance(obj, dict) or part not in obj:
            return None
        obj = obj[part]
    return obj


class Results:
    def __init__(self, lines):
        self.raw = lines
        # (config, workload, clients) -> [result per run]
        self.groups = defaultdict(list)
        for r in lines:
            clients = r.get("clients") if r["workload"] == "w1" else None
            self.groups[(r["label"], r["workload"], clients)].append(r)

    def configs(self):
        present = {k[0] for k in self.groups}
        return [c for c in ORDER if c in present]

    def lock_services(self):
        return [c for c in self.configs() if c not in W1_ONLY]

    def runs(self, config, workload, clients=None):
        return self.groups.get((config, workload, clients), [])

    def values(self, config, workload, path, clients=None):
        values = [get(r, path) for r in self.runs(config, workload, clients)]
        return [v for v in values if isinstance(v, (int, float))]

    def median(self, config, workload, path, clients=None):
        values = self.values(config, workload, path, clients)
        return statistics.median(values) if values else None

    def spread(self, config, workload, path, clients=None):
        """(min, median, max) over the runs, or None without a value."""
        values = self.values(config, workload, path, clients)
        if not values:
            return None
        return min(values), statistics.median(values), max(values)

    def errors(self, config, workload, clients=None):
        return sum(r.get("errors", 0) for r in self.runs(config, workload, clients))


def us(v):
    if v is None:
        return "–"
    if v >= 10000:
        return f"{v / 1000:,.0f} ms"
    if v >= 1000:
        return f"{v / 1000:.1f} ms"
    if v >= 100:
        return f"{v:,.0f} µs"
    return f"{v:.1f} µs"


def num(v, digits=0):
    return "–" if v is None else f"{v:,.{digits}f}"


def pair(a, b):
    return f"{us(a)} / {us(b)}"


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True,
                              timeout=10).stdout.strip()
    except Exception:  # facts are best effort
        return ""


def machine_facts(args, results):
    lscpu = sh("lscpu")
    model = re.search(r"Model name:\s*(.+)", lscpu)
    mem = sh("free -g | awk '/^Mem:/ {print $2}'")
    loads = [r.get("loadavg_1m_before") for r in results.raw
             if isinstance(r.get("loadavg_1m_before"), (int, float))]
    others = [100 * r["other_cpu_ms"] / (r["duration_s"] * 1000 * (os.cpu_count() or 1))
              for r in results.raw if "other_cpu_ms" in r and r.get("duration_s")]
    others_w3 = [100 * r["other_cpu_ms"] / (r["elapsed_s"] * 1000 * (os.cpu_count() or 1))
                 for r in results.raw if "other_cpu_ms" in r and r.get("elapsed_s")]
    rev = sh("git rev-parse --short HEAD")
    dirty = sh("git status --porcelain -- server core proto storage")
    times = [r["unix_time"] for r in results.raw if "unix_time" in r]
    measured = max(times) if times else os.path.getmtime(args.raw)
    return {
        "date": datetime.datetime.fromtimestamp(measured, datetime.timezone.utc)
                .strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": model.group(1).strip() if model else platform.processor(),
        "nproc": os.cpu_count(),
        "memory_gib": mem,
        "kernel": platform.release(),
        "redis": sh("redis-server --version | sed -E 's/.*v=([^ ]+).*/\\1/'"),
        "etcd": sh("etcd --version | head -1 | sed 's/etcd Version: //'"),
        "leasekeeper": rev + (" + uncommitted changes" if dirty else ""),
        "others_median": statistics.median(others) if others else None,
        "others_w3_max": max(others_w3) if others_w3 else None,
        "others_max": max(others) if others else None,
        "load_min": min(loads) if loads else None,
        "load_max": max(loads) if loads else None,
        "pinned": args.pinned == "1",
        "nice": args.nice,
        "runs": max((r.get("run", 0) for r in results.raw), default=0),
    }


def per_cpu_second(cpu_us_per_op):
    return None if not cpu_us_per_op else 1e6 / cpu_us_per_op


def w1_table(res):
    rows = ["| tier | system | clients | pairs/s | acquire p50 / p99 | release p50 / p99 | server CPU per pair | pairs per server CPU-second |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for config in res.configs():
        for c in (1, 16, 64):
            if not res.runs(config, "w1", c):
                continue
            m = lambda p: res.median(config, "w1", p, c)
            err = res.errors(config, "w1", c)
            rows.append(
                f"| {tier_name(config)} | {CONFIGS[config][1]} | {c} | {num(m('pairs_per_s'))}"
                f"{' (errors: %d)' % err if err else ''} | {pair(m('acquire.p50_us'), m('acquire.p99_us'))}"
                f" | {pair(m('release.p50_us'), m('release.p99_us'))} | {us(m('server_cpu_us_per_op'))}"
                f" | {num(per_cpu_second(m('server_cpu_us_per_op')))} |")
    return rows


def w2_table(res):
    rows = ["| tier | system | grants/s | hand-overs/s | wait p50 / p99 |",
            "| --- | --- | ---: | ---: | ---: |"]
    for config in res.lock_services():
        if not res.runs(config, "w2"):
            continue
        m = lambda p: res.median(config, "w2", p)
        rows.append(f"| {tier_name(config)} | {CONFIGS[config][1]} | {num(m('grants_per_s'))} | "
                    f"{num(m('handovers_per_s'))} | {pair(m('wait.p50_us'), m('wait.p99_us'))} |")
    return rows


def handover_table(res):
    rows = ["| tier | system | W3 release → waiter holds, p50 / p99 | W4 lease expiry → waiter holds, p50 / p99 | W4 holder killed → waiter holds, p50 / p99 |",
            "| --- | --- | ---: | ---: | ---: |"]
    for config in res.lock_services():
        m = lambda w, p: res.median(config, w, p)
        crash = "same as expiry: no session (the lease must run out)"
        if res.runs(config, "w4_crash"):
            crash = (pair(m("w4_crash", "after_cut.p50_us"), m("w4_crash", "after_cut.p99_us"))
                     + f" (grace {num(m('w4_crash', 'grace_ms'))} ms)")
        rows.append(f"| {tier_name(config)} | {CONFIGS[config][1]} | "
                    f"{pair(m('w3', 'handover.p50_us'), m('w3', 'handover.p99_us'))} | "
                    f"{pair(m('w4_expiry', 'after_expiry.p50_us'), m('w4_expiry', 'after_expiry.p99_us'))} | "
                    f"{crash} |")
    return rows


def memory_table(res):
    rows = ["| leasekeeperd holding | RSS before | RSS after | bytes per item | fill time |",
            "| --- | ---: | ---: | ---: | ---: |"]
    for config in res.configs():
        for workload, what in (("mem_held", "held locks (1 h leases)"),
                               ("mem_waiters", "waiting clients (queued, no call open)")):
            runs = res.runs(config, workload)
            if not runs:
                continue
            m = lambda p: res.median(config, workload, p)
            rows.append(f"| {num(m('count'))} {what} | {num(m('rss_before_mib'), 1)} MiB | "
                        f"{num(m('rss_after_mib'), 1)} MiB | {num(m('bytes_per_item'))} | "
                        f"{num(m('fill_seconds'), 1)} s |")
    return rows


def targets_table(res):
    rows = ["| target | measured (median of runs) | met |", "| --- | --- | --- |"]
    lk_durable = "lk-batch" if res.runs("lk-batch", "w1", 64) else "lk-default"
    lk_memory = "lk-never" if res.runs("lk-never", "w1", 64) else "lk-default"
    p = lambda config: res.median(config, "w1", "pairs_per_s", 64)

    def check(name, value_text, ok):
        mark = "–" if ok is None else ("yes" if ok else "**no**")
        rows.append(f"| {name} | {value_text} | {mark} |")

    for lk, redis, tier in ((lk_durable, "redis-aof", "durable"), (lk_memory, "redis-none", "in memory")):
        a, b = p(lk), p(redis)
        check(f"W1, 64 clients, {tier}: leasekeeper ≥ Redis",
              f"{num(a)} vs {num(b)} pairs/s" + ("" if LK_FSYNC else " (leasekeeper in memory)"),
              None if a is None or b is None else a >= b)
    # The same comparison per server CPU-second: what each server does with
    # the CPU it got, which other work on a shared machine skews far less.
    c = lambda config: per_cpu_second(res.median(config, "w1", "server_cpu_us_per_op", 64))
    for lk, redis, tier in ((lk_durable, "redis-aof", "durable"), (lk_memory, "redis-none", "in memory")):
        a, b = c(lk), c(redis)
        check(f"(per server CPU-second) W1, 64 clients, {tier}: leasekeeper ≥ Redis",
              f"{num(a)} vs {num(b)} pairs per CPU-second",
              None if a is None or b is None else a >= b)
    a, b = p(lk_durable), p("etcd")
    check("W1, 64 clients: leasekeeper ≥ 5 × etcd",
          f"{num(a)} vs 5 × {num(b)} = {num(None if b is None else 5 * b)} pairs/s",
          None if a is None or b is None else a >= 5 * b)
    a, b = c(lk_durable), c("etcd")
    check("(per server CPU-second) W1, 64 clients: leasekeeper ≥ 5 × etcd",
          f"{num(a)} vs 5 × {num(b)} = {num(None if b is None else 5 * b)} pairs per CPU-second",
          None if a is None or b is None else a >= 5 * b)
    for config in dict.fromkeys([lk_durable, lk_memory]):
        label = SHORT[config]
        v = res.median(config, "w3", "handover.p99_us")
        check(f"W3 p99 < 1 ms ({label})", us(v), None if v is None else v < 1000)
        v = res.median(config, "w4_expiry", "after_expiry.p99_us")
        check(f"W4 p99 < 10 ms after expiry ({label})", us(v), None if v is None else v < 10000)
        v = res.median(config, "w4_crash", "after_cut.p99_us")
        g = res.median(config, "w4_crash", "grace_ms")
        check(f"W4 p99 < grace + 10 ms after a crash ({label})",
              f"{us(v)} (grace {num(g)} ms)",
              None if v is None or g is None else v < (g + 10) * 1000)
    for config in res.configs():
        v = res.median(config, "mem_held", "bytes_per_item")
        if v is not None:
            check(f"< 300 bytes per held lock ({SHORT[config]})", f"{num(v)} bytes",
                  v < 300)
    return rows


def write_plot_data(res, path):
    # Rows: workload; columns: p50 and p99 (ms) of each config.
    configs = res.lock_services()
    cats = [("W1 acquire (64)", "w1", "acquire", 64),
            ("W2 wait", "w2", "wait", None),
            ("W3 hand-over", "w3", "handover", None),
            ("W4 after expiry", "w4_expiry", "after_expiry", None)]
    with open(path, "w") as f:
        f.write("category " + " ".join(f'"{SHORT[c]}" "{SHORT[c]}"' for c in configs) + "\n")
        for title, workload, key, clients in cats:
            cells = []
            for c in configs:
                for q in ("p50_us", "p99_us"):
                    v = res.median(c, workload, f"{key}.{q}", clients)
                    cells.append("?" if v is None or v <= 0 else f"{v / 1000:.4f}")
            f.write(f'"{title}" ' + " ".join(cells) + "\n")


def write_csv(res, path):
    metrics = {
        "w1": ["pairs_per_s", "acquire.p50_us", "acquire.p99_us", "release.p50_us",
               "release.p99_us", "server_cpu_us_per_op", "bench_cpu_ms"],
        "w2": ["grants_per_s", "handovers_per_s", "wait.p50_us", "wait.p99_us",
               "server_cpu_us_per_op"],
        "w3": ["handover.p50_us", "handover.p99_us", "handover.n"],
        "w4_expiry": ["after_expiry.p50_us", "after_expiry.p99_us", "after_expiry.n"],
        "w4_crash": ["after_cut.p50_us", "after_cut.p99_us", "after_cut.n", "grace_ms"],
        "mem_held": ["count", "bytes_per_item", "rss_before_mib", "rss_after_mib"],
        "mem_waiters": ["count", "bytes_per_item", "rss_before_mib", "rss_after_mib"],
    }
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["config", "system", "workload", "clients", "metric", "median", "runs", "errors"])
        for (config, workload, clients), runs in sorted(res.groups.items(),
                                                        key=lambda kv: str(kv[0])):
            for metric in metrics.get(workload, []):
                values = [get(r, metric) for r in sorted(runs, key=lambda r: r.get("run", 0))]
                w.writerow([config, runs[0]["system"], workload, clients or "", metric,
                            res.median(config, workload, metric, clients),
                            " ".join("" if v is None else f"{v:g}" for v in values),
                            sum(r.get("errors", 0) for r in runs)])


def facts_sentence(facts, summary, with_redis=True):
    """Where, when and under what load the figures were taken; `summary`
    says how the runs are combined ("median of 3 runs")."""
    load = ("–" if facts["load_min"] is None
            else f"{facts['load_min']:.2f} to {facts['load_max']:.2f}")
    return (
        f"Measured {facts['date']}, {summary}. Machine: {facts['cpu']}, "
        f"{facts['nproc']} CPUs, {facts['memory_gib']} GiB, Linux {facts['kernel']}; "
        f"1-minute load average before each measurement {load}"
        + ("" if facts["others_median"] is None else
           f"; other processes used {facts['others_median']:.0f}% of the machine's CPU "
           f"during a W1/W2 window (median; at most {facts['others_max']:.0f}%)")
        + ("" if facts["others_w3_max"] is None else
           f", at most {facts['others_w3_max']:.0f}% during a W3 run")
        + ". "
        + ("Server pinned to CPU 0, load generator to CPU 1. " if facts["pinned"] else "")
        + (f"Servers and load generator ran at niceness {facts['nice']} "
           + ("(ahead of" if facts["nice"].startswith("-") else "(behind")
           + " other work on this shared machine). " if facts["nice"] not in ("0", "") else "")
        + (f"Redis {facts['redis']}, " if with_redis else "")
        + f"etcd {facts['etcd']}, leasekeeper {facts['leasekeeper']}.")


def render(res, facts):
    lines = [BEGIN, "", facts_sentence(facts, f"median of {facts['runs']} runs"), ""]
    if not LK_FSYNC:
        lines += ["**leasekeeperd has no `--fsync` flag yet**: it keeps everything in memory, "
                  "so its rows stand against both Redis configurations; the durable tier "
                  "compares a non-durable leasekeeper with durable anchors.", ""]
    lines += ["**Targets**", ""] + targets_table(res) + [""]
    lines += ["**W1 uncontended** (each client its own lock, 30 s lease; closed loop)", ""]
    lines += w1_table(res) + [""]
    lines += ["**W2 contended** (16 clients, one lock, released as soon as granted)", ""]
    lines += w2_table(res) + [""]
    lines += ["**W3 hand-over and W4 crashed holder** (W3: 1,000 samples per run; "
              "W4: 2 s lease, never renewed; crash: 30 s lease, session, SIGKILL)", ""]
    lines += handover_table(res) + [""]
    lines += ["**Memory** (leasekeeperd RSS, fresh server each)", ""]
    lines += memory_table(res) + [""]
    lines += ["![p50 and p99 latency of each system, log scale](anchors/latency.png)", "", END]
    return "\n".join(lines)


def update_readme(path, block, begin=BEGIN, end=END, section=SECTION):
    """Replaces what lies between the markers `begin` and `end` (the block
    includes them) with `block`; without the markers, appends `section` and
    the block at the end."""
    text = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
    if begin in text and end in text:
        start = text.index(begin)
        stop = text.index(end) + len(end)
        text = text[:start] + block + text[stop:]
    else:
        if section not in text:
            text = text.rstrip("\n") + f"\n\n{section}\n\n"
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    with open(path, "w") as f:
        f.write(text)


def load_results(path):
    """The JSON lines at `path`, grouped."""
    with open(path) as f:
        return Results([json.loads(line) for line in f if line.strip()])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--raw", required=True)
    parser.add_argument("--results", required=True)
    parser.add_argument("--readme", required=True)
    parser.add_argument("--leasekeeperd", default="")
    parser.add_argument("--pinned", default="1")
    parser.add_argument("--nice", default="0")
    args = parser.parse_args()
    res = load_results(args.raw)
    lines = res.raw
    facts = machine_facts(args, res)
    medians = []
    for (config, workload, clients), runs in res.groups.items():
        medians.append({"config": config, "workload": workload, "clients": clients,
                        "runs": len(runs), "errors": res.errors(config, workload, clients)})
    with open(os.path.join(args.results, "anchors.json"), "w") as f:
        json.dump({"machine": facts, "groups": medians, "raw": lines}, f, indent=1)
    write_csv(res, os.path.join(args.results, "anchors.csv"))
    write_plot_data(res, os.path.join(args.results, "latency.dat"))
    update_readme(args.readme, render(res, facts))


if __name__ == "__main__":
    main()
