#!/usr/bin/env bash
# The config file is read as PostgreSQL reads postgresql.conf: a quoted value is the text
# between the quotes ('' one quote), '#' starts a comment, and a line PostgreSQL would not
# read (or an INI section header) is a usage error naming the file and line. A relative
# repository path is a usage error from every source. A repository that does not exist is
# an error for the commands that only read one (list, restore, verify, delete; wal-fetch
# exits 254), naming it and where --repo came from; the commands that write create it, and
# an existing empty one is an empty repository. No server: the backups are forged sentinels
# (list reads nothing else); the S3 cases run against moto.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_s3.sh"
setup_tmp
trap 's3_stop; cleanup_all' EXIT
export PGDIRECT_CONFIG=/dev/null # the commands below read no /etc/pgdirect.conf by accident
ID=20261129T215959F
SEG=000000010000000000000002

# forge_backup REPO: a repository holding backup $ID (its sentinel)
forge_backup() {
    mkdir -p "$1/backups"
    python3 - "$1/backups/$ID.done.json" "$ID" <<'PY'
import json, sys
json.dump({"id": sys.argv[2], "type": "full", "label": "x", "start_time": 1, "stop_time": 2,
           "start_lsn": "0/2000028", "stop_lsn": "0/2000100", "timeline": 1,
           "start_wal": "000000010000000000000002", "stop_wal": "000000010000000000000002",
           "system_identifier": "1", "pg_version_num": 150000, "tool_version": "0.1.0",
           "compression": "lz4", "read_mode": "direct", "size": 1, "compressed_size": 1,
           "files": 1}, open(sys.argv[1], "w"))
PY
    chown -R postgres "$1"
}

# conf NAME FORMAT [ARG...]: a config file $T/NAME.conf holding printf FORMAT ARG...
conf() {
    # shellcheck disable=SC2059
    printf "$2" "${@:3}" >"$T/$1.conf"
    chmod 644 "$T/$1.conf"
}

# fails CODE DESCRIPTION REGEX COMMAND...: exit CODE, and one line "pgdirect: error: REGEX..."
fails() {
    local code=$1 desc=$2 re=$3 out rc
    shift 3
    out=$("$@" 2>&1)
    rc=$?
    is "$rc" "$code" "$desc: exit $code"
    is "$(printf '%s\n' "$out" | wc -l)" "1" "$desc: one line"
    like "$out" "^pgdirect: error: $re" "$desc: says why"
}

# in_wd COMMAND...: run as postgres from $T/wd, where a relative path would land
mkdir -p "$T/wd" && chown postgres "$T/wd"
in_wd() { (cd "$T/wd" && "$@"); }
wd_empty() { [ -z "$(ls -A "$T/wd")" ]; }

forge_backup "$REPO"

# ---- the config file: quotes, comments, no '=' ----
conf quoted "# written the way postgresql.conf is\nrepo = '%s'   # quoted\n" "$REPO"
out=$(in_wd pgd list --config "$T/quoted.conf" --json 2>&1)
is "$?" "0" "list with repo = '...' in the config file: exit 0"
like "$out" "\"id\": \"$ID\"" "and it finds the backup in the quoted repository"
in_wd pgd check --config "$T/quoted.conf" >"$T/check.out" 2>&1
like "$(cat "$T/check.out")" "^ok +repository +\"$REPO\" is writable and readable; 1 backups" \
    "check with the quoted repo checks that repository"
ok "$(wd_empty && echo 0 || echo 1)" "and creates nothing in its working directory (no \"'\")"
# the control: check does create a repository that is not there
conf fresh "repo = '%s'\n" "$T/fresh"
in_wd pgd check --config "$T/fresh.conf" >/dev/null 2>&1
ok "$([ -d "$T/fresh" ] && echo 0 || echo 1)" "control: check creates a repository that is not there"

# '' is one quote, '#' inside quotes is no comment, and the '=' may be left out
mkdir -p "$T/it's #1" && cp -a "$REPO/backups" "$T/it's #1/" && chown -R postgres "$T/it's #1"
conf doubled "repo '%s'\n" "$T/it''s #1"
out=$(pgd list --config "$T/doubled.conf" --json 2>&1)
is "$?" "0" "repo 'it''s #1' (no '='): exit 0"
like "$out" "\"id\": \"$ID\"" "and it finds the backup in \"$T/it's #1\""

# ---- the config file: what PostgreSQL would not read is a usage error, by line ----
conf section "[main]\nrepo = '%s'\n" "$REPO"
fails 2 "a section header" \
    "config file \"$T/section.conf\" line 1: unexpected section header \"\\[main\\]\"" \
    pgd list --config "$T/section.conf"
conf unterminated "# pgdirect\n\nrepo = '%s\n" "$REPO"
fails 2 "an unterminated quote" \
    "config file \"$T/unterminated.conf\" line 3: unterminated quoted string in the value of \"repo\"" \
    pgd list --config "$T/unterminated.conf"
conf trailing "repo = '%s' backups\n" "$REPO"
fails 2 "text after a quoted value" \
    "config file \"$T/trailing.conf\" line 1: unexpected \"backups\" after the value of \"repo\"" \
    pgd list --config "$T/trailing.conf"
conf unknown "repo = '%s'\nretain_full = 2\n" "$REPO"
fails 2 "an unknown name" "config file \"$T/unknown.conf\" line 2: unknown option \"retain_full\"" \
    pgd list --config "$T/unknown.conf"
conf semicolon "; INI comment\nrepo = '%s'\n" "$REPO"
fails 2 "a ';' comment" "config file \"$T/semicolon.conf\" line 1: \";\" starts no comment here" \
    pgd list --config "$T/semicolon.conf"
# the control: the same lines without the bad one are read
conf good "# pgdirect\n\nrepo = '%s'\n" "$REPO"
out=$(pgd list --config "$T/good.conf" --json 2>&1)
is "$?" "0" "control: the same file without the bad line is read"
like "$out" "\"id\": \"$ID\"" "and finds the backup"

# ---- a relative repository path: a usage error from every source ----
conf relative "repo = backups\n"
# rel_re SOURCE: the message, the value's source as options name it ("" for the command line)
rel_re() {
    echo "invalid value \"backups\" for option \"--repo\"$1: a relative path \\(archive_command and restore_command run in the data directory\\)"
}
fails 2 "list --repo backups" "$(rel_re "")" in_wd pgd list --repo backups
fails 2 "PGDIRECT_REPO=backups" "$(rel_re " \\(from the environment\\)")" \
    in_wd as_pg env PGDIRECT_REPO=backups "$PGD" list
fails 2 "repo = backups in the config file" "$(rel_re " \\(from the config file\\)")" \
    in_wd pgd list --config "$T/relative.conf"
fails 2 "check with a relative --repo" "$(rel_re "")" in_wd pgd check --repo backups
wal_segment_file "$SEG" "$T/$SEG"
fails 2 "wal-push with a relative --repo" "$(rel_re "")" \
    in_wd pgd wal-push --repo backups "$T/$SEG"
fails 254 "wal-fetch with a relative --repo (its usage errors stop recovery)" \
    "$(rel_re "")" in_wd pgd wal-fetch --repo backups "$SEG" "$T/wd/f"
fails 2 "file://relative" 'invalid value "file://backups" for option "--repo": expected file:///absolute/path' \
    in_wd pgd list --repo file://backups
ok "$(wd_empty && echo 0 || echo 1)" "none of them created anything in the working directory"
out=$(pgd list --repo "file://$REPO" --json 2>&1)
like "$out" "\"id\": \"$ID\"" "control: file:///absolute is accepted"
out=$(pgd list --repo null: 2>&1)
is "$?" "0" "control: null: is accepted"

# ---- credentials in a --repo value: refused, and never echoed (text, JSON, any source) ----
# secret_fails CODE DESCRIPTION SHOWN COMMAND...: exit CODE, the message names the repository
# as SHOWN (the positive control: the line is there and carries the URI), and "hunter2" is
# nowhere in what was printed
secret_fails() {
    local code=$1 desc=$2 shown=$3 out rc
    shift 3
    out=$("$@" 2>&1)
    rc=$?
    is "$rc" "$code" "$desc: exit $code"
    like "$out" "invalid value \"$shown\" for option \"--repo\"" "$desc: names the repository"
    ok "$(case $out in *hunter2*) echo 1 ;; *) echo 0 ;; esac)" "$desc: without the secret"
}
conf secret "repo = 'sftp://pg:hunter2@db1.example'\n"
secret_fails 2 "sftp with a password and no path" 'sftp://pg:\*\*\*@db1\.example' \
    pgd list --repo "sftp://pg:hunter2@db1.example"
secret_fails 2 "the same in the config file, --log-format json" 'sftp://pg:\*\*\*@db1\.example' \
    pgd list --config "$T/secret.conf" --log-format json
secret_fails 2 "the same in PGDIRECT_REPO, list --json" 'sftp://pg:\*\*\*@db1\.example' \
    as_pg env PGDIRECT_REPO="sftp://pg:hunter2@db1.example" "$PGD" list --json
secret_fails 2 "sftp with a password and a path" 'sftp://pg:\*\*\*@db1\.example/srv' \
    pgd check --repo "sftp://pg:hunter2@db1.example/srv"
secret_fails 2 "s3 with an access key and secret" 's3://AKIA1:\*\*\*@bucket/p' \
    pgd list --repo "$REPO" --repo "s3://AKIA1:hunter2@bucket/p"
secret_fails 2 "azure with a SAS token after '?'" 'azure://c/p\?sv=\*\*\*&sig=\*\*\*' \
    pgd list --repo "azure://c/p?sv=2022-11-02&sig=hunter2"
secret_fails 254 "wal-fetch with a presigned query" 's3://b/p\?X-Amz-Signature=\*\*\*' \
    pgd wal-fetch --repo "s3://b/p?X-Amz-Signature=hunter2" "$SEG" "$T/wd/f"
secret_fails 2 "wal-push with a password in an endpoint setting" \
    's3://b/p\?s3-endpoint=http://u:\*\*\*@127\.0\.0\.1:1&s3-endpoint=x' \
    pgd wal-push --repo "s3://b/p?s3-endpoint=http://u:hunter2@127.0.0.1:1&s3-endpoint=x" "$T/$SEG"
# the control: a URI without credentials is shown as given
fails 2 "control: a wrong sftp URI without a password is named as given" \
    'invalid value "sftp://pg@db1.example" for option "--repo": expected sftp://USER@HOST' \
    pgd list --repo "sftp://pg@db1.example"

# ---- a repository that does not exist: an error for every command that only reads one ----
M="$T/missing"
# missing_re SOURCE: the message, SOURCE saying where --repo came from
missing_re() {
    echo "repository \"$M\" does not exist \\($1; backups and archive_command create it\\)"
}
cli_re=$(missing_re "--repo")
fails 1 "list of a missing repository" "$cli_re" pgd list --repo "$M"
fails 1 "list --json of a missing repository" "$cli_re" pgd list --repo "$M" --json
fails 1 "verify of a missing repository" "$cli_re" pgd verify --repo "$M" --all
fails 1 "restore from a missing repository" "$cli_re" \
    pgd restore LATEST --repo "$M" --target-dir "$T/restored"
ok "$([ ! -e "$T/restored" ] && echo 0 || echo 1)" "and the restore created no target directory"
fails 1 "delete --dry-run in a missing repository" "$cli_re" \
    pgd delete --repo "$M" --retain-full 1 --dry-run
fails 1 "delete in a missing repository" "$cli_re" pgd delete --repo "$M" --retain-full 1 --garbage
fails 254 "wal-fetch from a missing repository" "could not fetch WAL file \"$SEG\": $cli_re" \
    pgd wal-fetch --repo "$M" "$SEG" "$T/wd/f"
ok "$([ ! -e "$M" ] && echo 0 || echo 1)" "none of them created the repository"
# where --repo came from
fails 1 "from PGDIRECT_REPO" "$(missing_re "PGDIRECT_REPO")" \
    as_pg env PGDIRECT_REPO="$M" "$PGD" list
conf missing "repo = '%s'\n" "$M"
fails 1 "from the config file" "$(missing_re "repo in config file \"$T/missing.conf\"")" \
    pgd list --config "$T/missing.conf"
if [ -e /var/lib/pgdirect ]; then
    tap_skip "the default repository, missing" "/var/lib/pgdirect exists on this machine"
else
    fails 1 "the default repository, missing" \
        'repository "/var/lib/pgdirect" does not exist \(the default of --repo; ' pgd list
fi
# the controls: an empty repository is one, and the commands that write create it
mkdir -p "$T/empty" && chown postgres "$T/empty"
out=$(pgd list --repo "$T/empty" 2>&1)
is "$?" "0" "control: list of an existing, empty repository: exit 0"
like "$out" "\(no backups\)" "and it is empty"
pgd wal-push --repo "$M" "$T/$SEG" 2>/dev/null
ok $? "control: wal-push to the missing repository succeeds"
pgd wal-fetch --repo "$M" "$SEG" "$T/wd/f" && cmp -s "$T/wd/f" "$T/$SEG"
ok $? "and creates it: wal-fetch finds the segment there"

# ---- S3: a bucket that does not exist is an error; an empty prefix is an empty repository ----
s3_start
NB="s3://no-such-bucket/x"
nb_re='.*in s3://no-such-bucket failed: HTTP 404 NoSuchBucket'
fails 1 "list of a bucket that does not exist" "$nb_re" \
    pgd list --repo "$NB" --s3-retries 0
fails 1 "verify of a bucket that does not exist" "$nb_re" \
    pgd verify --repo "$NB" --s3-retries 0 --all
fails 1 "delete --dry-run in a bucket that does not exist" "$nb_re" \
    pgd delete --repo "$NB" --s3-retries 0 --retain-full 1 --dry-run
fails 1 "restore from a bucket that does not exist" "$nb_re" \
    pgd restore LATEST --repo "$NB" --s3-retries 0 --target-dir "$T/restored"
# a "." or ".." segment in the prefix: the server would remove it and answer 403 (the request
# signed is not the one it reads); refused before any request, naming the option
n_before=$(wc -l <"$S3_LOG")
fails 2 "s3 prefix with a \"..\" segment" \
    "invalid value \"s3://$S3_BUCKET/a/\\.\\./b\" for option \"--repo\": the prefix holds a \"\\.\\.\" segment, which URLs remove" \
    pgd wal-push --repo "s3://$S3_BUCKET/a/../b" "$T/$SEG"
fails 2 "s3 prefix with a \".\" segment" 'invalid value .* the prefix holds a "\." segment' \
    pgd list --repo "s3://$S3_BUCKET/./b"
is "$(wc -l <"$S3_LOG")" "$n_before" "and no request was sent"
# the controls: dots within a name, and an empty segment, are signed as sent and stored
pgd wal-push --repo "s3://$S3_BUCKET/a..b/.c//d" "$T/$SEG" 2>"$T/dots.err"
ok $? "control: wal-push to the prefix a..b/.c//d succeeds $(head -c 300 "$T/dots.err")"
pgd wal-fetch --repo "s3://$S3_BUCKET/a..b/.c//d" "$SEG" "$T/wd/f" && cmp -s "$T/wd/f" "$T/$SEG"
ok $? "and wal-fetch from it gives the segment back"
out=$(pgd list --repo "s3://$S3_BUCKET/nothing-here" 2>&1)
is "$?" "0" "list of an empty prefix in an existing bucket: exit 0"
like "$out" "\(no backups\)" "and it is an empty repository"
done_testing
