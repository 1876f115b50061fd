#!/usr/bin/env bash
# Encryption at rest on a local repository (issue 34). A cluster whose table
# holds a marker string: no object of the encrypted repository contains it,
# and the same backup into an unencrypted repository does (the positive
# control). Encrypted WAL pushed asynchronously, a full and a delta backup,
# list, verify, a point-in-time restore equal to the source, with the key
# file's path (never the secret) in restore_command; wal-fetch with
# --prefetch. The refusals: no key, a wrong key (exit 1 naming the
# repository; wal-fetch 254), a key file of mode 0644, a key for a
# repository holding unencrypted backups; wal-fetch without the key of a
# segment the encrypted repository lacks: 254 saying the key is needed, not
# 1 (the unencrypted repository: 1, the positive control). Tampering: a flipped byte in a
# partition (verify exits 3 naming it, restore fails and removes what it
# wrote), two WAL segments swapped and a cut segment (wal-fetch 254, nothing
# written). A byte flipped in each part of the keyring: "damaged" naming it
# (verify 3, backup 1, wal-fetch 254), never "wrong key"; a wrong key with the
# keyring whole: "wrong key", never "damaged". The keyring deleted by hand:
# a keyless wal-push or backup is refused (the marker encryption.pgdirect
# says the repository is encrypted), with the key every command says the
# keyring is missing; the marker deleted: refused too; a keyless push into an
# unencrypted repository works (the positive control). A first backup with a key that fails leaves the repository
# encrypted (its keyring alone), as the user guide says.
. "$(dirname "$0")/lib.sh"
setup_tmp
MARKER=PGDIRECT-MARKER-c0ffee
KEY="$T/keys/repo.key"
mkdir -p "$T/keys"
head -c 32 /dev/urandom >"$KEY"
head -c 32 /dev/urandom >"$T/keys/other.key"
chmod 600 "$KEY" "$T/keys/other.key"
chown -R postgres:postgres "$T/keys"
chmod 700 "$T/keys"
K=(--encryption-key-file "$KEY")

pg_init "$T/data"
cat >>"$T/data/postgresql.conf" <<CONF
archive_command = '$PGD wal-push --repo $REPO --encryption-key-file $KEY --archive-async on %p'
CONF
pg_start "$T/data"
as_pg "$PG_BIN/pgbench" -i -s 2 -q >/dev/null 2>&1 || bail "pgbench -i failed"
q "CREATE TABLE marker AS SELECT i, '$MARKER-' || i AS t FROM generate_series(1, 5000) i" >/dev/null
archive_all "$PGPORT"
ok $([ -f "$REPO/keyring.pgdirect" ]; echo $?) "the first wal-push with a key made the repository encrypted"

out=$(pgd backup --repo "$REPO" "${K[@]}" --pgdata "$T/data" --checkpoint fast 2>&1)
ok $? "encrypted full backup succeeds"
full=$(pgd list --repo "$REPO" "${K[@]}" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["id"])')
like "$full" "^[0-9]{8}T[0-9]{6}F$" "list with the key shows it"

# ---- the marker: nowhere in the encrypted repository; in an unencrypted one (positive control) ----
n=$(grep -rlaF "$MARKER" "$REPO" | wc -l)
is "$n" "0" "no object of the encrypted repository holds the marker string"
n=$(find "$REPO" -type f ! -name keyring.pgdirect | wc -l)
cmp_ok "$n" ">" 10 "(the repository holds $n objects: partitions, manifests, sentinel, WAL)"
pgd backup --repo "$T/plainrepo" --pgdata "$T/data" --checkpoint fast --archive-check off >/dev/null 2>&1
ok $? "the same backup into an unencrypted repository succeeds"
n=$(grep -rlaF "$MARKER" "$T/plainrepo" | wc -l)
cmp_ok "$n" ">" 0 "positive control: the unencrypted repository holds the marker string"
for f in manifest.json backup_manifest; do
    grep -qaF '"Path"' "$REPO/backups/$full/$f" || grep -qaF '"path"' "$REPO/backups/$full/$f"
    isnt "$?" "0" "$f is stored encrypted (no JSON in it)"
done

# ---- refusals ----
expect_error "list without the key" "repository \"$REPO\" is encrypted: an encryption key file is needed" \
    pgd list --repo "$REPO"
is "$(pgd list --repo "$REPO" >/dev/null 2>&1; echo $?)" "1" "list without the key exits 1"
# the other readers without the key: no probe of their own, the first object read (or the
# first removal) says it, and nothing is removed
n=$(find "$REPO" -type f | wc -l)
for c in "verify" "delete --retain-full 1" "delete --garbage --garbage-age 0" "metrics"; do
    # shellcheck disable=SC2086
    expect_error "$c without the key" "repository \"$REPO\" is encrypted: an encryption key file is needed" \
        pgd $c --repo "$REPO"
    is "$(pgd $c --repo "$REPO" >/dev/null 2>&1; echo $?)" "1" "$c without the key exits 1"
done
is "$(find "$REPO" -type f | wc -l)" "$n" "and they remove nothing"
expect_error "a wrong key" "encryption key file \"$T/keys/other.key\" does not open repository \"$REPO\" \(wrong key\)" \
    pgd list --repo "$REPO" --encryption-key-file "$T/keys/other.key"
is "$(pgd list --repo "$REPO" --encryption-key-file "$T/keys/other.key" >/dev/null 2>&1; echo $?)" "1" \
    "a wrong key: exit 1"
seg=$(ls "$REPO/wal/00000001" | grep -E '^[0-9A-F]{24}\.lz4$' | head -1)
seg=${seg%.lz4}
pgd wal-fetch --repo "$REPO" --encryption-key-file "$T/keys/other.key" "$seg" "$T/wrongkey.seg" 2>"$T/wf.err"
is "$?" "254" "wal-fetch with a wrong key exits 254 (recovery stops, it does not promote)"
ok $([ ! -e "$T/wrongkey.seg" ]; echo $?) "and writes nothing"
mkdir -p "$T/w" && chown postgres "$T/w"
wal_segment_file 000000090000000000000001 "$T/w/000000090000000000000001"
n=$(find "$REPO" -type f | wc -l)
expect_error "wal-push without the key into the encrypted repository" \
    "repository \"$REPO\" is encrypted: an encryption key file is needed" \
    pgd wal-push --repo "$REPO" "$T/w/000000090000000000000001"
is "$(find "$REPO" -type f | wc -l)" "$n" "and it writes nothing there"
pgd wal-fetch --repo "$REPO" "$seg" "$T/nokey.seg" 2>"$T/wf.err"
is "$?" "254" "wal-fetch without the key exits 254"
like "$(cat "$T/wf.err")" "is encrypted: an encryption key file is needed" "saying that it needs the key"
ok $([ ! -e "$T/nokey.seg" ]; echo $?) "and writes nothing"
pgd wal-fetch --repo "$REPO" 0000000100000000000000EE "$T/nokey2.seg" 2>"$T/wf.err"
is "$?" "254" "wal-fetch without the key of a segment the encrypted repository lacks: 254, not 1 (not archived)"
like "$(cat "$T/wf.err")" "is encrypted: an encryption key file is needed" "saying that it needs the key"
pgd wal-fetch --repo "$T/plainrepo" 0000000100000000000000EE "$T/nokey2.seg" 2>"$T/wf.err"
is "$?" "1" "positive control: the same from the unencrypted repository is 1 (not archived)"
cp "$KEY" "$T/keys/open.key"
chmod 644 "$T/keys/open.key"
chown postgres "$T/keys/open.key"
expect_error "a key file of mode 0644" "encryption key file \"$T/keys/open.key\" has group or world access \(mode 0644\)" \
    pgd list --repo "$REPO" --encryption-key-file "$T/keys/open.key"
expect_error "a key for a repository holding unencrypted backups" \
    "repository \"$T/plainrepo\" holds unencrypted backups or WAL" \
    pgd backup --repo "$T/plainrepo" "${K[@]}" --pgdata "$T/data" --archive-check off
ok $([ ! -e "$T/plainrepo/keyring.pgdirect" ]; echo $?) "and it stays unencrypted"

# ---- a delta backup, then points after it ----
as_pg "$PG_BIN/pgbench" -n -c 1 -t 200 >/dev/null 2>&1
q "UPDATE marker SET t = t || '-delta' WHERE i % 7 = 0" >/dev/null
out=$(pgd backup --repo "$REPO" "${K[@]}" --pgdata "$T/data" --checkpoint fast --delta 2>&1)
ok $? "encrypted delta backup succeeds"
delta=$(pgd list --repo "$REPO" "${K[@]}" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["id"])')
like "$delta" "^[0-9]{8}T[0-9]{6}D$" "the newest backup is a delta"
as_pg "$PG_BIN/pgbench" -n -c 1 -t 200 >/dev/null 2>&1
hash_a=$(pgbench_hash "$PGPORT")
marker_a=$(q "SELECT md5(string_agg(t, ',' ORDER BY i)) FROM marker")
q "SELECT pg_create_restore_point('enc_point')" >/dev/null
as_pg "$PG_BIN/pgbench" -n -c 1 -t 200 >/dev/null 2>&1
isnt "$(pgbench_hash "$PGPORT")" "$hash_a" "the data moved on after the restore point"
archive_all "$PGPORT"
n=$(grep -rlaF "$MARKER" "$REPO" | wc -l)
is "$n" "0" "after the delta and more WAL, still no object holds the marker string"

out=$(pgd verify --repo "$REPO" "${K[@]}" --all 2>&1)
ok $? "verify --all of the encrypted repository passes"

port=$(restore_and_start "$delta" "$T/data_pitr" "${K[@]}" --target-name enc_point --target-action promote)
ok $? "restore of the delta to the restore point starts"
is "$(pgbench_hash "$port")" "$hash_a" "point-in-time restore: pgbench tables equal the source then"
is "$(psql_at "$port" "SELECT md5(string_agg(t, ',' ORDER BY i)) FROM marker")" "$marker_a" \
    "and the marker table too"
rc=$(grep -c "restore_command = .*--encryption-key-file '\?$KEY" "$T/data_pitr/postgresql.auto.conf")
cmp_ok "$rc" ">" 0 "restore_command names the key file's path"
kx=$(od -An -tx1 "$KEY" | tr -d ' \n')
ax=$(od -An -tx1 "$T/data_pitr/postgresql.auto.conf" | tr -d ' \n')
case $ax in *"$kx"*) r=1 ;; *) r=0 ;; esac
ok $r "postgresql.auto.conf does not hold the secret"
pg_stop "$T/data_pitr"

# ---- wal-fetch with prefetch ----
pgd wal-fetch --repo "$REPO" "${K[@]}" --prefetch 2 --spool-path "$T/spool" "$seg" "$T/seg.fetched" 2>"$T/wf.err"
is "$?" "0" "wal-fetch --prefetch 2 of an encrypted segment succeeds"
next=$(ls "$REPO/wal/00000001" | grep -E '^[0-9A-F]{24}\.lz4$' | sed -n 2p)
next=${next%.lz4}
for _ in $(seq 1 100); do ls "$T/spool" 2>/dev/null | grep -q "$next" && break; sleep 0.1; done
pgd wal-fetch --repo "$REPO" "${K[@]}" --prefetch 2 --spool-path "$T/spool" --log-level debug \
    "$next" "$T/next.fetched" 2>"$T/wf.err"
is "$?" "0" "the next segment comes back too"
like "$(cat "$T/wf.err")" "served from the prefetch spool" "from the prefetch spool"
is "$(stat -c %s "$T/next.fetched")" "16777216" "a whole segment"
is "$(od -An -tx1 -N2 "$T/next.fetched" | tr -d ' ')" "10d1" "beginning with a WAL page header"

# a re-push without the key of a segment that is there: its own object is read first, and refused
cp "$T/seg.fetched" "$T/w/$seg" && chown postgres "$T/w/$seg"
expect_error "a re-push without the key" "is encrypted: an encryption key file is needed" \
    pgd wal-push --repo "$REPO" "$T/w/$seg"

# ---- tampering ----
part=$(ls "$REPO/backups/$full"/part_*.tar.lz4 | head -1)
cp "$part" "$T/part.orig"
flip_byte "$part" 5000
out=$(pgd verify --repo "$REPO" "${K[@]}" "$full" 2>&1)
is "$?" "3" "verify of a backup with a flipped byte in a partition exits 3"
like "$out" "$(basename "$part")" "naming the object"
pgd restore "$full" --repo "$REPO" "${K[@]}" --target-dir "$T/data_bad" >"$T/bad.log" 2>&1
isnt "$?" "0" "restore of the tampered backup fails"
like "$(cat "$T/bad.log")" "$(basename "$part").*damaged|damaged.*$(basename "$part")" "naming the damaged object"
ok $([ ! -e "$T/data_bad" ] || [ -z "$(ls -A "$T/data_bad")" ]; echo $?) "and leaves nothing of what it wrote"
cp "$T/part.orig" "$part"
chown postgres "$part"

a=$(ls "$REPO/wal/00000001" | grep -E '^[0-9A-F]{24}\.lz4$' | sed -n 1p)
b=$(ls "$REPO/wal/00000001" | grep -E '^[0-9A-F]{24}\.lz4$' | sed -n 2p)
mv "$REPO/wal/00000001/$a" "$T/swap"
mv "$REPO/wal/00000001/$b" "$REPO/wal/00000001/$a"
mv "$T/swap" "$REPO/wal/00000001/$b"
pgd wal-fetch --repo "$REPO" "${K[@]}" "${a%.lz4}" "$T/swapped.seg" 2>"$T/wf.err"
is "$?" "254" "wal-fetch of a segment swapped with another exits 254"
like "$(cat "$T/wf.err")" "failed authentication" "because it fails authentication"
ok $([ ! -e "$T/swapped.seg" ]; echo $?) "and writes nothing"
mv "$REPO/wal/00000001/$a" "$T/swap"
mv "$REPO/wal/00000001/$b" "$REPO/wal/00000001/$a"
mv "$T/swap" "$REPO/wal/00000001/$b"
w="$REPO/wal/00000001/$a"
cp "$w" "$T/w.orig"
truncate -s $(( $(stat -c %s "$w") - 100 )) "$w"
pgd wal-fetch --repo "$REPO" "${K[@]}" "${a%.lz4}" "$T/cut.seg" 2>"$T/wf.err"
is "$?" "254" "wal-fetch of a cut segment exits 254"
ok $([ ! -e "$T/cut.seg" ]; echo $?) "and writes nothing"
cp "$T/w.orig" "$w"

# ---- check and delete on the encrypted repository ----
out=$(pgd check --repo "$REPO" "${K[@]}" 2>&1)
rc=$?
ok $rc "check of the encrypted repository passes"
[ $rc -eq 0 ] || diag "$out"
pgd backup --repo "$REPO" "${K[@]}" --pgdata "$T/data" --checkpoint fast >/dev/null 2>&1
ok $? "a second full backup"
newest=$(pgd list --repo "$REPO" "${K[@]}" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["id"])')
out=$(pgd delete --repo "$REPO" "${K[@]}" --retain-full 1 2>&1)
rc=$?
ok $rc "delete --retain-full 1 on the encrypted repository succeeds"
[ $rc -eq 0 ] || diag "$out"
ids=$(pgd list --repo "$REPO" "${K[@]}" --json | python3 -c 'import json,sys; print(" ".join(b["id"] for b in json.load(sys.stdin)))')
is "$ids" "$newest" "and list shows the newest full backup alone"
ok $([ ! -e "$REPO/backups/$full.done.json" ] && [ ! -e "$REPO/backups/$delta.done.json" ]; echo $?) \
    "the older full and its delta are gone"

# ---- a damaged keyring is not a wrong key ----
kr="$REPO/keyring.pgdirect"
cp "$kr" "$T/keyring.orig"
# a flipped byte in each part of the keyring: its kdf line, a wrapped data key, its check value, its sum
for n in 2 3 5 6; do
    off=$(head -n $((n - 1)) "$T/keyring.orig" | wc -c)
    cp "$T/keyring.orig" "$kr" && flip_byte "$kr" $((off + 20))
    out=$(pgd verify --repo "$REPO" "${K[@]}" "$newest" 2>&1)
    is "$?" "3" "verify with line $n of the keyring damaged exits 3"
    like "$out" "the keyring \"keyring.pgdirect\" of repository \"$REPO\" is damaged" \
        "naming the keyring as damaged (line $n)"
    case $out in *"wrong key"*) r=1 ;; *) r=0 ;; esac
    ok $r "never as a wrong key (line $n)"
done
pgd backup --repo "$REPO" "${K[@]}" --pgdata "$T/data" --checkpoint fast >"$T/kr.log" 2>&1
is "$?" "1" "backup with a damaged keyring exits 1 (3 would mean checksum errors)"
like "$(cat "$T/kr.log")" "keyring \"keyring.pgdirect\" of repository \"$REPO\" is damaged" "naming it"
pgd wal-fetch --repo "$REPO" "${K[@]}" "${a%.lz4}" "$T/kr.seg" 2>"$T/wf.err"
is "$?" "254" "wal-fetch with a damaged keyring exits 254"
cp "$T/keyring.orig" "$kr"
out=$(pgd verify --repo "$REPO" --encryption-key-file "$T/keys/other.key" "$newest" 2>&1)
is "$?" "1" "verify with a wrong key and the keyring whole exits 1"
like "$out" "does not open repository \"$REPO\" \(wrong key\)" "saying wrong key"
case $out in *damaged*) r=1 ;; *) r=0 ;; esac
ok $r "not as damaged"
pgd verify --repo "$REPO" "${K[@]}" "$newest" >/dev/null 2>&1
is "$?" "0" "positive control: the keyring restored, the right key verifies the backup"

# ---- a keyring deleted by hand: no plaintext beside encrypted objects, and "missing" with the key ----
ok $([ -s "$REPO/encryption.pgdirect" ]; echo $?) "the encrypted repository holds its marker beside the keyring"
LOST=0000000100000000000000F1
wal_segment_file $LOST "$T/$LOST"
mv "$kr" "$T/keyring.saved"
expect_error "wal-push without the key, the keyring deleted" \
    "repository \"$REPO\" is encrypted: an encryption key file is needed" pgd wal-push --repo "$REPO" "$T/$LOST"
ok $([ -z "$(ls "$REPO/wal/00000001" | grep $LOST)" ]; echo $?) "and writes no plaintext segment"
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast >"$T/lost.log" 2>&1
is "$?" "1" "backup without the key, the keyring deleted, exits 1"
like "$(cat "$T/lost.log")" "repository \"$REPO\" is encrypted: an encryption key file is needed" "saying why"
missing="the keyring \"keyring.pgdirect\" of repository \"$REPO\" is missing.*restore it from a copy"
out=$(pgd verify --repo "$REPO" "${K[@]}" "$newest" 2>&1)
is "$?" "3" "verify with the key, the keyring deleted, exits 3"
like "$out" "$missing" "saying the keyring is missing and how to restore it"
expect_error "list with the key, the keyring deleted" "$missing" pgd list --repo "$REPO" "${K[@]}"
pgd wal-fetch --repo "$REPO" "${K[@]}" "${a%.lz4}" "$T/lost.seg" 2>"$T/wf.err"
is "$?" "254" "wal-fetch with the key, the keyring deleted, exits 254"
like "$(cat "$T/wf.err")" "$missing" "saying the keyring is missing"
mv "$T/keyring.saved" "$kr"
mv "$REPO/encryption.pgdirect" "$T/marker.saved"
expect_error "wal-push without the key, the marker deleted (the keyring there)" \
    "repository \"$REPO\" is encrypted: an encryption key file is needed" pgd wal-push --repo "$REPO" "$T/$LOST"
mv "$T/marker.saved" "$REPO/encryption.pgdirect"
pgd wal-push --repo "$T/plainrepo" "$T/$LOST" 2>"$T/plainpush.err"
ok $? "positive control: wal-push without a key into an unencrypted repository works"
ok $([ -e "$T/plainrepo/wal/00000001/$LOST.lz4" ] && [ ! -e "$T/plainrepo/encryption.pgdirect" ]; echo $?) \
    "and stores the segment there, unencrypted"

# ---- a first writing command with a key that then fails: the repository stays encrypted ----
mkdir -p "$T/repo_new" && chown postgres "$T/repo_new"
PGPORT=1 pgd backup --repo "$T/repo_new" "${K[@]}" --pgdata "$T/data" >"$T/new.log" 2>&1
is "$?" "1" "a backup with a key into an empty repository, its server unreachable, fails"
like "$(cat "$T/new.log")" "could not connect to the server" "(saying why)"
is "$(ls -A "$T/repo_new" | tr '\n' ' ')" "encryption.pgdirect keyring.pgdirect " \
    "and leaves the repository encrypted, holding its keyring and its marker alone"
expect_error "list of it without the key" \
    "repository \"$T/repo_new\" is encrypted: an encryption key file is needed" pgd list --repo "$T/repo_new"
out=$(pgd list --repo "$T/repo_new" "${K[@]}" 2>&1)
ok $? "list of it with the key succeeds"
like "$out" "\(no backups\)" "and shows no backup"

done_testing
