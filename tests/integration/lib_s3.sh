# lib_s3.sh - an S3 server on 127.0.0.1 for a test, with its own data and a
# bucket ($S3_BUCKET); stopped with the test (s3_stop).
#
# S3_SERVER=moto (the default): tests/s3/moto_server.py, moto with IAM
#   authentication, which checks every request's Signature V4 against an
#   access key created through its IAM API, over the request target as sent
#   (as AWS does). Also exports MOTO_DENIED_ACCESS_KEY_ID and
#   MOTO_DENIED_SECRET_ACCESS_KEY: a user with no permission at all.
# S3_SERVER=s3rver: s3rver (npm, tests/s3), a second implementation we
#   claim to work with; it does not check signatures. Started through
#   tests/s3/s3rver_atomic.js, which mends its one defect that no S3 has: it
#   answers a PUT before the object's bytes are in its file, so a GET right
#   after could return a prefix of the object.
#
# Exports AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION and
# AWS_ENDPOINT_URL for pgdirect and boto3, S3_PORT, and S3_LOG: one line per
# request with its method and target ("PUT /bucket/key?partNumber=1&...").
# $S3_PYTHON runs Python with boto3 (the pyenv python3, as on CI).

S3RVER=${S3RVER:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../s3" && pwd)/s3rver_atomic.js}
MOTO_SERVER=$(cd "$(dirname "${BASH_SOURCE[0]}")/../s3" && pwd)/moto_server.py
S3_SERVER=${S3_SERVER:-moto}
S3_PYTHON=${S3_PYTHON:-python3}
S3_BUCKET=pgdirect-test
S3_PID=""
S3_LOG=""

s3_require_python() {
    "$S3_PYTHON" -c 'import moto, boto3' 2>/dev/null ||
        bail "$S3_PYTHON cannot import moto and boto3: run scripts/setup.sh"
}

# PGD_STORAGE: the pgd-storage helper (tests/tools/pgd_storage.c), built next to pgd-pagecache
s3_require_storage_tool() {
    PGD_STORAGE=${PGD_STORAGE:-$(dirname "${PGD_PAGECACHE:-/nonexistent/x}")/pgd-storage}
    [ -x "$PGD_STORAGE" ] || bail "no pgd-storage helper at $PGD_STORAGE (set PGD_STORAGE or PGD_PAGECACHE)"
}

# s3_wait_port PORT: until something listens there (60 s at most: node starts slowly on a busy machine)
s3_wait_port() {
    local deadline=$((SECONDS + 60))
    while [ $SECONDS -lt $deadline ]; do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

s3_start_moto() {
    local env_file="$T/moto.env" deadline=$((SECONDS + 60))
    s3_require_python
    S3_LOG="$T/moto.log"
    : >"$S3_LOG"
    "$S3_PYTHON" "$MOTO_SERVER" "$S3_PORT" "$env_file" "$S3_LOG" "$S3_BUCKET" "$@" \
        >"$T/moto.out" 2>&1 &
    S3_PID=$!
    while [ ! -f "$env_file" ] && [ $SECONDS -lt $deadline ]; do
        kill -0 "$S3_PID" 2>/dev/null || bail "moto_server.py exited: $(tail -3 "$T/moto.out")"
        sleep 0.1
    done
    [ -f "$env_file" ] || bail "moto_server.py did not come up: $(tail -3 "$T/moto.out")"
    # shellcheck disable=SC1090
    . "$env_file"
    export MOTO_DENIED_ACCESS_KEY_ID MOTO_DENIED_SECRET_ACCESS_KEY
    export AWS_ACCESS_KEY_ID=$MOTO_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY=$MOTO_SECRET_ACCESS_KEY
}

s3_start_s3rver() {
    [ -x "$S3RVER" ] && [ -d "$(dirname "$S3RVER")/node_modules/s3rver" ] ||
        bail "s3rver is not installed: run scripts/setup.sh"
    mkdir -p "$T/s3data"
    S3_LOG="$T/s3rver.log"
    # s3rver's continuation tokens use a cipher OpenSSL 3 keeps in its legacy provider
    NODE_OPTIONS=--openssl-legacy-provider "$S3RVER" -d "$T/s3data" -a 127.0.0.1 -p "$S3_PORT" \
        --configure-bucket "$S3_BUCKET" >"$S3_LOG" 2>&1 &
    S3_PID=$!
    s3_wait_port "$S3_PORT" || bail "s3rver did not come up: $(tail -3 "$S3_LOG")"
    export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER
}

# s3_start [EXTRA_BUCKET...]
s3_start() {
    S3_PORT=$(free_port)
    case "$S3_SERVER" in
    moto) s3_start_moto "$@" ;;
    s3rver) s3_start_s3rver ;;
    *) bail "S3_SERVER=$S3_SERVER: expected moto or s3rver" ;;
    esac
    export AWS_REGION=us-east-1 AWS_ENDPOINT_URL="http://127.0.0.1:$S3_PORT"
    export S3_PORT S3_LOG
}

s3_stop() {
    [ -n "$S3_PID" ] && kill "$S3_PID" 2>/dev/null
    [ -n "${PROXY_PID:-}" ] && kill "$PROXY_PID" 2>/dev/null
    S3_PID=""
}

# ---- the fault proxy (tests/s3/fault_proxy.py): faults per request, and a log of every request ----

FAULT_PROXY=$(cd "$(dirname "${BASH_SOURCE[0]}")/../s3" && pwd)/fault_proxy.py
PROXY_PID=""
PROXY_MARK=0

# proxy_start [PORT]: the proxy in front of the server on PORT (default: the S3 server on
# $S3_PORT, whichever server that is; Azurite's is $AZ_PORT), on a port the kernel picked. Sets
# PROXY_URL, PROXY_PORT and PROXY_LOG (one JSON line per request).
proxy_start() {
    PROXY_LOG="$T/proxy.jsonl"
    rm -f "$T/proxy.port"
    python3 "$FAULT_PROXY" serve --upstream "${1:-$S3_PORT}" --log "$PROXY_LOG" \
        --port-file "$T/proxy.port" >"$T/proxy.err" 2>&1 &
    PROXY_PID=$!
    for _ in $(seq 1 600); do
        [ -s "$T/proxy.port" ] && break
        kill -0 "$PROXY_PID" 2>/dev/null || bail "the fault proxy did not start: $(tail -1 "$T/proxy.err")"
        sleep 0.1
    done
    [ -s "$T/proxy.port" ] || bail "the fault proxy did not start within 60 s"
    PROXY_PORT=$(cat "$T/proxy.port")
    PROXY_URL="http://127.0.0.1:$PROXY_PORT"
}

# proxy_rules JSON: replace the proxy's rules (a JSON list; see fault_proxy.py), their counts
# starting from zero, and mark the log: proxy_count and proxy_show look at later requests only.
proxy_rules() {
    python3 "$FAULT_PROXY" rules "$PROXY_PORT" "$1" || bail "the fault proxy refused rules $1"
    PROXY_MARK=$(python3 "$FAULT_PROXY" last-seq "$PROXY_LOG")
    PROXY_FAILED=$TAP_FAILED
}

# proxy_count [FIELD=VALUE | FIELD~REGEX]...: how many requests since the last proxy_rules match
# (fields: method path query fault status rule conn on_conn body)
proxy_count() { python3 "$FAULT_PROXY" count "$PROXY_LOG" "$PROXY_MARK" "$@"; }

# proxy_show: the requests since the last proxy_rules, one per line, as TAP comments
proxy_show() { python3 "$FAULT_PROXY" show "$PROXY_LOG" "$PROXY_MARK" | sed 's/^/#   /'; }

# proxy_explain: after a scenario, if one of its assertions failed, show what the proxy saw
proxy_explain() {
    [ "$TAP_FAILED" -gt "${PROXY_FAILED:-0}" ] || return 0
    diag "requests since the rules were set:"
    proxy_show
}
