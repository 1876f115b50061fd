#!/usr/bin/env bash
# The master key of an encrypted repository, without a server: WAL pushed
# with a random key file (HKDF), `pgdirect key rotate` to a passphrase file
# (scrypt) killed at four points of its one write (half written, written
# but not synced, before and after the rename: an LD_PRELOAD shim sends
# SIGKILL), after each of which the old or the new key opens the
# repository, never neither, and `delete --garbage` removes the temporary
# keyrings they left once stale; then a rotation that completes: the old key
# opens nothing (exit 1; wal-fetch 254), the new key reads what the old one
# wrote, new objects use a new data key. A rotation from a wrong key
# changes nothing, nor one with the keyring deleted by hand (it says the
# keyring is missing, never that the repository is not encrypted). `pgdirect cat` turns an object back into its
# plaintext for restoring by hand (lz4 -dc gives the segment back), refuses
# a tampered one, and names a missing one.
. "$(dirname "$0")/lib.sh"
setup_tmp
KILLAT=${PGD_KILLAT:-$(dirname "$PGD_PAGECACHE")/pgd-killat.so}
[ -f "$KILLAT" ] || bail "no killing shim at $KILLAT (built by meson as pgd-killat.so)"
cp "$KILLAT" "$T/bin/pgd-killat.so"
mkdir -p "$T/keys" "$T/wal"
head -c 32 /dev/urandom >"$T/keys/old.key"
printf 'a passphrase long enough to be accepted as one\n' >"$T/keys/new.key"
head -c 32 /dev/urandom >"$T/keys/other.key"
chmod 600 "$T/keys"/*
chown -R postgres:postgres "$T/keys" "$T/wal"
OLD=(--encryption-key-file "$T/keys/old.key")
NEW=(--encryption-key-file "$T/keys/new.key")
S1=000000010000000000000001
S2=000000010000000000000002
wal_segment_file $S1 "$T/wal/$S1"
wal_segment_file $S2 "$T/wal/$S2"

pgd wal-push --repo "$REPO" "${OLD[@]}" "$T/wal/$S1" 2>"$T/push.err"
ok $? "wal-push with a random key file makes the repository encrypted"
like "$(cat "$REPO/keyring.pgdirect")" "kdf hkdf-sha256" "a random key file's master key comes from HKDF"

# opens KEYFILE: does this key file bring $S1 back, byte for byte?
opens() {
    rm -f "$T/f.seg"
    pgd wal-fetch --repo "$REPO" --encryption-key-file "$1" $S1 "$T/f.seg" 2>/dev/null &&
        cmp -s "$T/f.seg" "$T/wal/$S1"
}

for point in mid-write before-sync before-rename after-rename; do
    cp "$REPO/keyring.pgdirect" "$T/keyring.before"
    as_pg env LD_PRELOAD="$T/bin/pgd-killat.so" PGD_KILLAT=$point PGD_KILLAT_PATH=keyring.pgdirect \
        ASAN_OPTIONS="$ASAN_OPTIONS:verify_asan_link_order=0" \
        "$PGD" key rotate --repo "$REPO" "${OLD[@]}" --new-encryption-key-file "$T/keys/new.key" \
        >/dev/null 2>&1
    is "$?" "137" "key rotate killed at $point"
    o=no; n=no
    opens "$T/keys/old.key" && o=yes
    opens "$T/keys/new.key" && n=yes
    case $point in
    after-rename) is "$o/$n" "no/yes" "killed $point: the new key opens the repository, the old one no more" ;;
    *) is "$o/$n" "yes/no" "killed $point: the old key still opens the repository" ;;
    esac
    if [ $point = mid-write ]; then
        # the killed rotation still holds its lease: a second rotation waits its turn
        pgd key rotate --repo "$REPO" "${OLD[@]}" --new-encryption-key-file "$T/keys/new.key" \
            >"$T/rotate2.out" 2>&1
        is "$?" 1 "a rotation while another one holds the lease is refused"
        like "$(cat "$T/rotate2.out")" "locked by another key-rotate run .* until " "naming the lease and when it ends"
    fi
    # as if the killed rotation's lease had expired
    rm -rf "$REPO/lock"
    # back to the old keyring for the next point (what the repository held before)
    cp "$T/keyring.before" "$REPO/keyring.pgdirect"
    chown postgres "$REPO/keyring.pgdirect"
done
# what the killed writers left is a temporary object no reader looks at
n=$(ls "$REPO" | grep -c '^keyring.pgdirect.tmp.' )
cmp_ok "$n" ">" 0 "the killed rotations left temporary objects ($n)"
pgd list --repo "$REPO" "${OLD[@]}" >/dev/null 2>&1
ok $? "which do not disturb the repository"
# delete --garbage removes the stale ones (idle for --garbage-age), not one being written
fresh=$(ls "$REPO" | grep '^keyring.pgdirect.tmp.' | head -1)
for f in "$REPO"/keyring.pgdirect.tmp.*; do
    [ "$(basename "$f")" = "$fresh" ] || touch -d '2 hours ago' "$f"
done
# a first encrypted write killed between the keyring and its marker leaves the marker's temporary
for n in 1 2; do
    echo encrypted >"$REPO/encryption.pgdirect.tmp.4000$n.1"
    chown postgres "$REPO/encryption.pgdirect.tmp.4000$n.1"
done
touch -d '2 hours ago' "$REPO/encryption.pgdirect.tmp.40001.1"
pgd delete --repo "$REPO" "${OLD[@]}" --garbage --garbage-age 1h >"$T/garbage.out" 2>&1
ok $? "delete --garbage on the encrypted repository"
is "$(ls "$REPO" | grep '^encryption.pgdirect' | tr '\n' ' ')" \
    "encryption.pgdirect encryption.pgdirect.tmp.40002.1 " \
    "removes a stale temporary of the marker, keeps a fresh one and the marker itself"
is "$(ls "$REPO" | grep '^keyring.pgdirect.tmp.' | tr '\n' ' ')" "$fresh " \
    "removes the killed rotations' stale temporary keyrings, and keeps one written within --garbage-age"
pgd delete --repo "$REPO" "${OLD[@]}" --garbage --garbage-age 0 >"$T/garbage.out" 2>&1
ok $? "delete --garbage --garbage-age 0"
is "$(ls "$REPO" | grep -c '^keyring.pgdirect.tmp.')" "0" "removes the last one"
is "$(ls "$REPO" | grep '^encryption.pgdirect' | tr '\n' ' ')" "encryption.pgdirect " \
    "and the marker's last temporary"
opens "$T/keys/old.key"
ok $? "and the keyring itself stays: the old key still opens the repository"

# a wrong key rotates nothing
cp "$REPO/keyring.pgdirect" "$T/keyring.before"
expect_error "key rotate from a wrong key" "encryption key file \"$T/keys/other.key\" does not open repository \"$REPO\" \(wrong key\)" \
    pgd key rotate --repo "$REPO" --encryption-key-file "$T/keys/other.key" --new-encryption-key-file "$T/keys/new.key"
cmp -s "$REPO/keyring.pgdirect" "$T/keyring.before"
ok $? "and leaves the keyring as it was"
expect_error "key rotate without the new key" "needs --encryption-key-file .* and --new-encryption-key-file" \
    pgd key rotate --repo "$REPO" "${OLD[@]}"
# the keyring deleted by hand: "missing" (the marker is there), never "not encrypted"
mv "$REPO/keyring.pgdirect" "$T/keyring.moved"
expect_error "key rotate, the keyring deleted" \
    "the keyring \"keyring.pgdirect\" of repository \"$REPO\" is missing.*restore it from a copy" \
    pgd key rotate --repo "$REPO" "${OLD[@]}" --new-encryption-key-file "$T/keys/new.key"
mv "$REPO/encryption.pgdirect" "$T/marker.moved"
expect_error "key rotate, the keyring and the marker deleted" \
    "has no keyring \"keyring.pgdirect\" to rotate: it is not encrypted, or its keyring was removed" \
    pgd key rotate --repo "$REPO" "${OLD[@]}" --new-encryption-key-file "$T/keys/new.key"
mv "$T/keyring.moved" "$REPO/keyring.pgdirect"
mv "$T/marker.moved" "$REPO/encryption.pgdirect"
cmp -s "$REPO/keyring.pgdirect" "$T/keyring.before"
ok $? "(the keyring put back as it was)"

# ---- the rotation that completes ----
out=$(pgd key rotate --repo "$REPO" "${OLD[@]}" --new-encryption-key-file "$T/keys/new.key" 2>&1)
ok $? "key rotate succeeds"
like "$out" "2 data keys now wrapped by the key in \"$T/keys/new.key\"" "saying what it did"
like "$(cat "$REPO/keyring.pgdirect")" "kdf scrypt 32768 8 1 " "a passphrase's master key comes from scrypt"
opens "$T/keys/new.key"
ok $? "the new key reads what was written under the old one"
pgd wal-fetch --repo "$REPO" "${OLD[@]}" $S1 "$T/old.seg" 2>"$T/old.err"
is "$?" "254" "after the rotation, wal-fetch with the old key exits 254"
like "$(cat "$T/old.err")" "does not open repository \"$REPO\" \(wrong key" "naming the repository"
ok $([ ! -e "$T/old.seg" ]; echo $?) "and writes nothing"
expect_error "list with the old key" "wrong key" pgd list --repo "$REPO" "${OLD[@]}"
pgd wal-push --repo "$REPO" "${NEW[@]}" "$T/wal/$S2" 2>"$T/push.err"
ok $? "wal-push with the new key"
is "$(od -An -tu1 -j 8 -N 4 "$REPO/wal/00000001/$S2.lz4" | tr -s ' ')" " 0 0 0 2" \
    "the new segment is written with the new data key (2)"
is "$(od -An -tu1 -j 8 -N 4 "$REPO/wal/00000001/$S1.lz4" | tr -s ' ')" " 0 0 0 1" \
    "the old one keeps data key 1"

# ---- pgdirect cat: restoring by hand ----
pgd cat --repo "$REPO" "${NEW[@]}" "wal/00000001/$S2.lz4" >"$T/cat.lz4" 2>"$T/cat.err"
ok $? "pgdirect cat of an encrypted segment succeeds"
lz4 -dc "$T/cat.lz4" >"$T/cat.seg" 2>/dev/null
cmp -s "$T/cat.seg" "$T/wal/$S2"
ok $? "cat | lz4 -dc gives the segment back, byte for byte"
lz4 -dc "$REPO/wal/00000001/$S2.lz4" >/dev/null 2>&1
isnt "$?" "0" "positive control: the stored object itself is no lz4 frame"
cp "$REPO/wal/00000001/$S2.lz4" "$T/s2.orig"
flip_byte "$REPO/wal/00000001/$S2.lz4" 100000
pgd cat --repo "$REPO" "${NEW[@]}" "wal/00000001/$S2.lz4" >"$T/cat2.lz4" 2>"$T/cat.err"
is "$?" "1" "cat of a tampered object exits 1"
like "$(cat "$T/cat.err")" "object \"wal/00000001/$S2.lz4\" in repository \"$REPO\" is damaged: chunk 1 failed authentication" \
    "naming the object and the chunk"
is "$(stat -c %s "$T/cat2.lz4")" "65536" "and writes only the chunk before it, which authenticated"
cp "$T/s2.orig" "$REPO/wal/00000001/$S2.lz4"
expect_error "cat of a missing object" "object \"wal/none\" is not in repository \"$REPO\"" \
    pgd cat --repo "$REPO" "${NEW[@]}" wal/none
# an object of the repository, never a file beside it (the key file, say)
cp "$T/keys/new.key" "$T/beside"
chown postgres "$T/beside"
pgd cat --repo "$REPO" "${NEW[@]}" ../beside >"$T/cat3.out" 2>"$T/cat.err"
is "$?" "2" "cat of ../beside is refused as a usage error"
like "$(cat "$T/cat.err")" "invalid object \"../beside\": expected a path under the repository's root" \
    "naming the object"
is "$(stat -c %s "$T/cat3.out")" "0" "and writes nothing"

done_testing
