#!/usr/bin/env python3
"""fault_proxy.py - a loopback HTTP/1.1 proxy between pgdirect and an S3
server that injects, request by request, the failures object stores produce,
and records what it did to each request.

Every request on every client connection is parsed (keep-alive,
Expect: 100-continue, Content-Length and chunked bodies) and matched against
the rules. A request no rule fires on is forwarded to the upstream server over
an upstream connection of its own, and the response is parsed to its end
(Content-Length, chunked, none for HEAD, 1xx, 204 and 304) and relayed. A
fault therefore always lands on the request it was meant for, however the
client reuses its connections: deciding once per connection and then piping
bytes, as the first version of this proxy did, let every keep-alive request
after the first one through untouched.

Each request is logged before its client sees any answer, so once a client
command has exited the log holds every request it made.

Usage:
    fault_proxy.py serve --upstream PORT --log FILE --port-file FILE [--rules FILE]
        listen on 127.0.0.1 on a port the kernel picks, written to --port-file
    fault_proxy.py rules PORT JSON
        replace the running proxy's rules (their counts start again from zero)
    fault_proxy.py count LOG SINCE [FIELD=VALUE | FIELD~REGEX]...
        how many logged requests with seq > SINCE match every filter
    fault_proxy.py last-seq LOG
        the highest seq logged so far (0 for none)
    fault_proxy.py show LOG SINCE
        the logged requests with seq > SINCE, one short line each

Rules are a JSON list, tried in order for every request; the first rule that
is due fires, and no rule fires on a request more than once.
    {"method": "PUT", "path": "/part_", "query": "partNumber=", "fault": "reset",
     "from": 3, "times": 2}
  method  exact match (default: any method)
  path    regex searched in the request path, as sent (default: any path)
  query   regex searched in the query string, as sent (default: any query)
  from    fire from the rule's Nth matching request on (default 1)
  times   fire on at most this many requests (default: no limit)
  nth     the same as "from": N, "times": 1
  fault   "503"    read the request, answer 503 SlowDown with S3's XML body
          "500"    read the request, answer 500 InternalError with S3's XML body
          "reset"  read "after" bytes of the body (default: half of it, at most
                   64 KiB), then reset the connection (RST)
          "stall"  read the request and never answer; the connection is closed
                   when the client gives up on it
          "lost"   forward the request, so the server applies it, then reset
                   the connection instead of relaying the answer
  after   for "reset": body bytes to read first
A rule counts every request that matches its method, path and query, whether
or not it fires on it, so "from": 3 means the third matching request whatever
happened to the first two.

Log: one JSON object a line:
  seq      request number over the proxy's life, in order of arrival
  conn     client connection number; on_conn: the request's place on it
  method, path, query
  rule     index of the rule that fired, or null
  fault    the fault applied, or "pass"
  status   the status the client was answered (upstream's, or the injected
           one), or null when it got none
  body     request body bytes the proxy read
  error    what went wrong, when something did (upstream unreachable, the
           client closed mid-request)
  upstream_status  for "lost": what the server answered, that the client never saw

Requests to /__proxy/... are the proxy's own control requests (no S3 bucket
name can start with "_"): PUT /__proxy/rules replaces the rules, GET
/__proxy/rules shows them with their counts. They are not logged.
Binds to 127.0.0.1 only; exits when the process that started it does.
Python 3 standard library only.
"""
import argparse
import json
import os
import re
import socket
import struct
import sys
import threading
import time
import urllib.error
import urllib.request

HOST = "127.0.0.1"
HEAD_MAX = 64 * 1024            # a request or response head larger than this is refused
RECV_SIZE = 64 * 1024
RESET_AFTER_MAX = 64 * 1024     # default bytes read before a reset
UPSTREAM_TIMEOUT_S = 300        # an upstream that takes longer is reported as failed
CONTROL_TIMEOUT_S = 60
PARENT_POLL_S = 1.0
LISTEN_BACKLOG = 128
CONTROL_PREFIX = "/__proxy/"
FAULTS = ("503", "500", "reset", "stall", "lost")
RULE_KEYS = {"method", "path", "query", "from", "times", "nth", "fault", "after"}
S3_ERRORS = {
    "503": (b"Slow Down", b"SlowDown", b"Please reduce your request rate."),
    "500": (b"Internal Server Error", b"InternalError",
            b"We encountered an internal error. Please try again."),
}


class PeerGone(Exception):
    """The peer closed its connection before a message ended."""


class Conn:
    """A socket with a read buffer: HTTP heads, sized reads, chunked bodies."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def fill(self):
        data = self.sock.recv(RECV_SIZE)
        if not data:
            raise PeerGone("connection closed")
        self.buf += data

    def read_head(self):
        """The head up to and including the blank line; None at a clean end of stream."""
        while b"\r\n\r\n" not in self.buf:
            if len(self.buf) > HEAD_MAX:
                raise PeerGone("head larger than %d bytes" % HEAD_MAX)
            try:
                self.fill()
            except PeerGone:
                if self.buf:
                    raise
                return None
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        return head + b"\r\n\r\n"

    def read_exact(self, n):
        while len(self.buf) < n:
            self.fill()
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def read_line(self):
        while b"\r\n" not in self.buf:
            if len(self.buf) > HEAD_MAX:
                raise PeerGone("line larger than %d bytes" % HEAD_MAX)
            self.fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line + b"\r\n"

    def read_chunked(self):
        """A chunked body, raw (sizes, extensions and trailers as sent)."""
        out = []
        while True:
            line = self.read_line()
            out.append(line)
            size = int(line.split(b";", 1)[0].strip(), 16)
            if size == 0:
                break
            out.append(self.read_exact(size + 2))
        while True:  # trailers, up to the blank line
            line = self.read_line()
            out.append(line)
            if line == b"\r\n":
                return b"".join(out)

    def read_to_end(self):
        while True:
            try:
                self.fill()
            except PeerGone:
                data, self.buf = self.buf, b""
                return data

    def read_some(self, n):
        """Up to n bytes, fewer if the peer stops sending."""
        while len(self.buf) < n:
            try:
                self.fill()
            except PeerGone:
                break
        data, self.buf = self.buf[:n], self.buf[n:]
        return data


class Message:
    """A parsed HTTP head: the first line's words and the headers."""

    def __init__(self, raw):
        self.raw = raw
        lines = raw.decode("latin-1").split("\r\n")
        self.first = lines[0].split(" ", 2)
        self.headers = {}
        for line in lines[1:]:
            if ":" in line:
                name, value = line.split(":", 1)
                self.headers.setdefault(name.strip().lower(), []).append(value.strip())

    def header(self, name):
        values = self.headers.get(name)
        return values[-1] if values else None

    def tokens(self, name):
        return {t.strip().lower() for v in self.headers.get(name, []) for t in v.split(",")}

    def chunked(self):
        codings = [t.strip().lower() for v in self.headers.get("transfer-encoding", [])
                   for t in v.split(",")]
        return bool(codings) and codings[-1] == "chunked"

    def content_length(self):
        value = self.header("content-length")
        return int(value) if value is not None else None


class Proxy:
    """Rules, their counts, and the log; shared by every connection."""

    def __init__(self, upstream, log_path):
        self.upstream = upstream
        self.lock = threading.Lock()
        self.rules = []
        self.seq = 0
        self.conns = 0
        self.log_file = open(log_path, "a", encoding="utf-8")

    def set_rules(self, rules):
        checked = [check_rule(i, r) for i, r in enumerate(rules)]
        with self.lock:
            self.rules = checked

    def show_rules(self):
        with self.lock:
            return [dict(r["spec"], hits=r["hits"], fired=r["fired"]) for r in self.rules]

    def next_conn(self):
        with self.lock:
            self.conns += 1
            return self.conns

    def decide(self, method, path, query):
        """Number this request and pick the rule that fires on it (or None)."""
        with self.lock:
            self.seq += 1
            chosen = None
            for index, rule in enumerate(self.rules):
                if not rule_matches(rule, method, path, query):
                    continue
                rule["hits"] += 1
                due = rule["hits"] >= rule["from"] and (
                    rule["times"] is None or rule["fired"] < rule["times"])
                if due and chosen is None:
                    rule["fired"] += 1
                    chosen = (index, rule)
            return self.seq, chosen

    def log(self, record):
        with self.lock:
            self.log_file.write(json.dumps(record, sort_keys=True) + "\n")
            self.log_file.flush()


def check_rule(index, spec):
    """Validate one rule and give it its counters; ValueError says what is wrong."""
    if not isinstance(spec, dict):
        raise ValueError("rule %d is not an object" % index)
    unknown = set(spec) - RULE_KEYS
    if unknown:
        raise ValueError("rule %d: unknown key %s" % (index, ", ".join(sorted(unknown))))
    if spec.get("fault") not in FAULTS:
        raise ValueError("rule %d: fault must be one of %s" % (index, ", ".join(FAULTS)))
    for key in ("from", "times", "nth", "after"):
        least = 0 if key == "after" else 1
        if key in spec and (not isinstance(spec[key], int) or spec[key] < least):
            raise ValueError("rule %d: %s must be an integer of at least %d" % (index, key, least))
    if "nth" in spec and ("from" in spec or "times" in spec):
        raise ValueError("rule %d: nth excludes from and times" % index)
    rule = {"spec": spec, "hits": 0, "fired": 0,
            "method": spec.get("method"),
            "from": spec.get("nth", spec.get("from", 1)),
            "times": 1 if "nth" in spec else spec.get("times")}
    for key in ("path", "query"):
        try:
            rule[key] = re.compile(spec[key]) if key in spec else None
        except re.error as e:
            raise ValueError("rule %d: bad %s regex: %s" % (index, key, e))
    return rule


def rule_matches(rule, method, path, query):
    return ((rule["method"] is None or rule["method"] == method)
            and (rule["path"] is None or rule["path"].search(path))
            and (rule["query"] is None or rule["query"].search(query)))


def s3_error(fault, method, path):
    """S3's error response: the status line and the XML body it documents (none for HEAD)."""
    reason, code, message = S3_ERRORS[fault]
    body = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>' + code + b"</Code><Message>"
            + message + b"</Message><Resource>" + path.encode() + b"</Resource>"
            b"<RequestId>fault-proxy</RequestId></Error>")
    head = ("HTTP/1.1 %s %s\r\nContent-Type: application/xml\r\nContent-Length: %d\r\n\r\n"
            % (fault, reason.decode(), len(body)))
    return head.encode() + (b"" if method == "HEAD" else body)


def reset(sock):
    """Close with an RST: a zero linger time discards unsent data and aborts."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
    except OSError:
        pass


def read_request_body(client, req):
    if req.chunked():
        return client.read_chunked()
    length = req.content_length()
    return client.read_exact(length) if length else b""


def exchange_upstream(proxy, method, head, body):
    """Send one request over a new upstream connection; returns (raw response, status, close)."""
    up = Conn(socket.create_connection((HOST, proxy.upstream), timeout=UPSTREAM_TIMEOUT_S))
    try:
        up.sock.sendall(head + body)
        while True:
            raw_head = up.read_head()
            if raw_head is None:
                raise PeerGone("upstream closed without answering")
            resp = Message(raw_head)
            status = int(resp.first[1])
            if status >= 200:
                break
            # 100 Continue (we sent the body anyway) and other interim answers: skip
        close = "close" in resp.tokens("connection")
        if method == "HEAD" or status in (204, 304):
            body = b""
        elif resp.chunked():
            body = up.read_chunked()
        elif resp.content_length() is not None:
            body = up.read_exact(resp.content_length())
        else:
            body, close = up.read_to_end(), True
        return raw_head + body, status, close
    finally:
        up.sock.close()


def control(proxy, client, req, path):
    """The proxy's own endpoint: PUT/GET /__proxy/rules."""
    body = read_request_body(client, req)
    status, text = 404, "unknown control request\n"
    if path == CONTROL_PREFIX + "rules" and req.first[0] == "PUT":
        try:
            rules = json.loads(body.decode() or "[]")
            if not isinstance(rules, list):
                raise ValueError("the rules must be a JSON list")
            proxy.set_rules(rules)
            status, text = 200, "%d rules\n" % len(rules)
        except ValueError as e:
            status, text = 400, "%s\n" % e
    elif path == CONTROL_PREFIX + "rules" and req.first[0] == "GET":
        status, text = 200, json.dumps(proxy.show_rules()) + "\n"
    data = text.encode()
    client.sock.sendall(b"HTTP/1.1 %d Control\r\nContent-Type: text/plain\r\n"
                        b"Content-Length: %d\r\n\r\n" % (status, len(data)) + data)


def serve_request(proxy, client, conn_no, on_conn, req):
    """Handle one request; returns False when the client connection must close."""
    method, target, version = req.first[0], req.first[1], req.first[2] if len(req.first) > 2 else ""
    if "://" in target:  # absolute form: keep the path
        target = "/" + target.split("://", 1)[1].partition("/")[2]
    path, _, query = target.partition("?")
    if path.startswith(CONTROL_PREFIX):
        control(proxy, client, req, path)
        return True
    seq, chosen = proxy.decide(method, path, query)
    fault = chosen[1]["spec"]["fault"] if chosen else "pass"
    record = {"seq": seq, "conn": conn_no, "on_conn": on_conn, "method": method, "path": path,
              "query": query, "rule": chosen[0] if chosen else None, "fault": fault,
              "status": None, "body": 0}
    has_body = req.chunked() or (req.content_length() or 0) > 0
    if has_body and "100-continue" in req.tokens("expect"):
        client.sock.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")

    if fault == "reset":
        length = req.content_length()
        default = min(length // 2, RESET_AFTER_MAX) if length is not None else RESET_AFTER_MAX
        after = chosen[1]["spec"].get("after", default) if has_body else 0
        record["body"] = len(client.read_some(after))
        proxy.log(record)
        reset(client.sock)
        return False

    try:
        body = read_request_body(client, req)
    except (PeerGone, OSError) as e:
        record["error"] = "client closed mid-request: %s" % e
        proxy.log(record)
        return False
    record["body"] = len(body)

    if fault in S3_ERRORS:
        record["status"] = int(fault)
        proxy.log(record)
        client.sock.sendall(s3_error(fault, method, path))
        return keep_alive(req, version)
    if fault == "stall":
        proxy.log(record)
        client.read_to_end()  # until the client gives up and closes
        return False

    try:
        response, status, up_close = exchange_upstream(proxy, method, req.raw, body)
    except (OSError, PeerGone, ValueError, IndexError) as e:
        record["status"] = 502
        record["error"] = "upstream: %s" % e
        proxy.log(record)
        text = b"fault proxy: upstream failed\n"
        client.sock.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: %d\r\n"
                            b"Connection: close\r\n\r\n" % len(text) + text)
        return False
    if fault == "lost":
        proxy.log(dict(record, upstream_status=status))
        reset(client.sock)
        return False
    record["status"] = status
    proxy.log(record)
    client.sock.sendall(response)
    return keep_alive(req, version) and not up_close


def keep_alive(req, version):
    """Does the client expect the connection to stay open after this exchange?"""
    return "close" not in req.tokens("connection") and (
        version == "HTTP/1.1" or "keep-alive" in req.tokens("connection"))


def serve_connection(proxy, sock):
    client = Conn(sock)
    conn_no = proxy.next_conn()
    on_conn = 0
    try:
        while True:
            raw = client.read_head()
            if raw is None:
                break
            on_conn += 1
            if not serve_request(proxy, client, conn_no, on_conn, Message(raw)):
                break
    except (PeerGone, OSError, ValueError, IndexError):
        pass
    finally:
        try:
            sock.close()
        except OSError:
            pass


def watch_parent():
    """Exit when the process that started us is gone (a killed test leaves no proxy)."""
    parent = os.getppid()
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_S)
    os._exit(0)


def cmd_serve(args):
    proxy = Proxy(args.upstream, args.log)
    if args.rules:
        with open(args.rules, encoding="utf-8") as f:
            proxy.set_rules(json.load(f))
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind((HOST, 0))
    srv.listen(LISTEN_BACKLOG)
    tmp = args.port_file + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("%d\n" % srv.getsockname()[1])
    os.rename(tmp, args.port_file)
    threading.Thread(target=watch_parent, daemon=True).start()
    while True:
        sock, _ = srv.accept()
        threading.Thread(target=serve_connection, args=(proxy, sock), daemon=True).start()


def cmd_rules(args):
    req = urllib.request.Request("http://%s:%d%srules" % (HOST, args.port, CONTROL_PREFIX),
                                 data=args.json.encode(), method="PUT")
    try:
        with urllib.request.urlopen(req, timeout=CONTROL_TIMEOUT_S) as resp:
            resp.read()
    except urllib.error.HTTPError as e:
        sys.exit("fault_proxy: rules refused: %s" % e.read().decode().strip())
    except (OSError, urllib.error.URLError) as e:
        sys.exit("fault_proxy: could not reach the proxy on port %d: %s" % (args.port, e))


def read_log(path, since):
    records = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.endswith("\n"):
                break  # a line still being written: its request has not been answered yet
            r = json.loads(line)
            if r["seq"] > since:
                records.append(r)
    return sorted(records, key=lambda r: r["seq"])


def record_matches(record, filters):
    for f in filters:
        m = re.match(r"([a-z_]+)([=~])(.*)$", f, re.S)
        if m is None:
            sys.exit("fault_proxy: bad filter %r: expected FIELD=VALUE or FIELD~REGEX" % f)
        field, op, want = m.groups()
        value = record.get(field)
        got = "null" if value is None else str(value)
        if (op == "=" and got != want) or (op == "~" and not re.search(want, got)):
            return False
    return True


def cmd_count(args):
    print(sum(1 for r in read_log(args.log, args.since) if record_matches(r, args.filters)))


def cmd_last_seq(args):
    print(max([r["seq"] for r in read_log(args.log, 0)], default=0))


def cmd_show(args):
    for r in read_log(args.log, args.since):
        print("%d c%d.%d %s %s%s -> %s %s%s" % (
            r["seq"], r["conn"], r["on_conn"], r["method"], r["path"],
            "?" + r["query"] if r["query"] else "", r["fault"], r["status"],
            " (%s)" % r["error"] if r.get("error") else ""))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("serve")
    p.add_argument("--upstream", type=int, required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--port-file", required=True)
    p.add_argument("--rules")
    p.set_defaults(func=cmd_serve)
    p = sub.add_parser("rules")
    p.add_argument("port", type=int)
    p.add_argument("json")
    p.set_defaults(func=cmd_rules)
    p = sub.add_parser("count")
    p.add_argument("log")
    p.add_argument("since", type=int)
    p.add_argument("filters", nargs="*")
    p.set_defaults(func=cmd_count)
    p = sub.add_parser("last-seq")
    p.add_argument("log")
    p.set_defaults(func=cmd_last_seq)
    p = sub.add_parser("show")
    p.add_argument("log")
    p.add_argument("since", type=int)
    p.set_defaults(func=cmd_show)
    args = parser.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
