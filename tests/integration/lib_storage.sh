# lib_storage.sh - the storage conformance checks, written once against the
# storage interface (through tests/tools/pgd_storage.c, one operation a run)
# and run against any repository URI: every driver keeps the promises the
# repository stands on (docs/architecture.md, "Adding a store").
#
#   storage_conformance LABEL URI [PGD-STORAGE OPTIONS...]
#
# checks put and get (an empty object too), replacing, create-exclusive
# refused when the object is there and the object untouched, a listing of
# more entries than one page (pages of 3 where the driver takes --list-page),
# remove (twice), remove_many, a 23 MiB object streamed in 5 MiB parts, and
# a writer killed mid-object: nothing listed or readable, and the
# temporaries it left removed by rm-stale (delete --garbage's sweep).
#
# Hooks the caller may set, for what only the server can tell:
#   SC_LIST_REQUESTS  command printing how many listing requests the server
#                     has seen: the paged listing must have made several
#   SC_TEMP_LEFT DIR  command printing how many temporaries of killed writers
#                     are under DIR (the positive control of the sweep)
#   SC_TEMP_SWEPT     "yes" when rm-stale removes them (local, S3); "no"
#                     where the store discards them itself (Azure drops
#                     uncommitted blocks after a week): they must stay invisible
#   SC_LACKS          what a server is known not to do, each checked only
#                     elsewhere and skipped here with the reason: words of
#                     "empty" (a GET of an empty object), "no-replace"
#                     (If-None-Match), "sweep" (listing multipart uploads)
# PGD_STORAGE must be set (s3_require_storage_tool).

SC_LIST_REQUESTS=${SC_LIST_REQUESTS:-}
SC_TEMP_LEFT=${SC_TEMP_LEFT:-}
SC_TEMP_SWEPT=${SC_TEMP_SWEPT:-yes}
SC_LACKS=${SC_LACKS:-}
SC_LACKS_WHY=${SC_LACKS_WHY:-}

sc_lacks() { [[ " $SC_LACKS " == *" $1 "* ]]; }

# sc_list DIR: the listing, or "LIST FAILED" (a failed listing must never look empty)
sc_list() { sc list "$1" || echo "LIST FAILED"; }

sc() { "$PGD_STORAGE" "${SC_OPTS[@]}" "$SC_URI" "$@"; }

storage_conformance() {
    local label=$1 out rc i before after writer
    SC_URI=$2
    shift 2
    SC_OPTS=("$@")

    printf 'hello\n' | sc put sc/a.txt
    ok $? "$label: put"
    is "$(sc get sc/a.txt)" "hello" "$label: get returns what put stored"
    is "$(sc exists sc/a.txt)" "yes" "$label: exists says yes for it"
    is "$(sc exists sc/none)" "no" "$label: and no for an object never written"
    sc get sc/none >/dev/null
    is "$?" 3 "$label: get of a missing object says missing (exit 3), not an error"
    : | sc put sc/empty
    ok $? "$label: an empty object is stored"
    if sc_lacks empty; then
        tap_skip "$label: and read back empty" "$SC_LACKS_WHY"
    else
        is "$(sc get sc/empty | wc -c)" 0 "$label: and read back empty"
    fi
    printf 'v2\n' | sc put sc/a.txt
    is "$(sc get sc/a.txt)" "v2" "$label: a plain put replaces"

    if sc_lacks no-replace; then
        tap_skip "$label: a no-replace put of an object that is there fails" "$SC_LACKS_WHY"
    else
        out=$(printf 'other\n' | sc put sc/a.txt no-replace 2>&1)
        rc=$?
        is "$rc" 1 "$label: a no-replace put of an object that is there fails"
        like "$out" "already exists|File exists" "$label: saying that it exists"
        is "$(sc get sc/a.txt)" "v2" "$label: and the object there is untouched"
    fi
    printf 'new\n' | sc put sc/b.txt no-replace
    ok $? "$label: a no-replace put of an absent object creates it (positive control)"
    is "$(sc get sc/b.txt)" "new" "$label: with its content"

    for i in 1 2 3 4 5 6 7; do printf '%s' "$i" | sc put "sc/list/o$i" || break; done
    printf 'x' | sc put sc/list/d1/x && printf 'y' | sc put sc/list/d2/y
    ok $? "$label: 9 objects written under sc/list"
    before=$([ -n "$SC_LIST_REQUESTS" ] && $SC_LIST_REQUESTS)
    out=$("$PGD_STORAGE" "${SC_OPTS[@]}" --list-page 3 "$SC_URI" list sc/list | sort | tr '\n' ' ')
    is "$out" "d1/ d2/ o1 1 o2 1 o3 1 o4 1 o5 1 o6 1 o7 1 " \
        "$label: a listing in pages of 3 gives every entry once, directories as such"
    if [ -n "$SC_LIST_REQUESTS" ]; then
        # a server may write its request log behind the answers (Azurite does): wait for it, bounded
        local deadline=$((SECONDS + 10))
        after=$($SC_LIST_REQUESTS)
        while [ $((after - before)) -lt 3 ] && [ $SECONDS -lt $deadline ]; do
            sleep 0.2
            after=$($SC_LIST_REQUESTS)
        done
        cmp_ok "$((after - before))" ">=" 3 "$label: over several pages ($((after - before)) requests)"
    fi
    is "$(sc_list sc/nothing)" "" "$label: a directory never written lists nothing"

    sc rm sc/b.txt
    ok $? "$label: remove"
    is "$(sc exists sc/b.txt)" "no" "$label: the removed object is gone"
    sc rm sc/b.txt
    ok $? "$label: removing it again is not an error"
    sc rm-many sc/list/o1 sc/list/o2 sc/list/o3 sc/list/o4 sc/list/o5 sc/list/o6 sc/list/o7
    ok $? "$label: remove_many of 7 objects"
    is "$(sc_list sc/list | sort | tr '\n' ' ')" "d1/ d2/ " "$label: leaves only what it was not given"

    head -c $((23 * 1024 * 1024 + 12345)) /dev/urandom >"$T/sc.big"
    "$PGD_STORAGE" "${SC_OPTS[@]}" --part-size $((5 * 1024 * 1024)) "$SC_URI" put sc/big <"$T/sc.big"
    ok $? "$label: a 23 MiB object streamed in 5 MiB parts"
    sc get sc/big | cmp -s - "$T/sc.big"
    ok $? "$label: reads back byte-identical"

    # a writer killed mid-object: 12 MiB (two parts sent) then it waits for more, and is killed
    mkfifo "$T/sc.fifo"
    "$PGD_STORAGE" "${SC_OPTS[@]}" --part-size $((5 * 1024 * 1024)) "$SC_URI" put sc/killed/obj \
        <"$T/sc.fifo" &
    writer=$!
    exec 7>"$T/sc.fifo"
    head -c $((12 * 1024 * 1024)) /dev/urandom >&7
    sleep 2
    kill -9 "$writer"
    wait "$writer" 2>/dev/null
    exec 7>&-
    rm -f "$T/sc.fifo"
    is "$(sc_list sc/killed)" "" "$label: a killed writer leaves nothing listed"
    sc get sc/killed/obj >/dev/null
    is "$?" 3 "$label: nor readable"
    if [ -n "$SC_TEMP_LEFT" ]; then
        cmp_ok "$($SC_TEMP_LEFT sc/killed)" ">" 0 "$label: but it had stored something (positive control)"
    fi
    if sc_lacks sweep; then
        tap_skip "$label: rm-stale sweeps temporaries idle for 0 s" "$SC_LACKS_WHY"
    else
        sc rm-stale sc 0
        ok $? "$label: rm-stale sweeps temporaries idle for 0 s"
    fi
    if [ -n "$SC_TEMP_LEFT" ] && [ "$SC_TEMP_SWEPT" = yes ]; then
        is "$($SC_TEMP_LEFT sc/killed)" 0 "$label: and none are left"
    fi
    is "$(sc_list sc/killed)" "" "$label: still nothing listed"
    is "$(sc get sc/a.txt)" "v2" "$label: and the live objects are untouched by the sweep"
}
