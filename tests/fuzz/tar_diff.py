#!/usr/bin/env python3
"""tar_diff.py - our pax tar reader (repo/tar.c, through fuzz_tar) against GNU tar's listing of the
same archives: each archive both accept must list the same entries (type, size, name, link
target), and ours may not accept what GNU tar finds damaged; what ours alone refuses (it is
stricter on purpose: types it never writes, a cut entry, no end of archive) is counted.

    tar_diff.py BUILD DIR...      every file under the DIRs (the corpus, a fuzz run's corpus)

Exit status 1 on a difference, with the archive and both listings."""
import codecs, os, subprocess, sys, tempfile

build, dirs = sys.argv[1], sys.argv[2:]
fuzz_tar = os.path.join(build, "fuzz_tar")

# GNU tar's verbose type letters -> tar_type (repo/tar.h)
GNU_TYPES = {"-": "0", "d": "5", "l": "2", "h": "1", "c": "3", "b": "4", "p": "6"}


def unescape(text):
    """A name as both listings escape it (octal and C escapes) -> its bytes."""
    return codecs.escape_decode(text.encode("latin-1", "backslashreplace"))[0]


def ours(path):
    with tempfile.NamedTemporaryFile(mode="r", encoding="latin-1") as lst:
        env = dict(os.environ, FUZZ_TAR_LIST=lst.name)
        subprocess.run([fuzz_tar, path], env=env, capture_output=True)
        lines = lst.read().split("\n")[:-1]
    # the entries after the last verdict but one: libFuzzer may have run the input more than once
    verdicts = [i for i, l in enumerate(lines) if l == "ok" or l.startswith("refused: ")]
    if len(verdicts) > 1:
        lines = lines[verdicts[-2] + 1:]
    if not lines or not (lines[-1] == "ok" or lines[-1].startswith("refused: ")):
        return "crashed", []
    entries = []
    for l in lines[:-1]:
        typ, size, rest = l.split(" ", 2)
        typ = chr(int(typ, 16))
        name, _, link = rest.partition(" -> ")
        entries.append((typ, int(size) if typ == "0" else 0, unescape(name).rstrip(b"/"),
                        unescape(link)))
    return lines[-1].partition(":")[0], entries if lines[-1] == "ok" else [lines[-1][9:]]


def gnu(path):
    r = subprocess.run(["tar", "--numeric-owner", "--quoting-style=escape", "-tvf", path],
                       capture_output=True)
    # a warning alone ("A lone zero block at N") is not a refusal: GNU tar lists and exits 0
    if r.returncode != 0:
        return "refused", [], r.stderr.decode(errors="replace").strip().splitlines()[:2]
    entries = []
    for l in r.stdout.decode("latin-1").split("\n")[:-1]:
        perms, owner, size, date, time, name = l.split(None, 5)
        typ = GNU_TYPES.get(perms[0], perms[0])
        link = ""
        if typ == "2":
            name, _, link = name.partition(" -> ")
        elif typ == "1":
            name, _, link = name.partition(" link to ")
        entries.append((typ, int(size) if typ == "0" else 0, unescape(name).rstrip(b"/"),
                        unescape(link)))
    return "ok", entries, []


files = sorted(os.path.join(top, f) for d in dirs for top, _, fs in os.walk(d) for f in fs)
same = stricter = 0
bad = []
for f in files:
    v_ours, e_ours = ours(f)
    v_gnu, e_gnu, why = gnu(f)
    if v_ours == "crashed":
        bad.append((f, "fuzz_tar crashed on it", e_ours, e_gnu))
    elif v_ours == "ok" and v_gnu == "ok" and e_ours != e_gnu:
        bad.append((f, "both accept it, with different entries", e_ours, e_gnu))
    elif v_ours == "ok" and v_gnu != "ok":
        bad.append((f, "ours accepts what GNU tar refuses: " + " / ".join(why), e_ours, e_gnu))
    elif v_ours == "refused" and v_gnu == "ok":
        # ours refuses what GNU tar lists: entry types and fields it never writes, data
        # cut short (GNU tar lists a cut last entry), a missing end of archive
        stricter += 1
        if os.environ.get("TAR_DIFF_VERBOSE"):
            print(f"tar_diff: refused by ours only: {f}: {e_ours[0]}\n  GNU:  {e_gnu[:4]}")
    else:
        same += 1
print(f"tar_diff: {len(files)} archives: {same} with the same verdict and entries, "
      f"{stricter} refused by ours only, {len(bad)} differences")
for f, what, a, b in bad[:10]:
    print(f"tar_diff: {f}: {what}\n  ours: {a[:5]}\n  GNU:  {b[:5]}")
sys.exit(1 if bad else 0)
