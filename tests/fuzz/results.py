#!/usr/bin/env python3
"""results.py - the table of RESULTS.md from the logs of a fuzz run (run.sh fuzz, which leaves
BUILD/fuzz-work/<target>/log): per target, the seconds, executions, libFuzzer's final cov: and
ft: figures, the corpus it reached and its verdict.

    results.py BUILD"""
import os, re, sys

work = os.path.join(sys.argv[1], "fuzz-work")
print("| target | seconds | executions | exec/s | cov | ft | corpus | verdict |")
print("|---|---:|---:|---:|---:|---:|---:|---|")
for t in sorted(os.listdir(work)):
    try:
        log = open(os.path.join(work, t, "log"), errors="replace").read()
    except FileNotFoundError:
        continue
    stat = dict(re.findall(r"^stat::(\w+):\s+(\d+)", log, re.M))
    last = re.findall(r"^#(\d+)\s+\w+\s+cov: (\d+) ft: (\d+) corp: (\d+)/", log, re.M)
    execs = int(stat.get("number_of_executed_units", last[-1][0] if last else 0))
    rate = int(stat.get("average_exec_per_sec", 0))
    secs = round(execs / rate) if rate else 0
    cov, ft, corp = last[-1][1:] if last else ("?", "?", "?")
    verdict = "FAILED: " + re.findall(r"^SUMMARY: (.*)$", log, re.M)[0] if "SUMMARY:" in log else "passed"
    print(f"| {t} | {secs} | {execs:,} | {rate:,} | {cov} | {ft} | {corp} | {verdict} |")
