#!/usr/bin/env bash
# run.sh - runs the libFuzzer targets of tests/fuzz/ (built in BUILD by `ninja -C BUILD fuzz`).
#   run.sh regress BUILD            every target once over each file of its seed corpus and of
#                                   its regressions (make check: seconds)
#   run.sh fuzz BUILD SECONDS [T..] each target (or those named) fuzzed for SECONDS, from its
#                                   corpus, with its dictionary; a crash, a leak, an input slower
#                                   than 1 s or a process over 512 MB fails it (make fuzz);
#                                   FUZZ_RUNS=N stops a target sooner, after N executions
# The inputs a fuzz run adds and what it finds are kept in BUILD/fuzz-work/<target>/: copy a
# crash-*, leak-*, timeout-* or oom-* file to regressions/<target>/ with the fix it needs.
# Exit status: 0 when every target passed; the failures are listed last.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
mode=${1:?usage: run.sh regress|fuzz BUILD [SECONDS] [TARGET...]}
build=${2:?usage: run.sh regress|fuzz BUILD [SECONDS] [TARGET...]}
shift 2
seconds=60
if [ "$mode" = fuzz ]; then
    seconds=${1:?run.sh fuzz needs SECONDS}
    shift
fi
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=($(cd "$HERE" && ls fuzz_*.c | sed 's/\.c$//'))

# the dictionary of each target (several share one)
fuzz_dict() {
    case $1 in
    fuzz_lz4 | fuzz_zstd | fuzz_trailer) echo "$HERE/trailer.dict" ;;
    fuzz_backup_label) echo "$HERE/wal_history.dict" ;;
    fuzz_option_value) echo "$HERE/config.dict" ;;
    *) [ -f "$HERE/${1#fuzz_}.dict" ] && echo "$HERE/${1#fuzz_}.dict" ;;
    esac
}

# ASan's quarantine holds freed memory back (256 MB by default): it would count against the
# 512 MB a target may use without being anyone's allocation
export ASAN_OPTIONS=${ASAN_OPTIONS:-quarantine_size_mb=64:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
failed=()
for t in "${targets[@]}"; do
    bin=$build/$t
    name=${t#fuzz_}
    [ -x "$bin" ] || { echo "run.sh: $bin is not built (ninja -C $build fuzz)" >&2; failed+=("$t"); continue; }
    files=()
    for d in "$HERE/corpus/$name" "$HERE/regressions/$name"; do
        [ -d "$d" ] && while IFS= read -r f; do files+=("$f"); done < <(find "$d" -type f | sort)
    done
    if [ "$mode" = regress ]; then
        [ ${#files[@]} -gt 0 ] || { echo "run.sh: $t has no corpus" >&2; failed+=("$t"); continue; }
        if "$bin" -timeout=1 -rss_limit_mb=512 "${files[@]}" >"$build/$t.regress.log" 2>&1; then
            echo "fuzz regress: $t: ${#files[@]} inputs passed"
        else
            echo "fuzz regress: $t FAILED (${#files[@]} inputs; $build/$t.regress.log):"
            grep -E 'ERROR|SUMMARY|Running:|: .*\(' "$build/$t.regress.log" | tail -5 | sed 's/^/  /'
            failed+=("$t")
        fi
        continue
    fi
    work=$build/fuzz-work/$t
    mkdir -p "$work/corpus"
    [ ${#files[@]} -gt 0 ] && cp -n "${files[@]}" "$work/corpus/" 2>/dev/null
    dict=$(fuzz_dict "$t")
    if "$bin" -max_total_time="$seconds" -timeout=1 -rss_limit_mb=512 -print_final_stats=1 \
        ${dict:+-dict="$dict"} ${FUZZ_RUNS:+-runs="$FUZZ_RUNS"} -artifact_prefix="$work/" "$work/corpus" >"$work/log" 2>&1; then
        echo "fuzz: $t: $(grep -E '^#[0-9]+' "$work/log" | tail -1 | awk '{print $1, $3, $4, $5, $6}')"
    else
        echo "fuzz: $t FAILED ($work/log):"
        grep -E '^SUMMARY|ERROR: libFuzzer|Test unit written' "$work/log" | head -4 | sed 's/^/  /'
        failed+=("$t")
    fi
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "run.sh $mode: FAILED: ${failed[*]}"
    exit 1
fi
echo "run.sh $mode: ${#targets[@]} targets passed"
