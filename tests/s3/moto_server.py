#!/usr/bin/env python3
"""moto_server.py - an S3 server for the integration tests that checks every
request's Signature V4 the way AWS does.

moto (https://github.com/getmoto/moto, in the machine's pyenv Python) checks
signatures once INITIAL_NO_AUTH_ACTION_COUNT requests have passed: against the
IAM access keys created through its own IAM API. This script

  1. starts moto's server in-process on 127.0.0.1:PORT, every request
     unauthenticated at first;
  2. creates, through moto's IAM API with boto3, a user "pgdirect" allowed
     s3:* and a user "denied" with no permission at all, an access key for
     each, and the buckets named on the command line;
  3. turns authentication on for every later request (moto's reset-auth:
     INITIAL_NO_AUTH_ACTION_COUNT = 0) and writes the credentials to
     ENV_FILE (shell syntax, written atomically: its presence means ready).

Two corrections make moto's checks those of S3:

  - Signatures are verified against the request target as sent. Stock moto
    re-creates the URL from the already-decoded path (werkzeug re-quotes it
    its own way), so for a key with '&', '+', '=' or '%' it rejects the
    correct signature of botocore itself, and it could accept a wrong one.
    S3 signs the path exactly as it is on the wire (each segment URI-encoded
    once by the client) and the query canonicalised from its raw pairs.
  - Conditional writes are atomic. moto checks If-None-Match and then
    writes; two concurrent requests can both pass the check. S3 lets exactly
    one win, so writes are serialised here (after their bodies are read, so
    a stalled upload does not hold up the others).

Each request is logged to LOG as "METHOD TARGET STATUS".

usage: moto_server.py PORT ENV_FILE LOG [--stock-auth] BUCKET...
--stock-auth leaves moto's own signature check in place (the controls test
shows why it is not good enough).
"""

import io
import os
import sys
import threading
import urllib.request

# before moto reads its settings
os.environ.setdefault("MOTO_ALLOW_NONEXISTENT_REGION", "true")

import boto3  # noqa: E402
from flask import request as flask_request  # noqa: E402
from moto.core.authorization import ActionAuthenticatorMixin  # noqa: E402
from moto.moto_server.threaded_moto_server import ThreadedMotoServer  # noqa: E402

HOST = "127.0.0.1"
POLICY_ALLOW_S3 = '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:*","Resource":"*"}]}'


def patch_raw_target_signatures():
    """moto verifies a signature over self.uri: give it the target as sent."""
    original = ActionAuthenticatorMixin._authenticate_and_authorize_action

    def authenticate_as_sent(self, iam_request_cls, resource="*"):
        raw = flask_request.environ.get("RAW_URI") or flask_request.environ.get("REQUEST_URI")
        if not raw:
            raise RuntimeError("moto_server.py: the WSGI server gave no RAW_URI")
        saved = self.uri
        # the authority is not signed through the URL (the Host header is)
        self.uri = "http://" + HOST + (raw if raw.startswith("/") else "/" + raw)
        try:
            return original(self, iam_request_cls, resource)
        finally:
            self.uri = saved

    ActionAuthenticatorMixin._authenticate_and_authorize_action = authenticate_as_sent


class Serialised:
    """WSGI middleware: atomic writes, and a request log."""

    def __init__(self, app, log_path):
        self.app = app
        self.write_lock = threading.Lock()
        self.log = open(log_path, "a", buffering=1)
        self.log_lock = threading.Lock()

    def __call__(self, environ, start_response):
        method = environ.get("REQUEST_METHOD", "")
        target = environ.get("RAW_URI", environ.get("PATH_INFO", ""))
        status = []

        def recording_start_response(st, headers, exc_info=None):
            status.append(st.split(" ", 1)[0])
            return start_response(st, headers, exc_info)

        length = environ.get("CONTENT_LENGTH")
        writes = method in ("PUT", "POST", "DELETE") and length is not None and length.isdigit()
        if writes:
            body = environ["wsgi.input"].read(int(length)) if int(length) > 0 else b""
            if len(body) != int(length):  # the client went away mid-body
                start_response("400 Bad Request", [("Content-Length", "0")])
                self.record(method, target, "400-incomplete-body")
                return [b""]
            environ["wsgi.input"] = io.BytesIO(body)
            with self.write_lock:
                result = list(self.app(environ, recording_start_response))
        else:
            result = self.app(environ, recording_start_response)
        self.record(method, target, status[0] if status else "?")
        return result

    def record(self, method, target, status):
        with self.log_lock:
            self.log.write(f"{method} {target} {status}\n")


def setup(endpoint, buckets):
    """Users, keys and buckets through moto's own APIs, before authentication is on."""
    session = boto3.session.Session(
        aws_access_key_id="setup", aws_secret_access_key="setup", region_name="us-east-1"
    )
    iam = session.client("iam", endpoint_url=endpoint)
    creds = {}
    for user, policy in (("pgdirect", POLICY_ALLOW_S3), ("denied", None)):
        iam.create_user(UserName=user)
        if policy:
            iam.put_user_policy(UserName=user, PolicyName="s3", PolicyDocument=policy)
        key = iam.create_access_key(UserName=user)["AccessKey"]
        creds[user] = (key["AccessKeyId"], key["SecretAccessKey"])
    s3 = session.client("s3", endpoint_url=endpoint)
    for bucket in buckets:
        s3.create_bucket(Bucket=bucket)
    # from now on every request is checked
    req = urllib.request.Request(
        endpoint + "/moto-api/reset-auth",
        data=b"0",
        method="POST",
        headers={"Content-Type": "text/plain"},  # a form body would not reach request.data
    )
    with urllib.request.urlopen(req) as r:
        r.read()
    return creds


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    stock = "--stock-auth" in sys.argv[1:]
    if len(args) < 3:
        sys.exit(__doc__)
    port, env_file, log_path, buckets = int(args[0]), args[1], args[2], args[3:]
    if not stock:
        patch_raw_target_signatures()

    server = ThreadedMotoServer(ip_address=HOST, port=port, verbose=False)
    import moto.moto_server.threaded_moto_server as tms

    real_make_server = tms.make_server
    tms.make_server = lambda host, p, app, threaded: real_make_server(
        host, p, Serialised(app, log_path), threaded
    )
    server.start()
    creds = setup(f"http://{HOST}:{port}", buckets)
    tmp = env_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(f"MOTO_ACCESS_KEY_ID={creds['pgdirect'][0]}\n")
        f.write(f"MOTO_SECRET_ACCESS_KEY={creds['pgdirect'][1]}\n")
        f.write(f"MOTO_DENIED_ACCESS_KEY_ID={creds['denied'][0]}\n")
        f.write(f"MOTO_DENIED_SECRET_ACCESS_KEY={creds['denied'][1]}\n")
    os.rename(tmp, env_file)
    threading.Event().wait()  # until killed


if __name__ == "__main__":
    main()
