#!/usr/bin/env bash
# coverage.sh - the gcov counters of a coverage build (make coverage, make check):
#
#   coverage.sh reset  BUILD GCDA         before the tests: an empty, mode 0666
#                                         counter file under GCDA for every .gcno
#   coverage.sh report BUILD GCDA FLOORS  after them: counters back beside their
#                                         .gcno, the HTML report, the floors
#
# Why GCDA and not the build directory: the tests run pgdirect both as root
# and as postgres (archive_command, restore_command), postgres may not enter
# the checkout, and PostgreSQL's umask makes the files it creates 0600. With
# every counter file created in advance, world-writable, under a directory
# anyone can enter, both users merge into the same files (libgcov locks them)
# and libgcov never prints "profiling: ... Cannot open" on a stderr that the
# tests assert on. The runs set GCOV_PREFIX=GCDA, GCOV_PREFIX_STRIP=0.
set -euo pipefail

usage() {
    echo "usage: coverage.sh reset BUILD GCDA | report BUILD GCDA FLOORS" >&2
    exit 2
}
[ $# -ge 3 ] || usage
cmd=$1
build=$(cd "$2" && pwd)
gcda=$3
case $gcda in /*) ;; *) echo "coverage.sh: GCDA must be an absolute path: \"$gcda\"" >&2; exit 2 ;; esac

coverage_reset() {
    local gcno n=0
    rm -rf "$gcda"
    # stale counters beside the objects would be merged into the report
    find "$build" -name '*.gcda' -delete
    while IFS= read -r -d '' gcno; do
        mkdir -p "$gcda$(dirname "$gcno")"
        : >"$gcda${gcno%.gcno}.gcda"
        n=$((n + 1))
    done < <(find "$build" -name '*.gcno' -print0)
    if [ "$n" -eq 0 ]; then
        echo "coverage.sh: no .gcno files in \"$build\": is it a build with -Db_coverage=true?" >&2
        exit 1
    fi
    chmod -R a+rwX "$gcda"
    # every directory from / down must be enterable by postgres
    local d=$gcda
    while [ "$d" != / ]; do
        chmod a+x "$d" 2>/dev/null || true
        d=$(dirname "$d")
    done
    echo "coverage.sh: $n counter files reset under $gcda"
}

coverage_report() {
    local floors=$1 f n=0 out="$build/coverage"
    [ -d "$gcda$build" ] || { echo "coverage.sh: no counters under \"$gcda\": run coverage.sh reset and the tests first" >&2; exit 1; }
    find "$build" -name '*.gcda' -delete
    # an empty file is an object no test ran: gcov would call it corrupt
    while IFS= read -r -d '' f; do
        cp "$f" "${f#"$gcda"}"
        n=$((n + 1))
    done < <(find "$gcda$build" -name '*.gcda' -size +0 -print0)
    echo "coverage.sh: $n counter files collected from $gcda"
    rm -rf "$out"
    mkdir -p "$out"
    (cd "$build/.." && gcovr --root . --object-directory "$build" --filter 'src/' \
        --html-details "$out/index.html" --json-summary-pretty --json-summary "$out/summary.json" \
        --print-summary)
    echo "coverage.sh: report in $out/index.html"
    python3 "$(dirname "$0")/coverage_floors.py" "$out/summary.json" "$floors"
}

case $cmd in
    reset) coverage_reset ;;
    report) [ $# -eq 4 ] || usage; coverage_report "$4" ;;
    *) usage ;;
esac
