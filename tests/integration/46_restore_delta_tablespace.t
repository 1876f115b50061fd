#!/usr/bin/env bash
# restore --delta and tablespaces: the existing directory's own tablespace.
#
# A cluster with a tablespace ts1 is backed up; a stopped copy of it has its
# pg_tblspc/<oid> link pointing at its OWN copy of the tablespace (as
# pg_basebackup --tablespace-mapping makes). The source keeps running and
# updates a table in ts1. restore --delta into the copy, without
# --tablespace-map, must restore the tablespace into the copy's own directory
# (the link stays), never into the location recorded in the backup, which is
# the running server's: its files stay as they were, and after a crash restart
# it still has its committed update. The copy starts and holds the backup's
# data.
#
# A copy without a link for that oid: the recorded location is not empty (the
# running server's), so the restore is refused like a plain restore, naming the
# directory; nothing changes in the copy or the tablespace. So are a link of
# the copy that points inside the copy itself, a dangling link, a link to a
# file and a relative link. Without a link, an absent --tablespace-map
# destination is restored into, as by a plain restore; so is an absent
# recorded location the copy's link points at (a failed --delta run that
# created it leaves that, and running it again must complete).
. "$(dirname "$0")/lib.sh"
setup_tmp

pg_init "$T/data"
pg_start "$T/data"
mkdir -p "$T/ts1" && chown postgres:postgres "$T/ts1"
q "CREATE TABLESPACE ts1 LOCATION '$T/ts1'"
q "CREATE TABLE t (id int PRIMARY KEY, v text) TABLESPACE ts1"
q "INSERT INTO t SELECT g, 'orig' FROM generate_series(1, 20000) g"
pgd backup --repo "$REPO" --pgdata "$T/data" --checkpoint fast >"$T/backup.log" 2>&1
ok $? "a full backup of a cluster with a tablespace"
id=$(ls "$REPO/backups" | grep -E 'F$' | tail -1)
q "SELECT pg_create_restore_point('after_backup')" >/dev/null
archive_all "$PGPORT"
backup_hash=$(q "SELECT md5(string_agg(id || v, ',' ORDER BY id)) FROM t")
oid=$(ls "$T/data/pg_tblspc")

# a stopped copy with its own tablespace copy, and one without the link
pg_stop "$T/data"
cp -a "$T/data" "$T/data_copy"
cp -a "$T/ts1" "$T/ts_copy"
ln -sfn "$T/ts_copy" "$T/data_copy/pg_tblspc/$oid"
cp -a "$T/data" "$T/data_nolink"
rm "$T/data_nolink/pg_tblspc/$oid"
# the copy's tablespace differs from the backup: the restore must write there
f=$(cd "$T/ts_copy" && find . -type f -size +64k | sort | head -1)
[ -n "$f" ] || bail "no file of t in the copy's tablespace"
printf 'XXXXXXXX' | dd of="$T/ts_copy/$f" bs=1 seek=40000 conv=notrunc status=none
chown -R postgres:postgres "$T/data_copy" "$T/ts_copy" "$T/data_nolink"
pg_start "$T/data"

# the source runs on and commits an update to ts1, checkpointed (a crash restart replays from
# after it, so a tablespace file written behind its back would lose it)
q "UPDATE t SET v = 'committed-after-backup' WHERE id % 2 = 0"
q "SELECT count(*) FROM t" >/dev/null
q "CHECKPOINT"
live_hash=$(q "SELECT md5(string_agg(id || v, ',' ORDER BY id)) FROM t")
sums() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 md5sum); }
state() { (cd "$1" && find . -printf '%P %y %m %s %T@ %l\n' | sort && find . -type f -print0 | sort -z | xargs -0 md5sum); }
sums "$T/ts1" >"$T/ts1.before"

# ---- the copy's own tablespace link ----
pgd restore "$id" --repo "$REPO" --target-dir "$T/data_copy" --delta --progress off \
    --target-name after_backup --target-action promote >"$T/delta.log" 2>&1
ok $? "restore --delta into a copy with its own tablespace link, no --tablespace-map" ||
    sed 's/^/# /' "$T/delta.log"
like "$(cat "$T/delta.log")" "tablespace $oid .* is restored to \"$T/ts_copy\" \(the data directory's own link\)" \
    "the log says it goes to the copy's own tablespace"
ok $(grep -q "is restored to \"$T/ts1\"" "$T/delta.log" && echo 1 || echo 0) \
    "and not to the location recorded in the backup"
is "$(readlink "$T/data_copy/pg_tblspc/$oid")" "$T/ts_copy" "the copy's link still points at its own tablespace"
sums "$T/ts1" >"$T/ts1.after"
is "$(diff "$T/ts1.before" "$T/ts1.after" | head -3)" "" "the running server's tablespace files are unchanged"

# ---- no link for the oid: the recorded location (the running server's) is not empty ----
state "$T/data_nolink" >"$T/nolink.before"
expect_error "a copy without the tablespace's link, the recorded location not empty" \
    "tablespace $oid .*the tablespace directory \"$T/ts1\" is not empty.*--tablespace-map" \
    as_pg "$PGD" restore "$id" --repo "$REPO" --target-dir "$T/data_nolink" --delta --progress off
state "$T/data_nolink" >"$T/nolink.after"
is "$(diff "$T/nolink.before" "$T/nolink.after" | head -3)" "" "the copy is left as it was"
sums "$T/ts1" >"$T/ts1.after"
is "$(diff "$T/ts1.before" "$T/ts1.after" | head -3)" "" "and so is the running server's tablespace"

# ---- hostile links of the copy: refused, nothing written ----
echo "a file" >"$T/afile"
mkdir -p "$T/data_nolink/inner"
chown -R postgres:postgres "$T/afile" "$T/data_nolink/inner"
hostile() { # hostile DESCRIPTION LINK_TARGET REGEX
    ln -sfn "$2" "$T/data_nolink/pg_tblspc/$oid"
    state "$T/data_nolink" >"$T/hostile.before"
    expect_error "$1" "$3" \
        as_pg "$PGD" restore "$id" --repo "$REPO" --target-dir "$T/data_nolink" --delta --progress off
    state "$T/data_nolink" >"$T/hostile.after"
    is "$(diff "$T/hostile.before" "$T/hostile.after" | head -3)" "" "$1: the copy is left as it was"
}
hostile "a link into the data directory itself" "$T/data_nolink/inner" \
    "link \"$T/data_nolink/pg_tblspc/$oid\" points at \"$T/data_nolink/inner\", a directory that overlaps the data directory"
hostile "a link to the data directory" "$T/data_nolink" "overlaps the data directory itself"
hostile "a dangling link" "$T/nowhere" "points at \"$T/nowhere\", nothing \(a dangling link\)"
hostile "a link to a file" "$T/afile" "points at \"$T/afile\", something that is not a directory"
hostile "a relative link" "../../ts_copy" "points at \"../../ts_copy\", a relative path"
ok $([ ! -e "$T/nowhere" ] && [ "$(cat "$T/afile")" = "a file" ] && echo 0 || echo 1) \
    "nothing was created or written where the links point"
sums "$T/ts1" >"$T/ts1.after"
is "$(diff "$T/ts1.before" "$T/ts1.after" | head -3)" "" "the running server's tablespace is still unchanged"

# ---- no link, an absent mapped destination: restored there, as a plain restore would ----
rm "$T/data_nolink/pg_tblspc/$oid"
pgd restore "$id" --repo "$REPO" --target-dir "$T/data_nolink" --delta --progress off \
    --tablespace-map "$T/ts1=$T/ts_new" >"$T/nolink.log" 2>&1
ok $? "without a link, --tablespace-map to an absent directory: restored" || sed 's/^/# /' "$T/nolink.log"
like "$(cat "$T/nolink.log")" "is restored to \"$T/ts_new\" \(--tablespace-map\)" "the log says why it goes there"
is "$(readlink "$T/data_nolink/pg_tblspc/$oid")" "$T/ts_new" "and the link points there"
sums "$T/ts1" >"$T/ts1.after"
is "$(diff "$T/ts1.before" "$T/ts1.after" | head -3)" "" "the running server's tablespace is still unchanged"

# ---- the running server still has its committed update after a crash restart ----
as_pg "$PG_BIN/pg_ctl" -D "$T/data" -m immediate -w stop >/dev/null
pg_start "$T/data"
is "$(q "SELECT count(*) FROM t WHERE v = 'committed-after-backup'")" "10000" \
    "after a crash restart the running server has its committed update"
is "$(q "SELECT md5(string_agg(id || v, ',' ORDER BY id)) FROM t")" "$live_hash" "and all its rows"
pg_stop "$T/data"

# ---- a link to the recorded location, which is absent (as a failed --delta run that created it
# leaves it): restored there, so running restore --delta again completes ----
mv "$T/ts1" "$T/ts1.moved"
ln -sfn "$T/ts1" "$T/data_nolink/pg_tblspc/$oid"
pgd restore "$id" --repo "$REPO" --target-dir "$T/data_nolink" --delta --progress off \
    >"$T/dangling.log" 2>&1
ok $? "a link to the absent recorded location: restored there" || sed 's/^/# /' "$T/dangling.log"
ok $([ -d "$T/ts1" ] && [ "$(readlink "$T/data_nolink/pg_tblspc/$oid")" = "$T/ts1" ] && echo 0 || echo 1) \
    "the directory is created and the link kept"

# ---- the restored copy starts and holds the backup's data ----
port=$(free_port)
printf 'port = %s\narchive_mode = off\n' "$port" >>"$T/data_copy/postgresql.auto.conf"
pg_start "$T/data_copy" "$port"
for _ in $(seq 1 300); do
    [ "$(psql_at "$port" "SELECT pg_is_in_recovery()" 2>/dev/null)" = "f" ] && break
    sleep 0.2
done
is "$(psql_at "$port" "SELECT md5(string_agg(id || v, ',' ORDER BY id)) FROM t")" "$backup_hash" \
    "the restored copy holds the backup's data"
is "$(psql_at "$port" "SELECT pg_tablespace_location($oid)")" "$T/ts_copy" \
    "in its own tablespace"
pg_stop "$T/data_copy"

done_testing
