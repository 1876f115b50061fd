#!/usr/bin/env bash
# Our Signature V4 against an independent implementation: botocore (Debian's
# python3-botocore) signs the same S3 requests, and the Authorization headers
# must be identical. s3rver does check signatures, but only with its own
# fixed credentials; this covers other keys, regions, session tokens,
# queries, ranges and odd key names.
. "$(dirname "$0")/lib.sh"
[ -n "${PGD_SIGV4:-}" ] || bail "PGD_SIGV4 must point at the pgd-sigv4 helper"

# CASE: method|path|query|extra headers (name=value;...)|payload hash|region|access|secret|token
cases=(
  "GET|/bucket/backups/20261129T215959F.done.json||||eu-west-1|AKIDTEST1|secret/with+chars|"
  "PUT|/bucket/wal/00000001/000000010000000000000002.lz4||content-md5=1B2M2Y8AsgTpgAmY7PhCfg==|UNSIGNED-PAYLOAD|us-east-1|AKIDTEST2|s3cr3t|"
  "GET|/bucket/part_0001.tar.lz4||range=bytes=8388608-16777215||ap-southeast-2|AKIDTEST3|x|"
  "GET|/bucket|list-type=2&delimiter=%2F&prefix=cl%2Fbackups%2F&continuation-token=a%2Bb%3D|||us-east-1|AKIDTEST4|y|"
  "POST|/bucket/key with spaces & symbols(1).tar|uploads|x-amz-storage-class=STANDARD_IA;x-amz-server-side-encryption=AES256||us-west-2|AKIDTEST5|z|"
  "PUT|/bucket/obj|partNumber=3&uploadId=VXBsb2FkIElE~x.y_z-|content-md5=abc=|UNSIGNED-PAYLOAD|us-east-1|AKIDTEST6|w|FwoGZXIvYXdzEXAMPLETOKEN//+=="
)
DATE=20261129T215959Z
for c in "${cases[@]}"; do
    IFS='|' read -r method path query extra hash region access secret token <<<"$c"
    [ -n "$hash" ] || hash=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
    host=s3.$region.amazonaws.com
    args=(host "$host" x-amz-date "$DATE" x-amz-content-sha256 "$hash")
    [ -n "$token" ] && args+=(x-amz-security-token "$token")
    IFS=';' read -ra kvs <<<"$extra"
    for kv in "${kvs[@]}"; do [ -n "$kv" ] && args+=("${kv%%=*}" "${kv#*=}"); done
    ours=$("$PGD_SIGV4" "$method" "$path" "$query" "$DATE" "$hash" "$region" "$access" "$secret" "${args[@]}")
    theirs=$(/usr/bin/python3 - "$method" "$host" "$path" "$query" "$DATE" "$hash" "$region" "$access" "$secret" "$token" "$extra" <<'PY'
import datetime, sys, urllib.parse
import botocore.auth
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
method, host, path, query, date, phash, region, access, secret, token, extra = sys.argv[1:12]
url = "https://" + host + urllib.parse.quote(path, safe="/~") + ("?" + query if query else "")
req = AWSRequest(method=method, url=url, data=b"")
req.headers["X-Amz-Date"] = date
req.headers["X-Amz-Content-SHA256"] = phash
for kv in [x for x in extra.split(";") if x]:
    k, v = kv.split("=", 1)
    req.headers[k] = v
class Frozen(datetime.datetime):
    """botocore signs at utcnow(): pin it to the request's date"""
    @classmethod
    def utcnow(cls):
        return cls.strptime(date, "%Y%m%dT%H%M%SZ")
botocore.auth.datetime.datetime = Frozen
if phash == "UNSIGNED-PAYLOAD":  # what pgdirect sends with Content-MD5 for bodies
    req.context["payload_signing_enabled"] = False
auth = S3SigV4Auth(Credentials(access, secret, token or None), "s3", region)
auth.add_auth(req)
assert req.headers["X-Amz-Date"] == date
assert req.headers["X-Amz-Content-SHA256"] == phash
print(req.headers["Authorization"])
PY
)
    is "$ours" "$theirs" "$method $path${query:+?$query}: same Authorization as botocore"
done
done_testing
