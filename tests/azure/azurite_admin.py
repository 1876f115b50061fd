#!/usr/bin/env python3
"""azurite_admin.py - what the Azure tests do to Azurite besides pgdirect's own
requests, signed with Shared Key by this independent implementation (Python's
hmac and base64, written from Microsoft's "Authorize with Shared Key" page):

    azurite_admin.py ENDPOINT ACCOUNT KEY create-container NAME
    azurite_admin.py ENDPOINT ACCOUNT KEY uncommitted CONTAINER PREFIX
        prints the names of blobs that have uncommitted blocks only
    azurite_admin.py ENDPOINT ACCOUNT KEY status METHOD PATH
        prints the HTTP status of one signed request (PATH: /container/blob)
    azurite_admin.py ENDPOINT ACCOUNT KEY sas PERMISSIONS
        prints an account SAS token for the blob service (version 2020-12-06
        and later's string to sign), valid until 2099, e.g. PERMISSIONS rwdl

ENDPOINT is Azurite's path-style one, http://127.0.0.1:PORT/ACCOUNT. Exits 1
with the answer on a failure it does not expect.
"""
import base64
import email.utils
import hashlib
import hmac
import sys
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET

VERSION = "2021-12-02"


def sign(method, url, account, key, headers, length):
    u = urllib.parse.urlsplit(url)
    std = ["content-encoding", "content-language", "content-length", "content-md5",
           "content-type", "date", "if-modified-since", "if-match", "if-none-match",
           "if-unmodified-since", "range"]
    low = {k.lower(): v for k, v in headers.items()}
    lines = [method]
    for h in std:
        if h == "content-length":
            lines.append(str(length) if length else "")
        else:
            lines.append(low.get(h, ""))
    ms = sorted((k, v) for k, v in low.items() if k.startswith("x-ms-"))
    text = "\n".join(lines) + "\n" + "".join(f"{k}:{v}\n" for k, v in ms)
    text += f"/{account}{u.path}"
    q = urllib.parse.parse_qs(u.query, keep_blank_values=True)
    for k in sorted(q):
        text += f"\n{k.lower()}:{','.join(sorted(q[k]))}"
    mac = hmac.new(base64.b64decode(key), text.encode(), hashlib.sha256).digest()
    return f"SharedKey {account}:{base64.b64encode(mac).decode()}"


def request(endpoint, account, key, method, path, query="", body=b""):
    url = endpoint + path + (("?" + query) if query else "")
    headers = {"x-ms-date": email.utils.formatdate(usegmt=True), "x-ms-version": VERSION}
    if method == "PUT":
        headers["Content-Type"] = "application/octet-stream"  # urllib would add its own
    headers["Authorization"] = sign(method, url, account, key, headers, len(body))
    req = urllib.request.Request(url, data=body if method == "PUT" else None, method=method,
                                 headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def main(argv):
    endpoint, account, key, op = argv[1:5]
    if op == "create-container":
        st, body = request(endpoint, account, key, "PUT", "/" + argv[5], "restype=container")
        if st not in (201, 409):
            sys.exit(f"create-container: HTTP {st}: {body[:300]!r}")
    elif op == "uncommitted":
        container, prefix = argv[5], argv[6]
        marker = ""
        while True:
            q = "restype=container&comp=list&include=uncommittedblobs&prefix=" + \
                urllib.parse.quote(prefix, safe="") + ("&marker=" + urllib.parse.quote(marker) if marker else "")
            st, body = request(endpoint, account, key, "GET", "/" + container, q)
            if st != 200:
                sys.exit(f"uncommitted: HTTP {st}: {body[:300]!r}")
            root = ET.fromstring(body)
            for b in root.iter("Blob"):
                props = b.find("Properties")
                length = props.findtext("Content-Length") if props is not None else None
                print(b.findtext("Name"), length)
            marker = root.findtext("NextMarker") or ""
            if not marker:
                break
    elif op == "status":
        st, _ = request(endpoint, account, key, argv[5], argv[6])
        print(st)
    elif op == "sas":
        perms, expiry = argv[5], "2099-01-01T00:00:00Z"
        text = "\n".join([account, perms, "b", "sco", "", expiry, "", "https,http", VERSION, "", ""])
        sig = base64.b64encode(hmac.new(base64.b64decode(key), text.encode(), hashlib.sha256).digest())
        print(urllib.parse.urlencode({"sv": VERSION, "ss": "b", "srt": "sco", "sp": perms,
                                      "se": expiry, "spr": "https,http", "sig": sig.decode()}))
    else:
        sys.exit(f"unknown operation {op}")


if __name__ == "__main__":
    main(sys.argv)
