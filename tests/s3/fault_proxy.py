#!/usr/bin/env python3
"""fault_proxy.py - a loopback HTTP proxy between pgdirect and s3rver that
injects the failures object stores produce, for the fault tests.

    fault_proxy.py LISTEN_PORT TARGET_PORT CONTROL_FILE

CONTROL_FILE holds one line, re-read for every connection:
    pass                  forward everything
    503 N                 answer the next N requests 503 SlowDown, then forward
    503 always            answer every request 503 SlowDown
    reset-put N           for the next N PUT requests: read part of the body, then
                          close the connection (a reset mid-part)
    stall N               for the next N requests: accept and never answer
Counters count down in the file itself, so a test can see what was used.
Binds to 127.0.0.1 only; stops when its parent test kills it.
"""
import socket
import sys
import threading

LISTEN, TARGET, CONTROL = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
lock = threading.Lock()

SLOWDOWN = (b"HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\nContent-Length: %d\r\n"
            b"Connection: close\r\n\r\n%s")
BODY = (b"<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>SlowDown</Code>"
        b"<Message>Please reduce your request rate.</Message></Error>")


def take(kind_wanted, method):
    """Return the fault to apply to this request, decrementing its counter."""
    with lock:
        try:
            words = open(CONTROL).read().split()
        except OSError:
            return None
        if not words or words[0] == "pass":
            return None
        kind = words[0]
        if kind == "reset-put" and method != b"PUT":
            return None
        if len(words) > 1 and words[1] == "always":
            return kind
        n = int(words[1]) if len(words) > 1 else 1
        if n <= 0:
            return None
        with open(CONTROL, "w") as f:
            f.write("%s %d\n" % (kind, n - 1))
        return kind


def read_head(conn):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return None, b""
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    return head + b"\r\n\r\n", rest


def pipe(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def handle(conn):
    try:
        head, rest = read_head(conn)
        if head is None:
            conn.close()
            return
        method = head.split(b" ", 1)[0]
        fault = take(None, method)
        if fault == "503":
            conn.sendall(SLOWDOWN % (len(BODY), BODY))
            conn.close()
            return
        if fault == "stall":
            threading.Event().wait(3600)
            return
        if fault == "reset-put":
            if len(rest) < 65536:
                conn.recv(65536)
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            conn.close()  # RST
            return
        up = socket.create_connection(("127.0.0.1", TARGET))
        # one request per connection keeps the fault logic simple
        head = head.replace(b"Connection: keep-alive", b"Connection: close")
        up.sendall(head + rest)
        t = threading.Thread(target=pipe, args=(conn, up), daemon=True)
        t.start()
        pipe(up, conn)
    except OSError:
        pass


def main():
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", LISTEN))
    srv.listen(64)
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=handle, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
