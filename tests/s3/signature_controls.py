#!/usr/bin/env python3
"""signature_controls.py - is the S3 server's signature check trustworthy?

Against the server at AWS_ENDPOINT_URL (moto_server.py), with the access
key in AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY and a user with no
permission in MOTO_DENIED_ACCESS_KEY_ID / MOTO_DENIED_SECRET_ACCESS_KEY,
prints one TAP-like line per control, "ok - ..." or "not ok - ...":

positive controls (botocore's own requests must pass)
  - PUT, HEAD, GET, ListObjectsV2, DELETE of keys with a space, '+', 'e
    acute', '&', '%', '='
  - a request signed by hand over the target exactly as sent
negative controls (each must be refused)
  - a wrong secret key: SignatureDoesNotMatch
  - the same hand-made request, signed over the target encoded twice (what
    pgdirect once did) but sent encoded once: SignatureDoesNotMatch
  - a user without permission: AccessDenied

usage: signature_controls.py BUCKET
"""

import datetime
import http.client
import os
import sys
import urllib.parse

import boto3
import botocore.auth
import botocore.config
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

KEYS = ["ctl a b", "ctl a+b", "ctl \u00e9", "ctl a&b", "ctl a%b", "ctl a=b", "clu ster+\u00e9&1/x=y%z.lz4"]


def report(ok, what):
    print(("ok" if ok else "not ok") + " - " + what, flush=True)


def client(access, secret):
    return boto3.client(
        "s3",
        endpoint_url=os.environ["AWS_ENDPOINT_URL"],
        region_name="us-east-1",
        aws_access_key_id=access,
        aws_secret_access_key=secret,
        config=botocore.config.Config(
            s3={"addressing_style": "path"}, retries={"max_attempts": 1}
        ),
    )


def error_code(call):
    try:
        call()
    except ClientError as e:
        return e.response["Error"]["Code"] or str(e.response["ResponseMetadata"]["HTTPStatusCode"])
    return None


def positive(s3, bucket):
    for key in KEYS:
        try:
            s3.put_object(Bucket=bucket, Key=key, Body=b"control")
            s3.head_object(Bucket=bucket, Key=key)
            body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
            listed = s3.list_objects_v2(Bucket=bucket, Prefix=key)
            keys = [c["Key"] for c in listed.get("Contents", [])]
            s3.delete_object(Bucket=bucket, Key=key)
            ok = body == b"control" and key in keys
        except ClientError as e:
            ok, keys = False, str(e)
        report(ok, "botocore's own PUT/HEAD/GET/LIST/DELETE of %r are accepted" % key)


def hand_signed(bucket, key, signed_target, sent_target):
    """A PUT signed by botocore over signed_target, sent to sent_target: the HTTP status."""
    endpoint = urllib.parse.urlsplit(os.environ["AWS_ENDPOINT_URL"])
    host = endpoint.netloc
    req = AWSRequest(method="PUT", url="http://%s%s" % (host, signed_target), data=b"hand")
    req.headers["X-Amz-Content-SHA256"] = "UNSIGNED-PAYLOAD"
    req.context["client_config"] = botocore.config.Config(s3={"payload_signing_enabled": False})
    creds = Credentials(os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"])
    S3SigV4Auth(creds, "s3", "us-east-1").add_auth(req)
    conn = http.client.HTTPConnection(endpoint.hostname, endpoint.port, timeout=30)
    headers = dict(req.headers)
    headers["Host"] = host
    conn.request("PUT", sent_target, body=b"hand", headers=headers)
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    return resp.status, body


def negative(bucket):
    s3 = client(os.environ["AWS_ACCESS_KEY_ID"], "not-the-secret")
    code = error_code(lambda: s3.put_object(Bucket=bucket, Key="ctl a+b", Body=b"x"))
    report(code == "SignatureDoesNotMatch", "a wrong secret key is refused (%s)" % code)

    key = "ctl hand a+b&c"
    once = "/%s/%s" % (bucket, urllib.parse.quote(key, safe="/~"))
    twice = "/%s/%s" % (bucket, urllib.parse.quote(urllib.parse.quote(key, safe="/~"), safe="/~"))
    status, _ = hand_signed(bucket, key, once, once)
    report(status == 200, "a request signed over the target as sent is accepted (HTTP %d)" % status)
    status, body = hand_signed(bucket, key, twice, once)
    report(
        status == 403 and b"SignatureDoesNotMatch" in body,
        "the same request signed over the target encoded twice is refused (HTTP %d)" % status,
    )

    denied = client(os.environ["MOTO_DENIED_ACCESS_KEY_ID"], os.environ["MOTO_DENIED_SECRET_ACCESS_KEY"])
    code = error_code(lambda: denied.put_object(Bucket=bucket, Key="ctl denied", Body=b"x"))
    report(code == "AccessDenied", "a user without permission is refused (%s)" % code)


def main():
    bucket = sys.argv[1]
    positive(client(os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"]), bucket)
    negative(bucket)


if __name__ == "__main__":
    main()
