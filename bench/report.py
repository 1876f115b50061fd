#!/usr/bin/env python3
"""report.py - turn bench/run.sh's raw trials into the Markdown report.

Medians over trials with the spread (min-max) where it matters; ratios are
to pgBackRest measured in the same run.
"""
import statistics
import sys

out, data_bytes, fio_1m, fio_4m, scale, limit_mb, trials, mode, window = sys.argv[1:10]
data_bytes = int(data_bytes)
fio_best = max(int(fio_1m), int(fio_4m))
KINDS = ["none", "pgdirect", "pgdirect_fast", "pgdirect_buffered", "pgbackrest", "pg_basebackup",
         "drill", "restore"]
LABEL = {
    "none": "none (no backup)",
    "pgdirect": "pgdirect (direct I/O, defaults: idle CPU and I/O classes)",
    "pgdirect_fast": "pgdirect --max-rate 0 (unpaced)",
    "pgdirect_buffered": "pgdirect --direct-io=off --max-rate 0",
    "pgbackrest": "pgBackRest 2.45 (lz4, process-max 2)",
    "pg_basebackup": "pg_basebackup -Ft client-lz4",
    "drill": "pgdirect drill LATEST (as root: its own memory cgroup)",
    "restore": "pgdirect restore LATEST into another directory",
}
COLS = ["kind", "n", "wall", "cpu", "rss_kb", "unref_before", "unref_after", "lost", "evicted",
        "growth", "p50b", "p99b", "p50d", "p99d", "p50a", "p99a", "nw", "p99w"]

rows = {}
with open(f"{out}/raw/trials.txt") as f:
    for line in f:
        v = dict(zip(COLS, line.split()))
        rows.setdefault(v["kind"], []).append(v)


def med(kind, key):
    return statistics.median(float(r[key]) for r in rows[kind])


def spread(kind, key, fmt):
    vals = [float(r[key]) for r in rows[kind]]
    return f"{fmt.format(statistics.median(vals))} ({fmt.format(min(vals))}-{fmt.format(max(vals))})"


pbr_wall = med("pgbackrest", "wall") if "pgbackrest" in rows else 0
print(f"# pgdirect benchmark ({mode}), {out.rstrip('/').split('/')[-1][:10]}\n")
print(f"pgbench scale {scale} ({data_bytes / 1e6:.0f} MB of data files to back up) plus an "
      f"unlogged unreferenced table that no tool backs up; "
      f"PostgreSQL and every backup inside one memory cgroup of {limit_mb} MiB; {trials} trials "
      f"each, medians (min-max). Reproduce: `make bench{'-quick' if mode == 'quick' else ''}`.\n")
print(f"Device limit measured in the same run (fio, O_DIRECT sequential read, QD4): "
      f"{fio_1m} MB/s with 1 MiB blocks, {fio_4m} MB/s with 4 MiB blocks.\n")
print("| trial | wall s | MB/s | time vs pgBackRest | CPU s | peak RSS | unref cached after | "
      "warmed pages lost | pages evicted (cachestat) | cgroup cache growth | PK p50/p99 µs during | "
      "PK p50/p99 µs after |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for k in KINDS:
    if k not in rows:
        continue
    wall = med(k, "wall")
    backup = k != "none"
    mbs = f"{data_bytes / wall / 1e6:.0f}" if backup else "-"
    ratio = f"{wall / pbr_wall:.2f}" if backup and pbr_wall > 0 else "-"
    print(f"| {LABEL[k]} | {spread(k, 'wall', '{:.1f}') if backup else '-'} | {mbs} | {ratio} | "
          f"{med(k, 'cpu'):.1f} | {med(k, 'rss_kb') / 1024:.0f} MiB | "
          f"{spread(k, 'unref_after', '{:.0f}')} % | {med(k, 'lost'):.0f} | {med(k, 'evicted'):.0f} | "
          f"{med(k, 'growth'):.0f} MiB | {med(k, 'p50d'):.0f} / {med(k, 'p99d'):.0f} | "
          f"{med(k, 'p50a'):.0f} / {med(k, 'p99a'):.0f} |")
print()
print(f"The same {window} s from each backup's start, whether the backup ran all of it, less, or "
      f"more (a polite backup may run longer): the queries it let through and their p99.\n")
print(f"| trial | wall s | PK queries in the first {window} s | vs no backup | PK p99 µs, first {window} s |")
print("|---|---|---|---|---|")
none_nw = med("none", "nw") if "none" in rows else 0
for k in KINDS:
    if k not in rows:
        continue
    served = f"{med(k, 'nw') / none_nw:.2f}" if none_nw > 0 else "-"
    print(f"| {LABEL[k]} | {spread(k, 'wall', '{:.1f}') if k != 'none' else '-'} | "
          f"{med(k, 'nw'):.0f} | {served} | {spread(k, 'p99w', '{:.0f}')} |")
print()
print(f"Baseline latency before each backup (median over all trials): p50 "
      f"{statistics.median(float(r['p50b']) for k in rows for r in rows[k]):.0f} µs, p99 "
      f"{statistics.median(float(r['p99b']) for k in rows for r in rows[k]):.0f} µs.\n")
base_p99 = med("none", "p99d") if "none" in rows else 0
if base_p99 > 0:
    print("Query p99 during each backup (over the backup's own duration) against the no-backup "
          "trial's: " + ", ".join(f"{LABEL[k]} {med(k, 'p99d') / base_p99:.1f}x"
                                  for k in KINDS if k in rows and k != "none") + ".\n")
fast = "pgdirect_fast" if "pgdirect_fast" in rows else "pgdirect"
if fast in rows:
    pgd_mbs = data_bytes / med(fast, "wall") / 1e6
    print(f"{LABEL[fast]} read the cluster at {pgd_mbs:.0f} MB/s end to end (checkpoint, archive "
          f"wait and all), {100 * pgd_mbs / fio_best:.0f} % of the best fio figure.\n")
# issue 37: a drill, and a restore, leave the warmed table as cached as a no-op trial does
for k in ("drill", "restore"):
    if k in rows and "none" in rows and med("none", "unref_after") > 0:
        rel = 100 * med(k, "unref_after") / med("none", "unref_after")
        print(f"{LABEL[k]}: the warmed table is {rel:.1f} % as cached as after no backup "
              f"({med(k, 'unref_after'):.1f} % against {med('none', 'unref_after'):.1f} %): "
              f"{'holds' if rel >= 99 else 'DOES NOT HOLD'} (>= 99 %).\n")
print("Columns: *unref cached after* is how much of the unreferenced table, warmed once before the "
      "backup and read by no backup (it is unlogged), is still in the page cache when the backup ends; *warmed pages lost* counts 4 KiB "
      "pages of the warmed relations (unref and the front of pgbench_accounts) that were cached "
      "before and are not after; *pages evicted* is cachestat's count of their evictions; *cgroup "
      "cache growth* is the highest page cache of the cgroup during the backup minus its value "
      "before; latency is of primary-key lookups into the warmed part of pgbench_accounts (2 "
      "clients), during the backup and in the seconds right after it.\n")
print("![page cache over time](cache.png)")
