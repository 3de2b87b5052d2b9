"""Summarises bench/compare-daemons output: per workload and binary, the median
and each run, server CPU per operation, and CPU other processes used.
usage: python3 bench/compare_daemons_report.py OUT"""
import collections
import json
import statistics
import sys
rows=[json.loads(l) for l in open(sys.argv[1]) if l.strip()]
g=collections.defaultdict(list)
for r in rows: g[(r['workload'],r['label'])].append(r)
for (w,l),rs in sorted(g.items()):
    if w=='w1': vals=[r['pairs_per_s'] for r in rs]; key='pairs/s'
    elif w=='w2': vals=[r['grants_per_s'] for r in rs]; key='grants/s'
    else: vals=[r['handover']['p99_us'] for r in rs]; key='handover p99 us'
    cpu=[r['server_cpu_us_per_op'] for r in rs]; oth=[r['other_cpu_ms'] for r in rs]
    extra=''
    if w=='w3': extra=' p50 '+','.join('%.0f'%r['handover']['p50_us'] for r in rs)
    if w=='w2': extra=' wait p99 '+','.join('%.0f'%r['wait']['p99_us'] for r in rs)
    print(f"{w} {l:14s} {key}: median {statistics.median(vals):9.1f} runs {', '.join('%.0f'%v for v in vals)} | server cpu/op us {', '.join('%.1f'%c for c in cpu)} | other cpu ms {', '.join('%.0f'%o for o in oth)}{extra}")
