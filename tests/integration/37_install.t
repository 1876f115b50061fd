#!/usr/bin/env bash
# make install DESTDIR=... puts pgdirect in place like a system tool: the
# binary, a manual page generated from the option table behind --help (man
# renders it without warnings, it lists every command and option --help
# lists, and the exit codes), bash completion (commands, options per
# command, option values, backup ids from the repository on the line) and
# systemd units for nightly backups and weekly delete/verify that
# systemd-analyze accepts; PREFIX moves all of it; make uninstall removes
# it. PGD_SRC is the checkout to install (default: this one).
. "$(dirname "$0")/lib.sh"
setup_tmp
SRC=${PGD_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
D="$T/destdir"
P=/usr/local

make -C "$SRC" install DESTDIR="$D" >"$T/install.log" 2>&1
is "$?" "0" "make install DESTDIR=... succeeds"
[ -x "$D$P/bin/pgdirect" ] || sed 's/^/#   /' "$T/install.log" | tail -5
is "$(stat -c %a "$D$P/bin/pgdirect" 2>/dev/null)" "755" "the binary, executable"
is "$(stat -c %a "$D$P/share/man/man1/pgdirect.1" 2>/dev/null)" "644" "the manual page"
is "$(stat -c %a "$D$P/share/bash-completion/completions/pgdirect" 2>/dev/null)" "644" "the bash completion"
UNITS="pgdirect-backup.service pgdirect-backup.timer pgdirect-delete.service pgdirect-delete.timer pgdirect-drill.service pgdirect-drill.timer pgdirect-verify.service pgdirect-verify.timer"
for u in $UNITS; do
    ok $([ -f "$D$P/lib/systemd/system/$u" ] && echo 0 || echo 1) "systemd unit $u"
done
is "$(grep -h '^ExecStart=' "$D$P/lib/systemd/system/"*.service 2>/dev/null)" \
    "$(printf 'ExecStart=%s\n' "$P/bin/pgdirect backup" "$P/bin/pgdirect delete --retain-full 2 --garbage" "$P/bin/pgdirect drill LATEST --metrics-file /var/lib/pgdirect/metrics/pgdirect.prom" "$P/bin/pgdirect verify LATEST")" \
    "the services run the installed binary: backup, delete, drill, verify"
like "$(grep -h '^OnCalendar=' "$D$P/lib/systemd/system/"*.timer 2>/dev/null | tr '\n' ' ')" \
    "^OnCalendar=\*-\*-\* 01:00:00 OnCalendar=Sun .* OnCalendar=Sat .* OnCalendar=Sat " \
    "nightly backups, weekly delete, drill and verify"
PGD_I="$D$P/bin/pgdirect"

# ---- the manual page ----
MAN="$D$P/share/man/man1/pgdirect.1"
MANWIDTH=100 MANPAGER=cat man -l "$MAN" >"$T/man.txt" 2>"$T/man.err"
is "$?" "0" "man -l renders the page"
is "$(cat "$T/man.err")" "" "without a complaint"
is "$(groff -man -ww -z "$MAN" 2>&1)" "" "groff finds nothing to warn about"
like "$(head -1 "$T/man.txt")" "^PGDIRECT\(1\) +User Commands +PGDIRECT\(1\)$" "a section 1 page"
missing=""
for cmd in $("$PGD_I" --help | sed -n 's/^  \([a-z][a-z-]*\)  .*/\1/p'); do
    grep -q "^   $cmd$" "$T/man.txt" || missing="$missing $cmd"
    for opt in $("$PGD_I" "$cmd" --help | sed -n 's/^  \(--[a-z0-9-]*\).*/\1/p'); do
        grep -q -- "^ *$opt\( \|$\)" "$T/man.txt" || missing="$missing $cmd:$opt"
    done
done
is "$missing" "" "every command and every option --help lists has its entry in the page"
sed -n '/^EXIT STATUS/,/^EXAMPLES/p' "$T/man.txt" | tr -s ' \n' ' ' >"$T/exit.txt"
like "$(cat "$T/exit.txt")" "0 Success.* 1 Failure.* 2 Usage error" "exit codes 0, 1 and 2 are listed"
like "$(cat "$T/exit.txt")" "wal-fetch .* 0 when the file was restored, 1 when it is not in the repository .* 254 on any other failure" \
    "and wal-fetch's 0, 1 and 254"
like "$(cat "$T/exit.txt")" " 3 Damaged data found\\. verify: at least one backup verified is damaged" "and verify's 3 for a damaged backup"
like "$(cat "$T/exit.txt")" "backup --checksum-errors fail: the backup completed, but pages failed their data checksum" \
    "and backup's 3 for pages failing their checksum"
"$PGD_I" --help-man | cmp -s - "$MAN"
ok $? "the installed page is what the installed binary prints"

# ---- bash completion ----
R="$T/repo"
ID=20261129T215959F
mkdir -p "$R/backups"
python3 - "$R/backups/$ID.done.json" "$ID" <<'PY'
import json, sys
json.dump({"id": sys.argv[2], "type": "full", "label": "x", "start_time": 1, "stop_time": 2,
           "start_lsn": "0/2000028", "stop_lsn": "0/2000100", "timeline": 1,
           "start_wal": "000000010000000000000002", "stop_wal": "000000010000000000000002",
           "system_identifier": "1", "pg_version_num": 150000, "tool_version": "0.1.0",
           "compression": "lz4", "read_mode": "direct", "size": 1, "compressed_size": 1,
           "files": 1}, open(sys.argv[1], "w"))
PY
complete_line() { # complete_line WORD...: what completing the last word offers
    PATH="$D$P/bin:$PATH" bash -c '
        . "$1"
        shift
        COMP_WORDS=("$@")
        COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
        _pgdirect
        echo "${COMPREPLY[*]}"' complete "$D$P/share/bash-completion/completions/pgdirect" "$@"
}
is "$(complete_line pgdirect re)" "restore" "pgdirect re<TAB> completes to restore"
like "$(complete_line pgdirect "")" "^backup restore list .*check delete verify" "pgdirect <TAB> lists the commands"
is "$(complete_line pgdirect ver)" "verify" "pgdirect ver<TAB> completes to verify"
is "$(complete_line pgdirect verify --al)" "--all" "and verify's options"
is "$(complete_line pgdirect delete --ret)" "--retain-full --retain-since" "options of the command at hand"
is "$(complete_line pgdirect restore --ret)" "" "and not those of another command"
is "$(complete_line pgdirect backup --compression "")" "lz4 zstd none" "an option's words"
is "$(complete_line pgdirect backup --compression = z)" "zstd" "also after --option="
is "$(complete_line pgdirect backup --concurrency "")" "auto" "a placeholder (N) is no word"
is "$(complete_line pgdirect restore --repo "$R" "")" "LATEST $ID" "restore: LATEST and the ids in the repository on the line"
is "$(complete_line pgdirect verify --repo "$R" "")" "LATEST $ID" "verify: the same"
is "$(complete_line pgdirect delete --repo="$R" --backup "")" "$ID" "delete --backup: the ids, with --repo=URI"
out=$(complete_line pgdirect restore --repo "$T/nowhere" "" 2>&1)
is "$out" "LATEST" "a repository that is not there completes no id, quietly"

# ---- systemd accepts the units (offline, in a root with systemd's own units) ----
SD="$T/sdroot"
mkdir -p "$SD/usr/lib/systemd"
cp -a /usr/lib/systemd/system "$SD/usr/lib/systemd/" 2>/dev/null
make -C "$SRC" install DESTDIR="$SD" >/dev/null 2>&1
if command -v systemd-analyze >/dev/null && [ -f "$SD/usr/lib/systemd/system/sysinit.target" ]; then
    out=$(cd "$SD" && systemd-analyze verify --man=no --root="$SD" "$SD$P/lib/systemd/system/"pgdirect-* 2>&1)
    is "$?:$out" "0:" "systemd-analyze verify accepts every unit, without a warning"
    sed 's/^OnCalendar=.*/OnCalendar=Funday/' "$SD$P/lib/systemd/system/pgdirect-backup.timer" >"$SD$P/lib/systemd/system/bad.timer"
    cp "$SD$P/lib/systemd/system/pgdirect-backup.service" "$SD$P/lib/systemd/system/bad.service"
    out=$(cd "$SD" && systemd-analyze verify --man=no --root="$SD" "$SD$P/lib/systemd/system/bad.timer" 2>&1)
    isnt "$?:$out" "0:" "positive control: it refuses a timer with a bad calendar"
else
    ok 0 "# SKIP systemd-analyze or systemd's units are not installed"
    ok 0 "# SKIP"
fi

# ---- PREFIX and uninstall ----
make -C "$SRC" install DESTDIR="$T/opt" PREFIX=/opt/pgdirect >/dev/null 2>&1
is "$?" "0" "make install PREFIX=/opt/pgdirect succeeds"
is "$(grep -h '^ExecStart=' "$T/opt/opt/pgdirect/lib/systemd/system/pgdirect-backup.service")" \
    "ExecStart=/opt/pgdirect/bin/pgdirect backup" "the units follow PREFIX"
ok $([ -f "$T/opt/opt/pgdirect/share/man/man1/pgdirect.1" ] && echo 0 || echo 1) "and so does the page"
make -C "$SRC" uninstall DESTDIR="$D" >/dev/null 2>&1
is "$?" "0" "make uninstall succeeds"
is "$(find "$D" -type f | wc -l)" "0" "and removes every installed file"
done_testing
