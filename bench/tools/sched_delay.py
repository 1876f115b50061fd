#!/usr/bin/env python3
"""schedan.py PERF_SCRIPT_OUTPUT: for every wakeup of a postgres/pgbench task, the delay until it
ran, and which task held the CPU it ran on meanwhile (the prev of its switch-in). Prints the
delay distribution and, for delays over 50 us, the holders by name."""
import re, sys, collections
wake = {}      # pid -> wake time
delays = []    # (delay_us, holder)
holder_time = collections.Counter()
holder_n = collections.Counter()
rx_w = re.compile(r'\s(\d+\.\d+):\s+sched:sched_waking:.*comm=(\S+) pid=(\d+)')
rx_s = re.compile(r'\s(\d+\.\d+):\s+sched:sched_switch:.*prev_comm=(.+?) prev_pid=(\d+).*next_comm=(.+?) next_pid=(\d+)')
rx_w2 = re.compile(r'\s(\d+\.\d+):\s+sched:sched_waking:\s+(\S+):(\d+)')
rx_s2 = re.compile(r'\s(\d+\.\d+):\s+sched:sched_switch:\s+(.+?):(\d+) \[-?\d+\] \S+ ==> (.+?):(\d+) \[')
for line in open(sys.argv[1], errors='replace'):
    m = rx_w.search(line) or rx_w2.search(line)
    if m and 'sched_waking' in line:
        t, comm, pid = float(m.group(1)), m.group(2), m.group(3)
        if comm.startswith(('postgres', 'pgbench')):
            wake.setdefault(pid, t)
        continue
    m = rx_s.search(line) or rx_s2.search(line)
    if m:
        t, pcomm, ppid, ncomm, npid = float(m.group(1)), m.group(2), m.group(3), m.group(4), m.group(5)
        if npid in wake:
            d = (t - wake.pop(npid)) * 1e6
            delays.append((d, pcomm))
            if d > 50:
                holder_time[pcomm] += d; holder_n[pcomm] += 1
delays.sort()
n = len(delays)
if n == 0:
    print("no wakeups"); sys.exit()
q = lambda p: delays[min(n - 1, int(p * n))][0]
print("wakeups %d  p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f  max %.1f us" % (n, q(.5), q(.9), q(.99), q(.999), delays[-1][0]))
print("over 50 us: %d; by the task that held the CPU:" % sum(holder_n.values()))
for c, v in holder_time.most_common(15):
    print("  %-24s %6d times  %9.0f us total  %.0f us mean" % (c, holder_n[c], v, v / holder_n[c]))
