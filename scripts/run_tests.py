#!/usr/bin/env python3
"""run_tests.py - the integration suite, several test files at a time.

    run_tests.py [--jobs N] [--durations FILE] [--save-durations FILE] [--summary FILE]
                 [--timeout SECONDS] [--log-dir DIR]
                 [--pg V[,V...]] FILE... [--pg V[,V...] FILE...]...

Each FILE is a TAP test (bash, tests/integration/lib.sh) run once for each
PostgreSQL version of the --pg before it (when none is given, the version
PGDIRECT_TEST_PG names, else 15): one job.
The jobs run N at a time (PGD_TEST_JOBS, else 3 a core: most of a test is
waiting on servers, not CPU), the slowest first by the times of --durations,
so that the long ones do not start last. A test whose header says

    # pgdirect-test: alone (why)

runs with no other job beside it (it drops the page cache, or measures what
the machine does as a whole); such jobs run first.

A job passes when its TAP output is whole and clean: a plan, every test
line numbered in order and "ok", as many as the plan says, no "Bail out!",
and exit status 0. Each job's output is printed whole when it ends (never
interleaved with another's). Each job gets a slot number and a range of TCP
ports of its own (PGD_TEST_SLOT, PGD_PORT_BASE, PGD_PORT_SPAN, which
lib.sh's free_port reads), so two test files never pick the same port. A job
that runs past --timeout seconds is killed and fails.

Where the kernel runs proactive reclaim (a DAMON kdamond with a "pageout"
scheme, as the machines this suite runs on do: page cache left idle for a
minute is paged out), it is paused for the run and resumed at the end: the
residency tests measure which cached pages a backup evicts, and the kernel's
own evictions of idle pages would be counted as the backup's.

At the end: one line per failed job, the number of assertions made (per
version), the ten slowest jobs with their seconds, and "Result: PASS" or
"Result: FAIL" (exit status 0 or 1); --summary writes the same lines to a
file (make check prints it again last).
"""

import argparse
import glob
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

ALONE_RE = re.compile(r"^#\s*pgdirect-test:\s*alone\b(.*)$")
TEST_RE = re.compile(r"^(not )?ok\b\s*(\d+)?(.*)$")
PLAN_RE = re.compile(r"^1\.\.(\d+)(\s*#.*)?$")
# bash's word for a test that called what does not exist: the assertion never ran
SHELL_SLIP_RE = re.compile(r"^.+: line \d+: .+: command not found$")
SKIP_RE = re.compile(r"#\s*skip\b", re.IGNORECASE)
TODO_RE = re.compile(r"#\s*todo\b", re.IGNORECASE)

# free_port's range when a test runs alone (lib.sh): below the kernel's ephemeral range
PORT_LO, PORT_HI = 20000, 32767

# CPU time per job, servers included (a postmaster leaves its test's process tree but not
# its cgroup): a cpuacct cgroup (v1) per job, where there is one we may create
CPUACCT = "/sys/fs/cgroup/cpuacct"


# the kernel's DAMON interface: kdamonds whose schemes page out idle memory
DAMON = "/sys/kernel/mm/damon/admin/kdamonds"


def damon_reclaimers():
    """The kdamonds that are on and page memory out: [(directory, its schemes' actions)]."""
    found = []
    try:
        names = sorted(os.listdir(DAMON))
    except OSError:
        return found
    for name in names:
        d = os.path.join(DAMON, name)
        try:
            with open(os.path.join(d, "state"), encoding="ascii") as f:
                if f.read().strip() != "on":
                    continue
            actions = []
            for ctx in glob.glob(os.path.join(d, "contexts", "*", "schemes", "*", "action")):
                with open(ctx, encoding="ascii") as f:
                    actions.append(f.read().strip())
        except OSError:
            continue
        if "pageout" in actions:
            found.append(d)
    return found


def damon_set(dirs, state):
    """Turn each kdamond of dirs on or off; the ones that refused, with why."""
    failed = []
    for d in dirs:
        try:
            with open(os.path.join(d, "state"), "w", encoding="ascii") as f:
                f.write(state)
        except OSError as e:
            failed.append(f"{d}: {e.strerror}")
    return failed


def cpuacct_parent():
    if not os.access(CPUACCT, os.W_OK):
        return None
    path = os.path.join(CPUACCT, f"pgdirect-tests-{os.getpid()}")
    try:
        os.mkdir(path)
    except OSError:
        return None
    return path


def cpu_seconds(cg):
    try:
        with open(os.path.join(cg, "cpuacct.usage"), encoding="ascii") as f:
            return int(f.read()) / 1e9
    except (OSError, ValueError):
        return None


class Job:
    def __init__(self, path, version):
        self.path = path
        self.version = version
        self.name = f"{os.path.basename(path)} on {version}"
        self.key = f"{version} {os.path.basename(path)}"
        self.alone = False
        self.alone_why = ""
        with open(path, encoding="utf-8", errors="replace") as f:
            for _, line in zip(range(40), f):
                m = ALONE_RE.match(line.rstrip("\n"))
                if m:
                    self.alone = True
                    self.alone_why = m.group(1).strip()
        self.estimate = None
        self.proc = None
        self.log = None
        self.log_path = None
        self.slot = None
        self.started = self.ended = None
        self.timed_out = False
        self.cgroup = None
        self.cpu = None  # CPU seconds, where a cpuacct cgroup measured them
        self.verdict = None  # (passed, assertions, skipped, why)

    @property
    def seconds(self):
        return (self.ended or time.monotonic()) - self.started


def tap_verdict(text, status, timed_out):
    """(passed, assertions, skipped, why) of one job's output and exit status."""
    plan = None
    plan_first = False  # a plan may come before every test line or after them all
    expect = 1
    count = skipped = 0
    problems = []
    for line in text.splitlines():
        if line.startswith("Bail out!") or SHELL_SLIP_RE.match(line):
            problems.append(line)
            continue
        m = PLAN_RE.match(line)
        if m:
            if plan is not None:
                problems.append("a second plan: " + line)
            plan = int(m.group(1))
            plan_first = count == 0
            continue
        m = TEST_RE.match(line)
        if not m:
            continue
        count += 1
        if m.group(2) is not None and int(m.group(2)) != expect:
            problems.append(f"test {m.group(2)} where {expect} was next")
        expect = count + 1
        if plan is not None and not plan_first:
            problems.append(f"test {count} after the plan")
        if m.group(1) and not TODO_RE.search(m.group(3)):
            problems.append("failed: " + line)
        if SKIP_RE.search(m.group(3)):
            skipped += 1
    if timed_out:
        problems.append("killed: it ran past its deadline")
    if plan is None:
        problems.append("no plan (1..N): the test ended early")
    elif plan != count:
        problems.append(f"planned {plan} tests, ran {count}")
    if status != 0:
        problems.append(f"exit status {status}")
    if count == 0 and plan != 0:
        problems.append("no tests ran")
    return (not problems, count, skipped, "; ".join(problems[:6]))


def read_durations(path):
    times = {}
    if not path or not os.path.exists(path):
        return times
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].split()
            if len(line) >= 3:
                times[f"{line[0]} {line[1]}"] = float(line[2])
    return times


def write_durations(path, jobs):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("# seconds each integration test took in the last full run (run_tests.py)\n")
        f.write("# version file seconds [CPU seconds]; read to start the slowest first\n")
        for j in sorted(jobs, key=lambda j: (j.version, j.path)):
            cpu = f" {j.cpu:.1f}" if j.cpu is not None else ""
            f.write(f"{j.version} {os.path.basename(j.path)} {j.seconds:.1f}{cpu}\n")
    os.replace(tmp, path)


def parse_args(argv):
    """Options and files in one pass: each --pg applies to the files after it."""
    opts = {"jobs": os.environ.get("PGD_TEST_JOBS") or "0", "durations": None, "save-durations": None,
            "timeout": "1200", "log-dir": None, "summary": None}
    jobs, versions, i = [], [os.environ.get("PGDIRECT_TEST_PG") or "15"], 0

    def fail(msg):
        sys.stderr.write(f"run_tests.py: {msg}\nusage:\n" + "\n".join(__doc__.splitlines()[2:5]) + "\n")
        sys.exit(2)

    while i < len(argv):
        arg = argv[i]
        if arg.startswith("--"):
            name, eq, value = arg[2:].partition("=")
            if name not in opts and name != "pg":
                fail(f"unknown option {arg}")
            if not eq:
                if i + 1 >= len(argv):
                    fail(f"option {arg} needs a value")
                value = argv[i + 1]
                i += 1
            i += 1
            if name == "pg":
                versions = [v for v in value.split(",") if v]
                if not versions or not all(v.isdigit() for v in versions):
                    fail(f"--pg {value}: not a list of major versions (e.g. 14,16)")
            else:
                opts[name] = value
            continue
        if not os.path.isfile(arg):
            fail(f"no test file {arg}")
        jobs.extend(Job(arg, v) for v in versions)
        i += 1
    if not jobs:
        fail("no test files given")
    try:
        opts["jobs"] = int(opts["jobs"]) or 3 * (os.cpu_count() or 1)
        opts["timeout"] = float(opts["timeout"])
    except ValueError:
        fail(f"--jobs {opts['jobs']} --timeout {opts['timeout']}: not numbers")
    if opts["jobs"] < 1:
        fail(f"--jobs {opts['jobs']}: at least 1")
    return argparse.Namespace(jobs=opts["jobs"], durations=opts["durations"],
                              save_durations=opts["save-durations"], timeout=opts["timeout"],
                              log_dir=opts["log-dir"], summary=opts["summary"]), jobs


def start(job, slot, nslots, log_dir, cg_parent):
    span = (PORT_HI - PORT_LO + 1) // nslots
    env = dict(os.environ)
    env.update(PGDIRECT_TEST_PG=job.version, PGD_TEST_SLOT=str(slot),
               PGD_PORT_BASE=str(PORT_LO + slot * span), PGD_PORT_SPAN=str(span))
    job.slot = slot
    job.log_path = os.path.join(log_dir, f"{job.version}-{os.path.basename(job.path)}.log")
    job.log = open(job.log_path, "w+b")
    enter = None
    if cg_parent:
        job.cgroup = os.path.join(cg_parent, f"slot{slot}-{os.getpid()}-{id(job)}")
        try:
            os.mkdir(job.cgroup)
            procs = os.path.join(job.cgroup, "cgroup.procs")

            def enter():
                with open(procs, "w", encoding="ascii") as f:
                    f.write(str(os.getpid()))
        except OSError:
            job.cgroup = None
    job.started = time.monotonic()
    job.proc = subprocess.Popen(["bash", job.path], stdin=subprocess.DEVNULL, stdout=job.log,
                                stderr=subprocess.STDOUT, env=env, start_new_session=True,
                                preexec_fn=enter)


def kill_group(job):
    for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
        try:
            os.killpg(job.proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            job.proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            pass


def finish(job):
    job.ended = time.monotonic()
    if job.cgroup:
        job.cpu = cpu_seconds(job.cgroup)
        try:
            os.rmdir(job.cgroup)
        except OSError:
            pass  # a process the test left running; the parent's removal reports it
    job.log.seek(0)
    text = job.log.read().decode("utf-8", "replace")
    job.log.close()
    job.verdict = tap_verdict(text, job.proc.returncode, job.timed_out)
    passed, n, skipped, why = job.verdict
    out = sys.stdout
    out.write(f"=== {job.name} ({job.seconds:.0f} s)\n")
    out.write(text if text.endswith("\n") or not text else text + "\n")
    tail = f", {skipped} skipped" if skipped else ""
    if job.cpu is not None:
        tail += f", {job.cpu:.0f} s of CPU"
    if passed:
        out.write(f"--- {job.name}: ok, {n} assertions{tail}, {job.seconds:.0f} s\n")
    else:
        out.write(f"--- {job.name}: FAILED ({why}), {job.seconds:.0f} s\n")
    out.flush()


def terminated(signum, frame):
    """SIGTERM ends the run as Ctrl-C does: the jobs are killed, the kernel's reclaim resumed."""
    raise KeyboardInterrupt


def main(argv):
    signal.signal(signal.SIGTERM, terminated)
    a, jobs = parse_args(argv)
    times = read_durations(a.durations)
    for j in jobs:
        # never timed: assume slow, start it early
        j.estimate = times.get(j.key, 1e6)
    alone = sorted((j for j in jobs if j.alone), key=lambda j: -j.estimate)
    shared = sorted((j for j in jobs if not j.alone), key=lambda j: -j.estimate)
    pending = alone + shared
    log_dir = a.log_dir or tempfile.mkdtemp(prefix="pgdirect-tests.")
    cg_parent = cpuacct_parent()
    os.makedirs(log_dir, exist_ok=True)
    t0 = time.monotonic()
    print(f"run_tests: {len(jobs)} test jobs, {a.jobs} at a time ({len(alone)} alone first); logs in {log_dir}",
          flush=True)
    running = []
    free = list(range(a.jobs))
    damon = damon_reclaimers()
    if damon:
        failed = damon_set(damon, "off")
        if failed:
            print("run_tests: could not pause the kernel's proactive reclaim (DAMON): " + "; ".join(failed) +
                  "; residency tests may count its evictions as a backup's", flush=True)
        else:
            print(f"run_tests: paused the kernel's proactive reclaim for the run (DAMON pageout: "
                  f"{', '.join(damon)}); resumed at the end", flush=True)
    try:
        while pending or running:
            while pending and len(running) < a.jobs:
                nxt = pending[0]
                if nxt.alone and running:
                    break
                if running and running[0].alone:
                    break
                pending.pop(0)
                start(nxt, free.pop(0), a.jobs, log_dir, cg_parent)
                running.append(nxt)
                if nxt.alone:
                    break
            time.sleep(0.05)
            for j in list(running):
                if j.proc.poll() is None and j.seconds > a.timeout:
                    j.timed_out = True
                    kill_group(j)
                if j.proc.poll() is not None:
                    running.remove(j)
                    free.append(j.slot)
                    free.sort()
                    finish(j)
    except KeyboardInterrupt:
        for j in running:
            kill_group(j)
        raise
    finally:
        for problem in damon_set(damon, "on"):
            print(f"run_tests: could not resume the kernel's proactive reclaim: {problem}", flush=True)
    wall = time.monotonic() - t0

    failed = [j for j in jobs if not j.verdict[0]]
    lines = [""]
    for j in failed:
        lines.append(f"FAILED: {j.name}: {j.verdict[3]} (log: {j.log_path})")
    per_version = {}
    for j in jobs:
        n, sk = per_version.get(j.version, (0, 0))
        per_version[j.version] = (n + j.verdict[1], sk + j.verdict[2])
    total = sum(n for n, _ in per_version.values())
    skipped = sum(sk for _, sk in per_version.values())
    by_version = ", ".join(f"{n} on {v}" for v, (n, _) in sorted(per_version.items(), key=lambda kv: int(kv[0])))
    lines.append(f"Assertions: {total} ({by_version}); {skipped} of them skipped")
    lines.append("Slowest test files:")
    lines.append(f"  {'seconds':>7}  {'CPU s':>7}  test")
    for j in sorted(jobs, key=lambda j: -j.seconds)[:10]:
        cpu = f"{j.cpu:7.1f}" if j.cpu is not None else f"{'-':>7}"
        lines.append(f"  {j.seconds:7.1f}  {cpu}  {j.name}{'  (alone)' if j.alone else ''}")
    if cg_parent:
        cpu_total = sum(j.cpu or 0 for j in jobs)
        lines.append(f"CPU: {cpu_total:.0f} s in all; the most: " + ", ".join(
            f"{j.name} {j.cpu:.0f} s" for j in sorted(jobs, key=lambda j: -(j.cpu or 0))[:5]))
        try:
            os.rmdir(cg_parent)
        except OSError:
            lines.append(f"run_tests: a test left processes behind in {cg_parent}")
    lines.append(f"Files={len(jobs)}, Tests={total}, {wall:.0f} wallclock secs, {a.jobs} jobs at a time")
    lines.append("Result: " + ("FAIL" if failed else "PASS"))
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if a.save_durations:
        write_durations(a.save_durations, jobs)
    if a.summary:
        with open(a.summary, "w", encoding="utf-8") as f:
            f.write(text.lstrip("\n"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
