#!/usr/bin/env bash
# Several repositories whose chains differ (two local repositories, A and B):
# - the delta rule: a full to both, then a full to A alone, then --delta to both: A's chain
#   would take its newest full, B's the older one; they disagree, so the run is a full in both,
#   said in one warning line naming B (one read of the data directory, never two). Control:
#   once both hold the same newest backup, --delta to both is a delta in each, with that parent
#   and no such line. Each repository alone restores the delta (its chain) equal to the source.
#   A repository with no backup at all makes --delta a full in all, said in one line naming it;
#   one whose chain cannot be read leaves the run (exit 1 naming it) and the other gets its delta;
# - delete applies retention to each repository on its own: a global --retain-full for all, a
#   repository's own (--repo 'B?retain-full=2') in its place, --garbage in each; every line and every --json
#   object names its repository; one repository that fails (not there) is named, exit 1, and
#   the others are still done; a wrong per-repository value is a usage error (2) that touches
#   nothing;
# - verify --all with a partition of B damaged: exit 3, the damage named in B, A's copies of
#   the same backups ok (control: A alone exits 0); verify of one backup id the same;
# - check of both: each repository's lines name it, archive_command proved for each (exit 0);
#   a third repository archive_command does not reach: its archive_command check FAILED
#   naming it, exit 1.
. "$(dirname "$0")/lib.sh"
setup_tmp
A="$T/repo_a"
B="$T/repo_b"
REPO=$A
pg_init "$T/data"
cat >>"$T/data/postgresql.conf" <<CONF
archive_command = '"$PGD" wal-push --repo "$A" --repo "$B" %p'
CONF
pg_start "$T/data"
as_pg "$PG_BIN/pgbench" -i -s 1 -q >/dev/null 2>&1 || bail "pgbench -i failed"

bk() { # bk OUTFILE ARGS...: a backup, its id in $BID, its stderr in OUTFILE.err
    local out=$1
    shift
    pgd backup --pgdata "$T/data" --checkpoint fast --json "$@" >"$out" 2>"$out.err"
    RC=$?
    BID=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("id", ""))' "$out")
}
chain() { # chain REPO: ID[<PARENT] of every backup list shows ok, in order
    pgd list --repo "$1" --json | python3 -c 'import json,sys
print(" ".join(b["id"] + ("<" + b["parent"] if b.get("parent") else "") for b in json.load(sys.stdin) if b.get("status") == "ok"))'
}
work() { as_pg "$PG_BIN/pgbench" -n -c 1 -t 30 >/dev/null 2>&1 || bail "pgbench failed"; next_second; }

# ---- the delta rule ----
bk "$T/f1" --repo "$A" --repo "$B"
is "$RC" "0" "a full backup to both: exit 0"
F1=$BID
work
bk "$T/f2" --repo "$A"
is "$RC" "0" "a full backup to A alone: exit 0"
F2=$BID
work
bk "$T/f3" --repo "$A" --repo "$B" --delta
is "$RC" "0" "--delta to both, whose newest backups differ: exit 0"
F3=$BID
like "$F3" "F$" "it is a full backup ($F3), in both"
is "$(grep -c 'warning:' "$T/f3.err")" "1" "said in one warning line"
like "$(cat "$T/f3.err")" "warning: taking a full backup instead of a delta: the repositories disagree on the parent: repository \"$B\" would take backup $F1, another backup $F2 \(a full for all of them\)" \
    "which names the repository and both parents"
work
bk "$T/d4" --repo "$A" --repo "$B" --delta
is "$RC" "0" "control: --delta to both once they hold the same newest backup: exit 0"
D4=$BID
like "$D4" "D$" "it is a delta ($D4)"
like "$(cat "$T/d4.err")" "delta on top of backup $F3" "on top of the parent both hold"
is "$(grep -c 'taking a full' "$T/d4.err")" "0" "and no line about a full"
is "$(chain "$A")" "$F1 $F2 $F3 $D4<$F3" "A holds the four backups, the delta on $F3"
is "$(chain "$B")" "$F1 $F3 $D4<$F3" "B holds its three, the same ids, the delta on $F3"
hash_src=$(pgbench_hash "$PGPORT")
for r in "$A" "$B"; do
    REPO=$r
    port=$(restore_and_start "$D4" "$T/r_$(basename "$r")")
    ok $? "the delta, from $(basename "$r") alone, restores (with its chain) and starts"
    is "$(pgbench_hash "$port")" "$hash_src" "restored from $(basename "$r"): every pgbench table equals the source"
    pg_stop "$T/r_$(basename "$r")"
done
REPO=$A

# ---- delete, each repository on its own ----
out=$(pgd delete --repo "$A" --repo "$B" --retain-full 1 --dry-run 2>&1)
is "$?" "0" "delete --dry-run of two repositories: exit 0"
like "$out" "(^|$(printf '\n'))$A  would remove backup $F1: " "a global --retain-full applies to A..."
like "$out" "(^|$(printf '\n'))$B  would remove backup $F1: " "... and to B"
is "$(printf '%s\n' "$out" | grep -Ev "^($A|$B)  |^pgdirect: info: " | wc -l)" "0" \
    "every line of the report names its repository"
before_a=$(ls "$A/backups" | sort)
pgd delete --repo "$A" --repo "$B?retain-full=0" --retain-full 1 >/dev/null 2>"$T/usage.err"
is "$?" "2" "a wrong per-repository --retain-full: usage error (2)"
like "$(cat "$T/usage.err")" "repository \"$B\".*invalid value \"0\" for option \"--retain-full\"" \
    "naming the repository and the value"
is "$(ls "$A/backups" | sort)" "$before_a" "and nothing was touched, in A either"
# what a run killed two days ago on another host left in B, for --garbage
G=20200101T000000F
mkdir -p "$B/backups/$G"
printf '{"id": "%s", "host": "elsewhere", "pid": 1, "start_time": %d}\n' "$G" $(($(date +%s) - 2 * 86400)) \
    >"$B/backups/$G/claim.json"
echo old >"$B/backups/$G/part_0001.tar.lz4"
chown -R postgres "$B/backups/$G"
like "$(pgd list --repo "$B" 2>/dev/null)" "$G .* interrupted" "control: list shows B's leftovers as interrupted"
pgd delete --repo "$T/nowhere" --repo "$A" --repo "$B?retain-full=2" --retain-full 1 --garbage --json \
    >"$T/del.json" 2>"$T/del.err"
is "$?" "1" "delete of three repositories, one missing: exit 1"
like "$(cat "$T/del.err")" "repository \"$T/nowhere\" does not exist" "naming the missing one"
like "$(cat "$T/del.err")" "delete failed in 1 of 3 repositories: \"$T/nowhere\"" "and summing up"
is "$(python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
print(d["ok"], d["backups_removed"], ";".join("%s:%s:%s" % (r["repository"], r["ok"],
      ",".join(sorted(a["id"] for a in r["actions"] if a["action"] == "removed" and a["repository"] == r["repository"])))
      for r in d["repositories"]))' "$T/del.json")" \
    "False 2 $T/nowhere:False:;$A:True:$F1,$F2;$B:True:$G" \
    "--json: each repository's object (and each action) names it; A lost $F1 and $F2, B (its own --retain-full 2) only its garbage"
ok "$([ -e "$B/backups/$G" ] && echo 1 || echo 0)" "--garbage removed B's leftovers"
is "$(chain "$A")" "$F3 $D4<$F3" "A keeps its newest full and its delta"
is "$(chain "$B")" "$F1 $F3 $D4<$F3" "B keeps two fulls and the delta"

# ---- verify --all, one repository damaged ----
part=$(ls -S "$B/backups/$F3"/part_* | head -1)
python3 - "$part" <<'PY'
import sys
p = sys.argv[1]; f = open(p, "r+b"); f.seek(4096); b = f.read(1); f.seek(4096)
f.write(bytes([b[0] ^ 0x01])); f.close()
PY
pgd verify --all --repo "$A" >/dev/null 2>&1
is "$?" "0" "control: verify --all of A alone: exit 0"
out=$(pgd verify --all --repo "$A" --repo "$B" 2>"$T/v.err")
is "$?" "3" "verify --all of both, a partition of $F3 in B damaged: exit 3"
like "$out" "(^|$(printf '\n'))$B  backup $F3: DAMAGED" "B's $F3 is reported damaged, on a line naming B"
like "$out" "(^|$(printf '\n'))$A  backup $F3: ok" "A's $F3 is ok"
like "$out" "(^|$(printf '\n'))$A  backup $D4: ok" "so is A's $D4"
like "$(cat "$T/v.err")" "error: in repository \"$B\": 2 of 5 backups verified are damaged" \
    "the verdict names B (its $F3 and the delta on it)"
pgd verify "$F3" --repo "$A" --repo "$B" --json >"$T/v1.json" 2>/dev/null
is "$?" "3" "verify of one backup id in both: exit 3"
is "$(python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
print(d["ok"], " ".join("%s=%s" % (b["repository"], b["status"]) for b in d["backups"]))' "$T/v1.json")" \
    "False $A=ok $B=damaged" "--json: one object per repository, each naming it"

# ---- check, each repository ----
out=$(pgd check --repo "$A" --repo "$B" --archive-timeout 30 2>&1)
is "$?" "0" "check of both repositories: exit 0"
for r in "$A" "$B"; do
    like "$out" "(^|$(printf '\n'))ok +archive_command +repository \"$r\": " "archive_command proved for $(basename "$r")"
    like "$out" "(^|$(printf '\n'))ok +archive backlog +repository \"$r\": 0 WAL files behind" "a backlog line for $(basename "$r"), named once"
done
mkdir -p "$T/repo_c" && chown postgres "$T/repo_c"
out=$(pgd check --repo "$A" --repo "$T/repo_c" --archive-timeout 30 2>&1)
is "$?" "1" "check with a repository archive_command does not reach: exit 1"
like "$out" "(^|$(printf '\n'))FAILED +archive_command +repository \"$T/repo_c\": " "its archive_command line fails, naming it"
like "$out" "(^|$(printf '\n'))ok +archive_command +repository \"$A\": " "A's still passes"

# ---- the delta rule, a repository without any parent ----
bk "$T/f6" --repo "$A" --repo "$T/repo_c" --delta
is "$RC" "0" "--delta to A and to an empty repository: exit 0"
like "$BID" "F$" "a full backup in both ($BID)"
is "$(grep -c 'warning:' "$T/f6.err")" "1" "said in one warning line"
like "$(cat "$T/f6.err")" "warning: taking a full backup instead of a delta: repository \"$T/repo_c\" has no parent for it: a full for all of them" \
    "naming the repository that lacks a parent"
F6=$BID

# ---- --delta with a repository whose chain cannot be read: it leaves the run ----
chmod 000 "$B/backups"
bk "$T/d7" --repo "$A" --repo "$B" --delta
chmod 755 "$B/backups"
is "$RC" "1" "--delta with B's backups unreadable: exit 1"
like "$(cat "$T/d7.err")" "error: backup $BID completed, but not in repository \"$B\", which failed" \
    "naming B, which has no backup"
like "$BID" "D$" "A still got its delta ($BID)"
is "$(chain "$A" | tr ' ' '\n' | tail -1)" "$BID<$F6" "A holds it, on its own newest backup"

done_testing
