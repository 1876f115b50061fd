#!/usr/bin/env bash
# The SFTP driver's storage operations against the test's own sshd
# (lib_sftp.sh), through tests/tools/pgd_storage.c run as postgres with a
# key and known_hosts only postgres can read:
# - put and get (directories created), a no-replace write refused when the
#   object exists (PGD_ERR_EXISTS, the object unchanged), a write that
#   replaces (posix-rename@openssh.com), list (sizes, directories, temporary
#   names hidden), exists, remove (a file, an empty directory, a missing one);
#   a directory or a file the server refuses to postgres named, with the cause;
# - a 48 MiB object streamed both ways with the writer's and the reader's
#   peak RSS under 32 MiB (bounded memory), its bytes unchanged;
# - a writer killed midway leaves only a temporary file, listed by nobody,
#   kept by a sweep of those older than an hour, removed by one of age 0;
# - the host key: a changed key, an unknown host and a missing known_hosts
#   file are each refused with one line naming the host and the file, before
#   any login (sshd logs no accepted key); the positive control connects;
# - the user key: a key the server does not know, and no key at all, are
#   refused naming the user, a key file others can read is refused as ssh
#   refuses it; the options come from a config file as well; the agent (SSH_AUTH_SOCK) logs in with the key
#   it holds, and an empty agent is refused;
# - a server that is not there is transient (exit kind 5), and wal-fetch
#   from it exits 254, never 1; a broken libssh2 is found only by commands
#   that use an sftp:// repository (it is opened lazily).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_sftp.sh"
setup_tmp
trap 'sftp_kill; cleanup_all' EXIT
s3_storage_tool="$(dirname "${PGD_PAGECACHE:-/nonexistent/x}")/pgd-storage"
PGD_STORAGE=${PGD_STORAGE:-$s3_storage_tool}
[ -x "$PGD_STORAGE" ] || bail "no pgd-storage helper at $PGD_STORAGE (set PGD_STORAGE or PGD_PAGECACHE)"
cp "$PGD_STORAGE" "$T/bin/pgd-storage" && chmod 755 "$T/bin/pgd-storage"
unset SSH_AUTH_SOCK # the agent is tried only where this test starts one
sftp_start
SRV="$T/sftprepo" # the repository's directory, as the server's disk holds it

st() { as_pg "$T/bin/pgd-storage" --exit-kind "${SFTP_OPTS[@]}" "$SFTP_URI" "$@"; }
st_with() { # st_with KEY KNOWN_HOSTS OP...: other files
    local key=$1 known=$2
    shift 2
    as_pg "$T/bin/pgd-storage" --exit-kind ${key:+--sftp-private-key-file "$key"} \
        --sftp-known-hosts "$known" "$SFTP_URI" "$@"
}

# ---- the operations ----
printf 'first\n' | st put a/b/one.txt
ok $? "put creates the object and the directories above it"
is "$(cat "$SRV/a/b/one.txt")" "first" "and the server's disk holds its bytes"
is "$(st get a/b/one.txt)" "first" "get reads them back"
is "$(stat -c %a "$SRV/a/b")" "750" "a directory the driver creates is 0750"

out=$(printf 'second\n' | st put a/b/one.txt no-replace 2>&1)
is "$?" "4" "a no-replace write over an existing object fails as PGD_ERR_EXISTS"
like "$out" "^pgdirect: error: could not rename .*one.txt.* the target already exists$" \
    "and says so in one line"
is "$(cat "$SRV/a/b/one.txt")" "first" "and the object is unchanged"
is "$(ls "$SRV/a/b" | grep -c '\.tmp\.')" "0" "and its temporary file is removed"
printf 'new\n' | st put a/b/two.txt no-replace
ok $? "a no-replace write of a new object succeeds"

printf 'replaced\n' | st put a/b/one.txt
ok $? "a write that replaces succeeds (posix-rename@openssh.com)"
is "$(st get a/b/one.txt)" "replaced" "and the new bytes are there"

touch "$SRV/a/b/three.txt.tmp.123.4"
chown postgres "$SRV/a/b/three.txt.tmp.123.4"
is "$(st list a/b | sort | tr '\n' ' ')" "one.txt 9 two.txt 4 " \
    "list gives names and sizes, and hides a writer's temporary file"
is "$(st list a | tr '\n' ' ')" "b/ " "a directory is listed as one"
is "$(st list nowhere | wc -l)" "0" "a missing directory lists nothing"
is "$(st exists a/b/one.txt) $(st exists a/b/nope)" "yes no" "exists tells"
st get a/b/nope >/dev/null 2>&1
is "$?" "3" "get of a missing object says missing (exit 3), not an error"

st rm a/b/two.txt
ok $? "rm removes a file"
is "$(st exists a/b/two.txt)" "no" "and it is gone"
st rm a/b/two.txt
ok $? "rm of a missing object succeeds"
mkdir "$SRV/a/empty" && chown postgres "$SRV/a/empty"
st rm a/empty && [ ! -e "$SRV/a/empty" ]
ok $? "rm removes an empty directory"

# what the server refuses is named: a directory postgres may not create, a file it may not read
mkdir -p "$SRV/locked" && chown root "$SRV/locked" && chmod 755 "$SRV/locked"
expect_error "a directory the user may not create" \
    "could not create directory \"$SRV/locked/sub\" on 127\.0\.0\.1:$SFTP_PORT: permission denied" \
    st put locked/sub/x.txt </dev/null
echo secret >"$SRV/locked/file" && chmod 600 "$SRV/locked/file"
expect_error "a file the user may not read" \
    "could not open file \"$SRV/locked/file\" on 127\.0\.0\.1:$SFTP_PORT: permission denied" \
    st get locked/file
rm -rf "$SRV/locked"

# ---- a large object, streamed with bounded memory ----
head -c $((48 * 1024 * 1024)) /dev/urandom >"$T/big"
chmod 644 "$T/big"
rss_put=$(as_pg /usr/bin/time -f %M "$T/bin/pgd-storage" "${SFTP_OPTS[@]}" "$SFTP_URI" put big/object \
    <"$T/big" 2>&1 >/dev/null | tail -1)
cmp -s "$T/big" "$SRV/big/object"
ok $? "a 48 MiB object is stored whole"
rss_get=$( { as_pg /usr/bin/time -f %M "$T/bin/pgd-storage" "${SFTP_OPTS[@]}" "$SFTP_URI" get big/object \
    2>"$T/get.rss" | cmp -s - "$T/big"; echo "cmp=$?"; } )
is "$rss_get" "cmp=0" "and read back whole"
rss_get=$(tail -1 "$T/get.rss")
diag "peak RSS: put $rss_put KiB, get $rss_get KiB"
cmp_ok "$rss_put" "<" 32768 "the writer's peak RSS stays under 32 MiB"
cmp_ok "$rss_get" "<" 32768 "the reader's peak RSS stays under 32 MiB"

# ---- a writer killed midway ----
mkfifo "$T/killed.fifo" && chmod 666 "$T/killed.fifo"
# the writer's own pid, not that of runuser above it
as_pg sh -c 'echo $$ >"$0"; exec "$@"' "$T/writer.pid" "$T/bin/pgd-storage" "${SFTP_OPTS[@]}" \
    "$SFTP_URI" put killed/part.tar <"$T/killed.fifo" >/dev/null 2>&1 &
waiter=$!
exec 7>"$T/killed.fifo"
head -c $((4 * 1024 * 1024)) /dev/urandom >&7
deadline=$((SECONDS + 30))
until [ "$(stat -c %s "$SRV"/killed/part.tar.tmp.* 2>/dev/null | head -1)" -ge 1048576 ] 2>/dev/null ||
    [ $SECONDS -ge $deadline ]; do sleep 0.1; done
kill -9 "$(cat "$T/writer.pid")"
wait "$waiter" 2>/dev/null
exec 7>&-
sleep 0.5
is "$(ls "$SRV/killed" | grep -c '^part\.tar\.tmp\.[0-9]*\.[0-9]*$')" "1" \
    "a writer killed midway leaves a temporary file on the server"
ok $([ ! -e "$SRV/killed/part.tar" ] && echo 0 || echo 1) "and no object under the real name"
is "$(st list killed | wc -l)" "0" "which list does not show"
st rm-stale "" 3600
ok $? "a sweep of temporary files older than an hour succeeds"
is "$(ls "$SRV/killed" | grep -c '\.tmp\.')" "1" "and keeps it: it was written just now"
st rm-stale "" 0
ok $? "a sweep of those idle for 0 seconds succeeds"
is "$(ls "$SRV/killed" | grep -c '\.tmp\.')" "0" "and removes it"
is "$(st get a/b/one.txt)" "replaced" "and no object"

# ---- the server's host key ----
ssh-keygen -q -t ed25519 -N '' -f "$T/other_host" && chmod 644 "$T/other_host.pub"
echo "[127.0.0.1]:$SFTP_PORT $(cut -d' ' -f1,2 "$T/other_host.pub")" >"$T/changed_hosts"
echo "[127.0.0.1]:1 $(cut -d' ' -f1,2 "$SFTP_SERVER_DIR/host_ed25519.pub")" >"$T/unknown_hosts"
echo "127.0.0.1 $(cut -d' ' -f1,2 "$SFTP_SERVER_DIR/host_ed25519.pub")" >>"$T/unknown_hosts"
chown postgres "$T/changed_hosts" "$T/unknown_hosts"
logins_before=$(grep -c "Accepted publickey" "$SFTP_LOG")
expect_error "a changed host key" \
    "host key of \"127.0.0.1\" port $SFTP_PORT does not match known hosts file \"$T/changed_hosts\": refusing" \
    st_with "$SFTP_KEY" "$T/changed_hosts" get a/b/one.txt
expect_error "a host known only on other ports" \
    "host key of \"127.0.0.1\" port $SFTP_PORT is not in known hosts file \"$T/unknown_hosts\": refusing" \
    st_with "$SFTP_KEY" "$T/unknown_hosts" get a/b/one.txt
expect_error "a missing known_hosts file" \
    "could not read known hosts file \"$T/nowhere\": No such file" \
    st_with "$SFTP_KEY" "$T/nowhere" get a/b/one.txt
is "$(grep -c "Accepted publickey" "$SFTP_LOG")" "$logins_before" \
    "no refused connection got as far as logging in"
is "$(st_with "$SFTP_KEY" "$SFTP_KNOWN_HOSTS" get a/b/one.txt)" "replaced" \
    "the positive control: the right known_hosts connects"
# Debian's ssh hashes the names it adds (HashKnownHosts yes): such a file works the same
cp "$SFTP_KNOWN_HOSTS" "$T/hashed_hosts" && ssh-keygen -q -H -f "$T/hashed_hosts" >/dev/null 2>&1 &&
    chown postgres "$T/hashed_hosts"
like "$(head -c 3 "$T/hashed_hosts")" '^\|1\|' "ssh-keygen -H hashed the entry"
is "$(st_with "$SFTP_KEY" "$T/hashed_hosts" get a/b/one.txt)" "replaced" "a hashed known_hosts entry is found"
sed "s/^|1|[^ ]* /|1|$(printf 'salt%.0s' 1 2 3 4 | base64 -w0)|AAAAAAAAAAAAAAAAAAAAAAAAAAA= /" \
    "$T/hashed_hosts" >"$T/hashed_other" && chown postgres "$T/hashed_other"
expect_error "a hashed entry of another host" "is not in known hosts file \"$T/hashed_other\"" \
    st_with "$SFTP_KEY" "$T/hashed_other" get a/b/one.txt

# ---- the user's key ----
ssh-keygen -q -t ed25519 -N '' -f "$T/stranger" && chown postgres "$T/stranger"
expect_error "a key the server does not know" \
    "sftp server 127.0.0.1:$SFTP_PORT refused user \"postgres\" with private key file \"$T/stranger\"" \
    st_with "$T/stranger" "$SFTP_KNOWN_HOSTS" get a/b/one.txt
cp "$SFTP_KEY" "$T/open_key" && chown postgres "$T/open_key" && chmod 640 "$T/open_key"
expect_error "a private key others can read" \
    "private key file \"$T/open_key\" is readable by others \(mode 0640\): refusing" \
    st_with "$T/open_key" "$SFTP_KNOWN_HOSTS" get a/b/one.txt
expect_error "no key and no agent" \
    "no key to log in to sftp server 127.0.0.1:$SFTP_PORT as \"postgres\"" \
    st_with "" "$SFTP_KNOWN_HOSTS" get a/b/one.txt
agent_env=$(as_pg ssh-agent -s -a "$T/agent.sock") || bail "could not start ssh-agent"
agent_pid=$(printf '%s\n' "$agent_env" | sed -n 's/^SSH_AGENT_PID=\([0-9]*\);.*/\1/p')
trap 'kill $agent_pid 2>/dev/null; sftp_kill; cleanup_all' EXIT
agent() { runuser -u postgres -- env SSH_AUTH_SOCK="$T/agent.sock" "$@"; }
out=$(agent "$T/bin/pgd-storage" --sftp-known-hosts "$SFTP_KNOWN_HOSTS" "$SFTP_URI" get a/b/one.txt 2>&1)
like "$out" "refused user \"postgres\" with the agent's keys" "an agent without the key is refused"
agent ssh-add -q "$SFTP_KEY" 2>/dev/null || bail "ssh-add failed"
is "$(agent "$T/bin/pgd-storage" --sftp-known-hosts "$SFTP_KNOWN_HOSTS" "$SFTP_URI" get a/b/one.txt)" \
    "replaced" "the agent holding the key logs in (no key file given)"
kill "$agent_pid" 2>/dev/null

# ---- the options from a config file, as from the command line ----
printf "repo = '%s'\nsftp-private-key-file = '%s'\nsftp-known-hosts = '%s'\n" "$SFTP_URI" "$SFTP_KEY" \
    "$SFTP_KNOWN_HOSTS" >"$T/pgdirect.conf" && chown postgres "$T/pgdirect.conf"
out=$(pgd list --config "$T/pgdirect.conf" 2>&1)
is "$?" "0" "list reads the repository and both SFTP settings from a config file"
like "$out" "^\(no backups\)$" "and finds no backup there"
out=$(pgd list --repo "${SFTP_URI}-missing" "${SFTP_OPTS[@]}" 2>&1)
like "$out" "^pgdirect: error: repository \"${SFTP_URI}-missing\" does not exist" \
    "a repository directory missing on the server is named, as a local one is"

# ---- a server that is not there; libssh2 opened lazily ----
dead_port=$(free_port)
DEAD="sftp://postgres@127.0.0.1:$dead_port$T/sftprepo"
as_pg "$T/bin/pgd-storage" --exit-kind "${SFTP_OPTS[@]}" "$DEAD" get a/b/one.txt >"$T/dead.out" 2>&1
is "$?" "5" "a server that does not answer is transient (PGD_ERR_TRANSIENT)"
like "$(cat "$T/dead.out")" "could not connect to sftp server 127.0.0.1:$dead_port: Connection refused" \
    "and named"
mkdir -p "$T/out" && chown postgres "$T/out"
out=$(pgd wal-fetch --repo "$DEAD" "${SFTP_OPTS[@]}" 000000010000000000000001 "$T/out/seg" 2>&1)
is "$?" "254" "wal-fetch from a server that is not there exits 254, never 1 (not archived)"
BAD="$T/badlib"
mkdir -p "$BAD" "$T/emptyrepo" && chown postgres "$T/emptyrepo" && echo "not a library" >"$BAD/libssh2.so.1" && chown -R postgres "$BAD"
as_pg env LD_LIBRARY_PATH="$BAD" "$PGD" list --repo "$T/emptyrepo" >/dev/null 2>&1
ok $? "a command on a local repository needs no libssh2"
out=$(as_pg env LD_LIBRARY_PATH="$BAD" "$PGD" wal-fetch --repo "$SFTP_URI" "${SFTP_OPTS[@]}" \
    000000010000000000000001 "$T/out/seg" 2>&1)
is "$?" "254" "wal-fetch from sftp without a loadable libssh2: exit 254"
like "$out" "libssh2.so.1" "and names the library"

done_testing
