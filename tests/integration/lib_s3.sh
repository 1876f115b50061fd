# lib_s3.sh - start s3rver (npm, tests/s3) on 127.0.0.1 for a test, with its
# own data directory and a bucket; stopped with the test. s3rver checks
# Signature V4 with its fixed credentials S3RVER / S3RVER.

S3RVER=${S3RVER:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../s3" && pwd)/node_modules/.bin/s3rver}
S3_BUCKET=pgdirect-test
S3_PID=""

s3_start() {
    [ -x "$S3RVER" ] || bail "s3rver is not installed: run scripts/setup.sh"
    S3_PORT=$(free_port)
    mkdir -p "$T/s3data"
    # s3rver's continuation tokens use a cipher OpenSSL 3 keeps in its legacy provider
    NODE_OPTIONS=--openssl-legacy-provider "$S3RVER" -d "$T/s3data" -a 127.0.0.1 -p "$S3_PORT" \
        --configure-bucket "$S3_BUCKET" >"$T/s3rver.log" 2>&1 &
    S3_PID=$!
    for _ in $(seq 1 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$S3_PORT") 2>/dev/null && break
        sleep 0.1
    done
    export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1
    export AWS_ENDPOINT_URL="http://127.0.0.1:$S3_PORT"
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

# proxy_start: the proxy in front of the S3 server on $S3_PORT (whichever server that is), on a
# port the kernel picked. Sets PROXY_URL, PROXY_PORT and PROXY_LOG (one JSON line per request).
proxy_start() {
    PROXY_LOG="$T/proxy.jsonl"
    rm -f "$T/proxy.port"
    python3 "$FAULT_PROXY" serve --upstream "$S3_PORT" --log "$PROXY_LOG" \
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
