#!/usr/bin/env python3
"""sched_delay.py PERF_SCRIPT_OUTPUT: how long the queries' tasks (postgres, pgbench) waited for a
CPU once woken, from `perf script` of sched:sched_waking and sched:sched_switch, and which task
held the CPU they then ran on (the one switched out for them).

Prints the distribution of the delays over all of them, the share of each task name's wakeups per
delay band, and, for delays over 50 us, the holders by name (bench/polite.sh, PERF_SCHED=1)."""
import collections
import re
import sys

WAKE = re.compile(r'\s(\d+\.\d+):\s+sched:sched_waking:.*comm=(\S+) pid=(\d+)')
SWITCH = re.compile(r'\s(\d+\.\d+):\s+sched:sched_switch:.*prev_comm=(.+?) prev_pid=(\d+)'
                    r'.*next_comm=(.+?) next_pid=(\d+)')
BANDS = (20, 100, 500, 2000)  # us: <20, <100, <500, <2000, more
QUERIES = ('postgres', 'pgbench')


def band(d):
    for i, limit in enumerate(BANDS):
        if d < limit:
            return i
    return len(BANDS)


def main(path):
    woken = {}  # pid -> (time, comm)
    delays = []
    per_comm = collections.defaultdict(lambda: [0] * (len(BANDS) + 1))
    held_us = collections.Counter()
    held_n = collections.Counter()
    with open(path, errors='replace') as f:
        for line in f:
            if 'sched_waking' in line:
                m = WAKE.search(line)
                if m and m.group(2).startswith(QUERIES):
                    woken.setdefault(m.group(3), (float(m.group(1)), m.group(2)))
                continue
            m = SWITCH.search(line)
            if not m or m.group(5) not in woken:
                continue
            t0, comm = woken.pop(m.group(5))
            d = (float(m.group(1)) - t0) * 1e6
            delays.append(d)
            per_comm[comm][band(d)] += 1
            if d > 50:
                holder = m.group(2).split('/')[0]
                held_us[holder] += d
                held_n[holder] += 1
    if not delays:
        print("no wakeups")
        return
    delays.sort()
    n = len(delays)

    def q(p):
        return delays[min(n - 1, int(p * n))]
    print("wakeups %d  p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f  max %.1f us" %
          (n, q(.5), q(.9), q(.99), q(.999), delays[-1]))
    print("share of wakeups by delay: <20 us, <100, <500, <2000, more")
    for comm, counts in sorted(per_comm.items()):
        total = sum(counts)
        print("  %-10s %8d  %s" % (comm, total,
                                   "  ".join("%6.2f%%" % (100.0 * c / total) for c in counts)))
    print("over 50 us: %d; by the task that held the CPU:" % sum(held_n.values()))
    for holder, us in held_us.most_common(15):
        print("  %-24s %6d times  %9.0f us total  %.0f us mean" %
              (holder, held_n[holder], us, us / held_n[holder]))


if __name__ == '__main__':
    main(sys.argv[1])
