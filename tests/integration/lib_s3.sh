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

# proxy_start: the fault-injecting proxy in front of s3rver; PROXY_URL, PROXY_CONTROL
proxy_start() {
    PROXY_PORT=$(free_port)
    PROXY_CONTROL="$T/proxy.control"
    echo pass >"$PROXY_CONTROL"
    chmod 666 "$PROXY_CONTROL"
    python3 "$(dirname "${BASH_SOURCE[0]}")/../s3/fault_proxy.py" "$PROXY_PORT" "$S3_PORT" \
        "$PROXY_CONTROL" >"$T/proxy.log" 2>&1 &
    PROXY_PID=$!
    for _ in $(seq 1 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$PROXY_PORT") 2>/dev/null && break
        sleep 0.1
    done
    PROXY_URL="http://127.0.0.1:$PROXY_PORT"
}

