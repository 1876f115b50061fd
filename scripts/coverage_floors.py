#!/usr/bin/env python3
"""coverage_floors.py - line coverage per folder of src/ against its floor.

    coverage_floors.py SUMMARY.json FLOORS.txt

SUMMARY.json is gcovr's --json-summary; FLOORS.txt has one "folder percent"
a line (# starts a comment). A file counts toward the folder it sits in, so
src/storage/s3/sigv4.c counts toward storage/s3 only. Prints the table and
exits 1 when a folder is under its floor or has no floor (a new folder must
be given one, on purpose), 2 on unusable input.
"""
import json
import os
import sys


def floors_read(path):
    floors = {}
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) != 2:
                sys.exit(f'coverage_floors: {path}:{number}: expected "folder percent", got "{line}"')
            try:
                floors[parts[0]] = float(parts[1])
            except ValueError:
                sys.exit(f'coverage_floors: {path}:{number}: invalid percent "{parts[1]}"')
    return floors


def folders_sum(summary_path):
    with open(summary_path) as f:
        summary = json.load(f)
    folders = {}
    for entry in summary["files"]:
        name = entry["filename"]
        if not name.startswith("src/"):
            continue
        folder = os.path.dirname(name[len("src/"):]) or "."
        covered, total = folders.get(folder, (0, 0))
        folders[folder] = (covered + entry["line_covered"], total + entry["line_total"])
    return folders


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    floors = floors_read(sys.argv[2])
    folders = folders_sum(sys.argv[1])
    if not folders:
        print(f"coverage_floors: no src/ files in {sys.argv[1]}", file=sys.stderr)
        return 2
    failed = []
    print(f"{'folder':<14}{'lines':>8}{'covered':>9}{'percent':>9}{'floor':>7}")
    for folder in sorted(folders):
        covered, total = folders[folder]
        percent = 100.0 * covered / total if total else 100.0
        floor = floors.get(folder)
        mark = ""
        if floor is None:
            mark = "  no floor"
            failed.append(f'folder "{folder}" has no floor in {sys.argv[2]}')
        elif percent < floor:
            mark = "  UNDER"
            failed.append(f'folder "{folder}" has {percent:.1f} % of lines covered, under its floor of {floor:g} %')
        floor_text = "-" if floor is None else f"{floor:g}"
        print(f"{folder:<14}{total:>8}{covered:>9}{percent:>8.1f}%{floor_text:>7}{mark}")
    for message in failed:
        print(f"coverage_floors: {message}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
