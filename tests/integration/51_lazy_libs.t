#!/usr/bin/env bash
# libpq, libcurl and libxml2 are opened when a command needs them, not at start
# (src/util/shared_lib.h). With a directory of broken copies of the three first on
# LD_LIBRARY_PATH (files of their sonames that are not libraries):
# - commands that use neither a server nor S3 work: wal-push and wal-fetch to a local
#   repository (PostgreSQL runs them once per segment), list, verify;
# - a command that needs one fails naming the library, and with the exit code its
#   caller acts on: backup and cache exit 1 and publish nothing; wal-push to S3 exits
#   1 (PostgreSQL keeps the segment and retries); wal-fetch from S3 exits 254, fatal,
#   never 1, which would tell PostgreSQL the archive ends there;
# - libxml2 is opened apart from libcurl, at the first answer to parse: wal-fetch of an
#   archived segment from S3 needs none.
. "$(dirname "$0")/lib.sh"
setup_tmp
pg_init "$T/data"
pg_start "$T/data"
q "CREATE TABLE t AS SELECT g FROM generate_series(1, 10000) g"
archive_all "$PGPORT"
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast >/dev/null 2>"$T/b.err" ||
    bail "backup failed: $(tail -2 "$T/b.err")"

BAD="$T/badlib"
mkdir -p "$BAD" "$T/out"
for so in libpq.so.5 libcurl.so.4 libxml2.so.2; do echo "not a library" >"$BAD/$so"; done
chown -R postgres "$BAD" "$T/out"
bad() { as_pg env LD_LIBRARY_PATH="$BAD" "$PGD" "$@"; }
backups() { ls "$REPO/backups" | grep -c '\.done\.json$'; }

seg=$(ls "$REPO/wal/00000001" | sed -n 's/\.lz4$//p' | head -1)
bad wal-fetch --repo "$REPO" "$seg" "$T/out/$seg"
ok $? "wal-fetch from a local repository needs none of them"
pgd wal-fetch --repo "$REPO" "$seg" "$T/out/$seg.ref" && cmp -s "$T/out/$seg" "$T/out/$seg.ref"
ok $? "and the segment is the one fetched with them"
bad wal-push --repo "$T/r2" "$T/out/$seg"
ok $? "wal-push to a local repository needs none of them"
ok $([ -f "$T/r2/wal/00000001/$seg.lz4" ] && echo 0 || echo 1) "and the segment is stored"
bad list --repo "$REPO" >/dev/null
ok $? "list needs none of them"
bad verify --repo "$REPO" >/dev/null 2>&1
ok $? "verify needs none of them"

n=$(backups)
expect_error "backup without a loadable libpq" "could not load the shared library \"libpq.so.5\"" \
    bad backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast
is "$(backups)" "$n" "and publishes no backup"
bad backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast >/dev/null 2>&1
is "$?" "1" "backup without a loadable libpq: exit 1"
expect_error "cache without a loadable libpq" "libpq.so.5" bad cache --pgdata "$T/data"

export AWS_ACCESS_KEY_ID=k AWS_SECRET_ACCESS_KEY=s AWS_REGION=us-east-1
S3="s3://bucket/p --s3-endpoint http://127.0.0.1:$(free_port)"
# shellcheck disable=SC2086 # $S3 is the repository and its option
expect_error "wal-push to S3 without a loadable libcurl" "could not load the shared library \"libcurl.so.4\"" \
    bad wal-push --repo $S3 "$T/out/$seg"
# shellcheck disable=SC2086
bad wal-push --repo $S3 "$T/out/$seg" >/dev/null 2>&1
is "$?" "1" "wal-push to S3 without a loadable libcurl: exit 1, PostgreSQL retries"
# shellcheck disable=SC2086
EXPECT_OUT=$(bad wal-fetch --repo $S3 "$seg" "$T/out/F" 2>&1)
is "$?" "254" "wal-fetch from S3 without a loadable libcurl: exit 254, recovery stops (not 1: end of archive)"
like "$EXPECT_OUT" "libcurl.so.4" "and names the library"
ok $([ ! -e "$T/out/F" ] && echo 0 || echo 1) "and writes nothing"
touch "$T/data/standby.signal"
# shellcheck disable=SC2086
(cd "$T/data" && bad wal-fetch --repo $S3 "$seg" "$T/out/F" >/dev/null 2>&1)
is "$?" "254" "in standby mode too: a missing library is not a repository that may come back"
rm -f "$T/data/standby.signal"

# libxml2 alone waits for the first answer to parse: a GET of an archived segment parses
# none, so wal-fetch from S3 (once per segment in recovery) does without it; to decide that
# a segment is not archived it lists, and then a broken libxml2 is fatal, never "not archived"
. "$(dirname "$0")/lib_s3.sh"
trap 's3_stop; cleanup_all' EXIT
s3_start
S3="s3://$S3_BUCKET/lazy"
pgd wal-push --repo "$S3" "$T/out/$seg" >/dev/null 2>"$T/push.err" ||
    bail "wal-push to S3 failed: $(tail -2 "$T/push.err")"
XMLBAD="$T/badxml"
mkdir -p "$XMLBAD" && echo "not a library" >"$XMLBAD/libxml2.so.2" && chown -R postgres "$XMLBAD"
badxml() { as_pg env LD_LIBRARY_PATH="$XMLBAD" "$PGD" "$@"; }
as_pg env LD_LIBRARY_PATH="$XMLBAD" LD_DEBUG=libs "$PGD" wal-fetch --repo "$S3" "$seg" "$T/out/S" 2>"$T/fetch.err"
ok $? "wal-fetch of an archived segment from S3 needs no libxml2"
cmp -s "$T/out/S" "$T/out/$seg.ref"
ok $? "and the segment is the one archived"
grep -q "libcurl.so.4" "$T/fetch.err"
ok $? "the dynamic loader's log (LD_DEBUG=libs) shows libcurl looked for"
is "$(grep -c "libxml2" "$T/fetch.err")" "0" "and libxml2 never looked for"
missing=$(printf '%s' "$seg" | sed 's/.$/F/')
[ "$missing" != "$seg" ] || bail "the made-up segment name equals the archived one"
EXPECT_OUT=$(badxml wal-fetch --repo "$S3" "$missing" "$T/out/M" 2>&1)
is "$?" "254" "wal-fetch of a segment not in S3, libxml2 broken: exit 254 (not 1: end of archive)"
like "$EXPECT_OUT" "libxml2.so.2" "and names the library"
# an error answer (a wrong secret: 403) still fails, and says why its code is missing
EXPECT_OUT=$(as_pg env LD_LIBRARY_PATH="$XMLBAD" AWS_SECRET_ACCESS_KEY=wrong "$PGD" wal-push \
    --repo "$S3" "$T/out/$seg" 2>&1)
is "$?" "1" "wal-push refused by S3, libxml2 broken: exit 1"
like "$EXPECT_OUT" "warning: could not load the shared library \"libxml2.so.2\".*reported without their code" \
    "with a warning that names libxml2, once ($(grep -c "libxml2" <<<"$EXPECT_OUT") lines)"
is "$(grep -c "libxml2" <<<"$EXPECT_OUT")" "1" "and only once"
like "$EXPECT_OUT" "error: .*HTTP 403" "and the refusal as an error"
done_testing
