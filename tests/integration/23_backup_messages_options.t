#!/usr/bin/env bash
# The server's notices reach the user through pgdirect's logger, never raw
# ("NOTICE:  ..." from libpq); option values with leading or trailing white
# space are refused from the command line and the environment (exit 2,
# naming the option and where the value came from); a list that cannot be
# written to standard output is an error, not a success.
. "$(dirname "$0")/lib.sh"
setup_tmp
pg_init "$T/data"
pg_start "$T/data"
archive_all "$PGPORT"

# ---- server notices ----
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast >/dev/null 2>"$T/b1.err"
ok $? "backup succeeds"
is "$(grep -c '^NOTICE:' "$T/b1.err")" "0" "no raw NOTICE line on stderr"
is "$(grep -vc '^pgdirect: ' "$T/b1.err")" "0" "every stderr line is pgdirect's"

# without --archive-check the server waits for its archiver and says so in a NOTICE
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --archive-check=off >/dev/null 2>"$T/b2.err"
ok $? "backup with --archive-check=off succeeds"
is "$(grep -c 'NOTICE:' "$T/b2.err")" "0" "no raw NOTICE line on stderr"
like "$(cat "$T/b2.err")" "pgdirect: info: server: all required WAL segments have been archived" \
    "the server's notice comes through the logger as info"
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast --archive-check=off \
    --log-level warning >/dev/null 2>"$T/b3.err"
ok $? "backup with --log-level warning succeeds"
is "$(cat "$T/b3.err")" "" "and the server's notice obeys --log-level"

# ---- option values with white space at an edge ----
usage_error() { # usage_error DESCRIPTION REGEX COMMAND...: exit 2, one line naming the option
    local desc=$1 re=$2 out rc
    shift 2
    out=$("$@" 2>&1)
    rc=$?
    is "$rc" "2" "$desc: exit 2"
    is "$(printf '%s\n' "$out" | wc -l)" "1" "$desc: one line"
    like "$out" "^pgdirect: error: $re" "$desc: names the option"
}
usage_error "--compression ' lz4'" 'invalid value " lz4" for option "--compression": leading or trailing white space' \
    pgd backup --repo "$REPO" --pgdata "$T/data" --compression ' lz4'
usage_error "PGDIRECT_COMPRESSION='lz4 '" \
    'invalid value "lz4 " for option "--compression" \(from the environment\): leading or trailing white space' \
    env PGDIRECT_COMPRESSION='lz4 ' runuser -u postgres -- "$PGD" backup --repo "$REPO" --pgdata "$T/data"
usage_error "--concurrency ' 4'" 'invalid value " 4" for option "--concurrency"' \
    pgd backup --repo "$REPO" --pgdata "$T/data" --concurrency ' 4'
usage_error "--repo with a trailing space" "invalid value \"$REPO \" for option \"--repo\"" \
    pgd list --repo "$REPO "
is "$(ls "$REPO/backups" | grep -c 'done.json$')" "3" "no backup was taken with a malformed value"

# ---- list to a full disk ----
out=$(pgd list --repo "$REPO" 2>&1 >/dev/full)
isnt "$?" "0" "list to a full standard output fails"
like "$out" "^pgdirect: error: could not write the backup list to standard output: No space left on device$" \
    "and says why"
out=$(pgd list --repo "$REPO" --json 2>&1 >/dev/full)
isnt "$?" "0" "list --json to a full standard output fails"
done_testing
