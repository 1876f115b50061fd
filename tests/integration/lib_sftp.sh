# lib_sftp.sh - an SSH server of the test's own on 127.0.0.1 for an sftp://
# repository: Debian's sshd (openssh-server) with a generated host key, its
# own sshd_config and a generated user key, never the machine's sshd;
# stopped with the test (sftp_stop).
#
# The SFTP user is postgres, who runs archive_command and restore_command:
# the key and known_hosts file pgdirect uses are readable by postgres only
# (in $SFTP_DIR, mode 0700). Exports SFTP_PORT, SFTP_DIR, SFTP_KEY,
# SFTP_KNOWN_HOSTS, SFTP_URI (the repository, $T/sftprepo on the server),
# SFTP_OPTS (the two options, for pgdirect's command lines) and SFTP_LOG.

SSHD=${SSHD:-/usr/sbin/sshd}
SFTP_PID=""

sftp_require() {
    [ -x "$SSHD" ] || bail "no sshd at $SSHD: run scripts/setup.sh (openssh-server)"
    command -v ssh-keygen >/dev/null || bail "no ssh-keygen: run scripts/setup.sh (openssh-client)"
}

# sftp_start: generate the keys and the config, start sshd, wait for its port
sftp_start() {
    sftp_require
    SFTP_PORT=$(free_port)
    SFTP_DIR="$T/sftp"        # the client side: postgres's key and known_hosts
    SFTP_SERVER_DIR="$T/sshd" # the server side: root's
    SFTP_LOG="$SFTP_SERVER_DIR/sshd.log"
    mkdir -p "$SFTP_DIR" "$SFTP_SERVER_DIR" "$T/sftprepo"
    # sshd reads authorized_keys as the user: the directory can be passed through, not listed
    chmod 700 "$SFTP_DIR"
    chmod 711 "$SFTP_SERVER_DIR"
    ssh-keygen -q -t ed25519 -N '' -C pgdirect-test-host -f "$SFTP_SERVER_DIR/host_ed25519" ||
        bail "could not generate the host key"
    ssh-keygen -q -t ed25519 -N '' -C pgdirect-test-user -f "$SFTP_DIR/id_ed25519" ||
        bail "could not generate the user key"
    cp "$SFTP_DIR/id_ed25519.pub" "$SFTP_SERVER_DIR/authorized_keys"
    chmod 644 "$SFTP_SERVER_DIR/authorized_keys"
    echo "[127.0.0.1]:$SFTP_PORT $(cut -d' ' -f1,2 "$SFTP_SERVER_DIR/host_ed25519.pub")" \
        >"$SFTP_DIR/known_hosts"
    chown -R postgres:postgres "$SFTP_DIR" "$T/sftprepo"
    chmod 600 "$SFTP_DIR"/*
    cat >"$SFTP_SERVER_DIR/sshd_config" <<CONF
ListenAddress 127.0.0.1:$SFTP_PORT
HostKey $SFTP_SERVER_DIR/host_ed25519
PidFile $SFTP_SERVER_DIR/sshd.pid
AuthorizedKeysFile $SFTP_SERVER_DIR/authorized_keys
AllowUsers postgres
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin no
# postgres's password is locked ('!'): without PAM, sshd refuses such an account
UsePAM yes
StrictModes no
Subsystem sftp internal-sftp
LogLevel VERBOSE
CONF
    # sshd refuses to start without its privilege separation directory
    mkdir -p /run/sshd && chmod 755 /run/sshd
    "$SSHD" -D -e -f "$SFTP_SERVER_DIR/sshd_config" 2>"$SFTP_LOG" &
    SFTP_PID=$!
    local deadline=$((SECONDS + 30))
    while ! (exec 3<>"/dev/tcp/127.0.0.1/$SFTP_PORT") 2>/dev/null; do
        kill -0 "$SFTP_PID" 2>/dev/null || bail "sshd exited: $(tail -3 "$SFTP_LOG")"
        [ $SECONDS -lt $deadline ] || bail "sshd did not come up: $(tail -3 "$SFTP_LOG")"
        sleep 0.1
    done
    SFTP_KEY="$SFTP_DIR/id_ed25519"
    SFTP_KNOWN_HOSTS="$SFTP_DIR/known_hosts"
    SFTP_URI="sftp://postgres@127.0.0.1:$SFTP_PORT$T/sftprepo"
    SFTP_OPTS=(--sftp-private-key-file "$SFTP_KEY" --sftp-known-hosts "$SFTP_KNOWN_HOSTS")
    export SFTP_PORT SFTP_DIR SFTP_KEY SFTP_KNOWN_HOSTS SFTP_URI SFTP_LOG
}

# sftp_stop: the server and the sessions it forked (they are its children, in its process group)
sftp_stop() {
    [ -n "$SFTP_PID" ] || return 0
    kill "$SFTP_PID" 2>/dev/null
    wait "$SFTP_PID" 2>/dev/null
    SFTP_PID=""
}

# sftp_restart: the same server again, on the same port, with the same keys
sftp_restart() {
    sftp_stop
    "$SSHD" -D -e -f "$SFTP_SERVER_DIR/sshd_config" 2>>"$SFTP_LOG" &
    SFTP_PID=$!
    local deadline=$((SECONDS + 30))
    while ! (exec 3<>"/dev/tcp/127.0.0.1/$SFTP_PORT") 2>/dev/null; do
        kill -0 "$SFTP_PID" 2>/dev/null || bail "sshd exited: $(tail -3 "$SFTP_LOG")"
        [ $SECONDS -lt $deadline ] || bail "sshd did not come up again"
        sleep 0.1
    done
}

# sftp_kill: sshd and every session it forked, with SIGKILL, as a crash or a
# power cut of the server host would end them (a SIGTERM to the listener leaves
# its sessions running)
sftp_kill() {
    [ -n "$SFTP_PID" ] || return 0
    local pids=("$SFTP_PID") i=0 p
    while [ $i -lt ${#pids[@]} ]; do
        for p in $(ps -o pid= --ppid "${pids[$i]}"); do pids+=("$p"); done
        i=$((i + 1))
    done
    kill -9 "${pids[@]}" 2>/dev/null
    wait "$SFTP_PID" 2>/dev/null
    SFTP_PID=""
}
