#!/usr/bin/env bash
# Keys S3 refuses when they are signed other than as sent. First the checker
# is checked: moto with IAM authentication (tests/s3/moto_server.py) accepts
# botocore's own requests for keys with a space, '+', 'é', '&', '%' and '=',
# and a request signed over its target as sent; it refuses a wrong secret,
# the same request signed over its target encoded twice (what pgdirect once
# did), and a user without permission. Then pgdirect, against that checker:
# WAL pushed, fetched, listed and removed under prefixes holding each of
# those characters, one of them through a multipart upload.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_s3.sh"
setup_tmp
trap 's3_stop; cleanup_all' EXIT
s3_require_storage_tool
s3_start

# ---- the checker, checked ----
"$S3_PYTHON" "$(dirname "$0")/../s3/signature_controls.py" "$S3_BUCKET" >"$T/controls.out" 2>&1
while IFS= read -r line; do
    case $line in
    "ok - "*) ok 0 "moto: ${line#ok - }" ;;
    "not ok - "*) ok 1 "moto: ${line#not ok - }" ;;
    *) diag "$line" ;;
    esac
done <"$T/controls.out"
is "$(grep -c '^\(not \)\?ok - ' "$T/controls.out")" "11" "all eleven signature controls ran"

# why the patch exists: stock moto refuses botocore's correct signatures for such keys
stock_port=$(free_port)
"$S3_PYTHON" "$(dirname "$0")/../s3/moto_server.py" "$stock_port" "$T/stock.env" "$T/stock.log" \
    --stock-auth "$S3_BUCKET" >"$T/stock.out" 2>&1 &
stock_pid=$!
deadline=$((SECONDS + 60))
while [ ! -f "$T/stock.env" ] && [ $SECONDS -lt $deadline ] && kill -0 $stock_pid 2>/dev/null; do sleep 0.1; done
if [ -f "$T/stock.env" ]; then
    refused=$( (set -a; . "$T/stock.env"; set +a
        AWS_ACCESS_KEY_ID=$MOTO_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY=$MOTO_SECRET_ACCESS_KEY \
        AWS_ENDPOINT_URL="http://127.0.0.1:$stock_port" \
        "$S3_PYTHON" "$(dirname "$0")/../s3/signature_controls.py" "$S3_BUCKET" 2>&1) | grep -c '^not ok')
    diag "stock moto (no raw-target patch) fails $refused of the 11 controls"
fi
kill $stock_pid 2>/dev/null

# ---- pgdirect against it ----
seg=000000010000000000000001
wal_segment_file "$seg" "$T/$seg"
for prefix in "a b" "a+b" "é" "a&b" "a%b" "a=b"; do
    repo="s3://$S3_BUCKET/wal $prefix"
    out=$(pgd wal-push --repo "$repo" "$T/$seg" 2>&1)
    ok $? "wal-push under prefix \"wal $prefix\" is accepted"
    [ -n "$out" ] && diag "$out"
    rm -f "$T/fetched"
    pgd wal-fetch --repo "$repo" "$seg" "$T/fetched" 2>&1
    ok $? "wal-fetch under \"wal $prefix\" is accepted"
    cmp -s "$T/$seg" "$T/fetched"
    ok $? "and returns the segment byte-identical"
    out=$(pgd wal-push --repo "$repo" "$T/$seg" 2>&1)
    like "$out" "already archived with the same content" \
        "pushing it again under \"wal $prefix\" finds it (HEAD) and compares (GET)"
    is "$("$PGD_STORAGE" "$repo" list wal/00000001 2>&1)" "$seg.lz4 $("$PGD_STORAGE" "$repo" get "wal/00000001/$seg.lz4" | wc -c)" \
        "ListObjectsV2 under \"wal $prefix\" shows it with its size"
    "$PGD_STORAGE" "$repo" put "backups/x&y.json" </dev/null &&
        "$PGD_STORAGE" "$repo" rm-many "wal/00000001/$seg.lz4" "backups/x&y.json"
    ok $? "DeleteObjects under \"wal $prefix\" (a key with '&' among them) succeeds"
    is "$("$PGD_STORAGE" "$repo" exists "wal/00000001/$seg.lz4") $("$PGD_STORAGE" "$repo" exists "backups/x&y.json")" \
        "no no" "and both objects are gone"
done

# a multipart upload (16 MiB in 5 MiB parts) and ranged GETs under the worst prefix
seg=00000001000000000000000B
wal_segment_file "$seg" "$T/$seg"
repo="s3://$S3_BUCKET/clu ster+é&1 100%=x"
pgd wal-push --repo "$repo" --compression none --s3-part-size 5MiB "$T/$seg"
ok $? "a 16 MiB segment goes up in parts under \"clu ster+é&1 100%=x\""
is "$(grep -F "PUT /$S3_BUCKET/clu%20ster%2B%C3%A9%261%20100%25%3Dx/wal/00000001/$seg?partNumber=" "$S3_LOG" |
      grep -c ' 200$')" "4" "in four parts, each signed once and accepted"
pgd wal-fetch --repo "$repo" --download-concurrency 3 "$seg" "$T/fetched16"
cmp -s "$T/$seg" "$T/fetched16"
ok $? "and comes back byte-identical through ranged GETs"
done_testing
