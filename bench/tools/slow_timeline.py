#!/usr/bin/env python3
"""slow_timeline.py TRIAL_DIR THRESHOLD_US: when, around a backup, the slow queries happened.

Reads a bench/polite.sh trial directory (its pgbench --log files lat.*, and `times`: the load's
start, the backup's start and end, Unix seconds) and prints, per second from 10 s before the
backup to the end of the load, how many lookups ended and the share whose own latency (pgbench's
time less its schedule lag, as pgd-latency counts it) exceeded THRESHOLD_US. A tail spread over
the whole backup comes from the reading; one at its start or end from the checkpoint, the WAL
switch or the archiving of the last segment."""
import collections
import glob
import os
import sys


def main(trial, threshold):
    with open(os.path.join(trial, 'times')) as f:
        _, start, end = (float(x) for x in f.read().split())
    per_second = collections.defaultdict(lambda: [0, 0])
    for path in glob.glob(os.path.join(trial, 'lat.*')):
        with open(path) as f:
            for line in f:
                p = line.split()
                if len(p) < 6:
                    continue
                lag = int(p[6]) if len(p) > 6 else 0
                second = int((int(p[4]) + int(p[5]) / 1e6 - start) // 1)
                per_second[second][0] += 1
                per_second[second][1] += int(p[2]) - lag > threshold
    print(f'# {trial}: the backup ran {end - start:.1f} s from second 0; lookups over {threshold} us')
    print('second  lookups  slow  share')
    for second in sorted(s for s in per_second if s >= -10):
        n, slow = per_second[second]
        mark = ' <- backup' if 0 <= second < end - start else ''
        print(f'{second:6d} {n:8d} {slow:5d} {100 * slow / n:5.2f}%{mark}')


if __name__ == '__main__':
    if len(sys.argv) != 3:
        sys.exit('usage: slow_timeline.py TRIAL_DIR THRESHOLD_US')
    main(sys.argv[1], float(sys.argv[2]))
