#!/usr/bin/env python3
"""static_prefix.py - static functions that lack their module's prefix.

    static_prefix.py [FILE.c ...]     (default: every src/**/*.c)

STYLE.md: every function carries its module's prefix, static ones too, so a
call site tells you which file to open. A file's prefix is its name
(src/pg/wal_segment.c -> wal_segment_) or its folder and name
(src/storage/s3/writer.c -> s3_writer_, src/cmd/tune.c -> cmd_tune_). A few
modules' public names (their header) already use another prefix; EXTRA lists
those, and their statics may use it too. Prints one "file: name" line per
offender and the total; exits 1 when there is any, so it can gate a build.
"""
import glob
import os
import re
import sys

# Files whose public names (see the header) use a prefix the rules below do
# not derive from the path.
EXTRA = {
    "src/cache/report.c": ["cache_"],  # cache_collect, cache_totals, ...
    "src/cmd/common.c": ["command_"],  # command_open_repo, command_fail, ...
    "src/util/options.c": ["opt_"],  # opt_str, opt_int, ... (the accessors)
}

KEYWORDS = {"if", "while", "for", "switch", "return", "sizeof"}

# A static function's declaration or definition at file scope,
# "[__attribute__((...))] static <type> name(", but not a static pointer to a
# function, "static <type> (*name)(".
STATIC_FN = re.compile(
    r"^(?:__attribute__\(\(.*?\)\)\s*)?static\s+[^=;({}]*?\b([A-Za-z_]\w*)\s*\((?!\*)", re.M
)


def prefixes(path):
    base = os.path.basename(path)[: -len(".c")]
    folder = os.path.basename(os.path.dirname(path))
    return [base + "_", folder + "_" + base + "_"] + EXTRA.get(path, [])


def offenders(path):
    with open(path) as f:
        text = f.read()
    names = sorted({m.group(1) for m in STATIC_FN.finditer(text)} - KEYWORDS)
    accepted = prefixes(path)
    return [n for n in names if not any(n.startswith(p) for p in accepted)]


def main(argv):
    files = argv[1:] or sorted(glob.glob("src/**/*.c", recursive=True))
    total = 0
    per_file = 0
    for path in files:
        bad = offenders(os.path.normpath(path))
        if bad:
            per_file += 1
        for name in bad:
            print(f"{path}: {name}")
        total += len(bad)
    print(f"{total} static functions without their module's prefix in {per_file} files")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
