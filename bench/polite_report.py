#!/usr/bin/env python3
"""polite_report.py TRIALS DATA_BYTES SCALE LIMIT_MB SAT_TPS HALF_TPS [WINDOW] - polite.sh's report.

One table per load: for each kind, the medians over its rounds of the backup's wall time (and
its ratio to pgBackRest's in the same run), CPU seconds, the queries' p99 before and during the
backup and their ratio, and the machine's CPU pressure (PSI "some", % of the wall time); every
round's figures are listed after, so the spread is visible.
"""
import statistics
import sys


def main(argv):
    trials, data_bytes, scale, limit_mb, sat_tps, half_tps = argv[1:7]
    window = argv[7] if len(argv) > 7 else None
    rows = []
    with open(trials, encoding="utf-8") as f:
        for line in f:
            p = line.split()
            if len(p) < 12:
                continue
            rows.append({"load": p[0], "kind": p[1], "round": int(p[2]), "rc": int(p[3]),
                         "wall": float(p[4]), "cpu": float(p[5]), "p99b": float(p[7]),
                         "p99d": float(p[9]), "n": int(p[10]), "psi": float(p[11]),
                         "p99w": float(p[13]) if len(p) > 13 else None})
    print(f"# Politeness: query p99 and backup wall time, side by side\n")
    print(f"Data directory {int(data_bytes) / 1e9:.2f} GB (pgbench scale {scale}), PostgreSQL and every "
          f"backup in one {limit_mb} MiB memory cgroup; 2 vCPUs. Saturated load: 2 clients of "
          f"primary-key lookups flat out ({float(sat_tps):.0f}/s); half: {half_tps}/s. p99 in "
          f"microseconds, before = the {10} s before the backup, during = the backup. Medians over "
          f"rounds; every round below.\n")
    loads = []
    for r in rows:
        if r["load"] not in loads:
            loads.append(r["load"])
    for load in loads:
        mine = [r for r in rows if r["load"] == load]
        kinds = []
        for r in mine:
            if r["kind"] not in kinds:
                kinds.append(r["kind"])
        ref = [r["wall"] for r in mine if r["kind"] == "pgbackrest" and r["rc"] == 0]
        ref_wall = statistics.median(ref) if ref else None
        fast = [r["wall"] for r in mine if r["kind"] == "fast" and r["rc"] == 0]
        fast_wall = statistics.median(fast) if fast else None
        # the p99 of a 10 s window of this machine's queries swings from trial to trial as much as
        # a backup moves it: every trial's window before its backup, pooled, is the baseline too
        pooled = statistics.median(r["p99b"] for r in mine) if load != "idle" else 0
        print(f"## {load} load\n")
        if load != "idle":
            print(f"Baseline p99 over every trial's window before its backup (pooled median): "
                  f"{pooled:.0f} us.\n")
        has_w = window is not None and load != "idle" and all(r["p99w"] is not None for r in mine)
        wcol = f" p99 over {window} s from the start / pooled baseline |" if has_w else ""
        print("| kind | wall s | / pgBackRest | / fast | CPU s | p99 before | p99 during | during / before | during / pooled baseline |" + wcol + " CPU pressure % | rounds |")
        print("|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if has_w else ""))
        for kind in kinds:
            k = [r for r in mine if r["kind"] == kind]
            ok = [r for r in k if r["rc"] == 0]
            if not ok:
                print(f"| {kind} | failed (exit {k[0]['rc']}) | | | | | | | | {len(k)} |")
                continue
            wall = statistics.median(r["wall"] for r in ok)
            cpu = statistics.median(r["cpu"] for r in ok)
            psi = statistics.median(r["psi"] for r in ok)
            cells = [kind, f"{wall:.1f}",
                     f"{wall / ref_wall:.2f}" if ref_wall else "-",
                     f"{wall / fast_wall:.2f}" if fast_wall else "-", f"{cpu:.1f}"]
            if load == "idle":
                cells += ["-", "-", "-", "-"]
            else:
                p99b = statistics.median(r["p99b"] for r in ok)
                p99d = statistics.median(r["p99d"] for r in ok)
                ratio = statistics.median(r["p99d"] / r["p99b"] for r in ok if r["p99b"] > 0)
                cells += [f"{p99b:.0f}", f"{p99d:.0f}", f"{ratio:.2f}",
                          f"**{p99d / pooled:.2f}**" if pooled else "-"]
                if has_w:
                    p99w = statistics.median(r["p99w"] for r in ok)
                    cells += [f"**{p99w / pooled:.2f}** ({p99w:.0f} us)"]
            cells += [f"{psi:.1f}", str(len(k))]
            print("| " + " | ".join(cells) + " |")
        print()
        print("Every round: kind (round): wall s, CPU s, p99 before / during")
        print()
        for r in mine:
            tail = "" if r["rc"] == 0 else f" (exit {r['rc']})"
            w = f", window {r['p99w']:.0f} us" if r["p99w"] is not None else ""
            print(f"- {r['kind']} ({r['round']}): {r['wall']:.1f} s, {r['cpu']:.1f} CPU s, "
                  f"{r['p99b']:.0f} / {r['p99d']:.0f} us{w}{tail}")
        print()


if __name__ == "__main__":
    main(sys.argv)
