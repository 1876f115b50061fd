#!/usr/bin/env bash
# Bad input: each case is one error line naming what is wrong, and a non-zero exit;
# a malformed option value is a usage error (exit 2), before anything is touched.
. "$(dirname "$0")/lib.sh"
setup_tmp
pg_init "$T/data"
pg_start "$T/data"

expect_error "unknown option" 'unknown option "--frobnicate"' \
    pgd backup --repo "$REPO" --frobnicate
expect_error "unknown command" 'unknown command "bakup"' pgd bakup
expect_error "PGDATA does not exist" "data directory \"$T/nope\" is not accessible" \
    pgd backup --repo "$REPO" --pgdata "$T/nope"
mkdir -p "$T/otherdata" && chown postgres "$T/otherdata"
expect_error "PGDATA is not the server's" "data directory \"$T/otherdata\" is not the one of the server" \
    pgd backup --repo "$REPO" --pgdata "$T/otherdata"
expect_error "server unreachable" "could not connect to the server" \
    env PGPORT=1 "$PGD" backup --repo "$REPO" --pgdata "$T/data"
mkdir -p "$T/ro" && chmod 555 "$T/ro"
expect_error "repository not writable" "repository \"$T/ro/repo\" is not writable" \
    pgd backup --repo "$T/ro/repo" --pgdata "$T/data"
usage_error() { # usage_error DESCRIPTION REGEX COMMAND...: expect_error, and exit 2
    local desc=$1 re=$2 rc
    shift 2
    expect_error "$desc" "$re" "$@"
    "$@" >/dev/null 2>&1
    rc=$?
    is "$rc" "2" "$desc: exit 2 (usage)"
}
usage_error "invalid --block-count" 'invalid value "0" for option "--block-count"' \
    pgd backup --repo "$REPO" --pgdata "$T/data" --block-count 0
usage_error "invalid --concurrency" 'invalid value "many" for option "--concurrency"' \
    pgd backup --repo "$REPO" --pgdata "$T/data" --concurrency many
usage_error "invalid --compression" 'invalid value "gzip" for option "--compression"' \
    pgd backup --repo "$REPO" --pgdata "$T/data" --compression gzip
usage_error "invalid PGDIRECT_ variable" 'invalid value "x" for option "--block-count" \(from the environment\)' \
    env PGDIRECT_BLOCK_COUNT=x "$PGD" backup --repo "$REPO" --pgdata "$T/data"

archive_all "$PGPORT"
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast >/dev/null 2>&1
ok $? "a backup to restore"
expect_error "unknown backup id" "backup \"20200101T000000F\" not found in repository \"$REPO\"" \
    pgd restore 20200101T000000F --repo "$REPO" --target-dir "$T/r1"
expect_error "malformed backup id" 'invalid backup id "yesterday"' \
    pgd restore yesterday --repo "$REPO" --target-dir "$T/r1"
mkdir -p "$T/full" && touch "$T/full/file" && chown -R postgres "$T/full"
expect_error "non-empty restore target" "target directory \"$T/full\" is not empty" \
    pgd restore LATEST --repo "$REPO" --target-dir "$T/full"
ok $([ -e "$T/full/file" ] && echo 0 || echo 1) "the non-empty target was left untouched"
expect_error "two recovery targets" "at most one of" \
    pgd restore LATEST --repo "$REPO" --target-dir "$T/r2" --target-name a --target-xid 5
expect_error "missing --target-dir" 'option "--target-dir" is required' \
    pgd restore LATEST --repo "$REPO"
# there, but empty (one that is not there is tested in 55_config_and_repository)
mkdir -p "$T/empty" && chown postgres "$T/empty"
expect_error "empty repository" "no backup in repository \"$T/empty\"" \
    pgd restore LATEST --repo "$T/empty" --target-dir "$T/r3"

# archive_mode off: the backup would not be restorable
pg_stop "$T/data"
echo "archive_mode = off" >>"$T/data/postgresql.conf"
pg_start "$T/data"
expect_error "archiving off" "archive_mode is off" pgd backup --repo "$REPO" --pgdata "$T/data"

# --help documents every option with its default
help=$(pgd backup --help)
ok $? "backup --help exits 0"
like "$help" "--block-count N\|auto .*\[default: auto\]" "backup --help shows --block-count and its default"
like "$help" "--compression lz4\|zstd\|none .*\[default: lz4\]" "backup --help shows --compression and its default"
like "$(pgd restore --help)" "--target-action" "restore --help shows --target-action"
done_testing
