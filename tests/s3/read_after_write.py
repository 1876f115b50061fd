#!/usr/bin/env python3
"""read_after_write.py PORT BUCKET [ROUNDS]: how often a GET sees part of an
object that a slow PUT is still sending, on an S3 server at 127.0.0.1:PORT
that does not check signatures (s3rver). For each round: one thread PUTs 4 MiB
in 16 pieces, 40 ms apart; the main thread polls HEAD until the object is
there, then GETs it. Prints "short reads: N of ROUNDS"; S3's read-after-write
consistency means N is 0 (the GET returns the whole object, or the HEAD sees
nothing until the PUT is done)."""
import http.client
import os
import sys
import threading
import time

port, bucket = int(sys.argv[1]), sys.argv[2]
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
body = os.urandom(4 << 20)
piece = len(body) // 16


def request(method, target):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request(method, target)
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, data


def slow_put(target):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.putrequest("PUT", target)
    conn.putheader("Content-Length", str(len(body)))
    conn.endheaders()
    for off in range(0, len(body), piece):
        conn.send(body[off:off + piece])
        time.sleep(0.04)
    status = conn.getresponse().status
    conn.close()
    if status != 200:
        sys.exit("PUT %s: HTTP %d" % (target, status))


short = 0
for i in range(rounds):
    target = "/%s/read-after-write/%d-%d" % (bucket, os.getpid(), i)
    writer = threading.Thread(target=slow_put, args=(target,))
    writer.start()
    deadline = time.monotonic() + 30
    while request("HEAD", target)[0] != 200:
        if time.monotonic() > deadline:
            sys.exit("HEAD %s: never 200" % target)
        time.sleep(0.005)
    status, data = request("GET", target)
    writer.join()
    if status != 200 or data != body:
        short += 1
    request("DELETE", target)
print("short reads: %d of %d" % (short, rounds))
