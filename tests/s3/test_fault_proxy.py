#!/usr/bin/env python3
"""test_fault_proxy.py - the fault proxy's own tests: HTTP/1.1 framing on both
sides (keep-alive, Expect: 100-continue, Content-Length and chunked bodies,
HEAD, 204, 304, a response that ends with its connection) and each fault
landing on exactly the request its rule names, against a small upstream
server that counts what reaches it.

    python3 tests/s3/test_fault_proxy.py    (unittest; binds 127.0.0.1 only)
"""
import hashlib
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fault_proxy  # noqa: E402

PROXY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fault_proxy.py")
START_DEADLINE_S = 30
CLIENT_TIMEOUT_S = 30
STALL_WAIT_S = 1


class Upstream(http.server.BaseHTTPRequestHandler):
    """Answers by path; every request that reaches it is counted by path."""
    protocol_version = "HTTP/1.1"
    seen = {}
    seen_lock = threading.Lock()

    def log_message(self, *args):
        pass

    def body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b""):
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length", 0)))

    def answer(self):
        data = self.body()
        with Upstream.seen_lock:
            Upstream.seen[self.path] = Upstream.seen.get(self.path, 0) + 1
        path = self.path.split("?")[0]
        if path == "/chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for part in (b"hello ", b"world"):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.write(b"0\r\nX-Trailer: yes\r\n\r\n")
        elif path == "/nocontent":
            self.send_response(204)
            self.end_headers()
        elif path == "/notmodified":
            self.send_response(304)
            self.send_header("ETag", '"x"')
            self.end_headers()
        elif path == "/untilclose":
            self.send_response(200)
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(b"the body ends with the connection")
            self.close_connection = True
        else:
            reply = hashlib.md5(data).hexdigest().encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(reply)

    do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = answer


class ProxyTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.upstream = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
        threading.Thread(target=cls.upstream.serve_forever, daemon=True).start()
        cls.dir = tempfile.mkdtemp(prefix="fault-proxy-test.")
        cls.log = os.path.join(cls.dir, "log.jsonl")
        port_file = os.path.join(cls.dir, "port")
        cls.proc = subprocess.Popen([sys.executable, PROXY, "serve", "--upstream",
                                     str(cls.upstream.server_address[1]), "--log", cls.log,
                                     "--port-file", port_file])
        deadline = time.monotonic() + START_DEADLINE_S
        while not os.path.exists(port_file):
            if time.monotonic() > deadline or cls.proc.poll() is not None:
                raise RuntimeError("the proxy did not start")
            time.sleep(0.05)
        with open(port_file) as f:
            cls.port = int(f.read())

    @classmethod
    def tearDownClass(cls):
        cls.proc.kill()
        cls.proc.wait()
        cls.upstream.shutdown()
        shutil.rmtree(cls.dir)

    def rules(self, rules):
        subprocess.run([sys.executable, PROXY, "rules", str(self.port), json.dumps(rules)],
                       check=True)
        self.mark = max([r["seq"] for r in fault_proxy.read_log(self.log, 0)], default=0)

    def logged(self):
        return fault_proxy.read_log(self.log, self.mark)

    def setUp(self):
        self.socks = []

    def tearDown(self):
        for sock in self.socks:
            sock.close()

    def connect(self):
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=CLIENT_TIMEOUT_S)
        self.socks.append(sock)
        return fault_proxy.Conn(sock)

    def request(self, conn, method, path, body=b"", headers=""):
        head = "%s %s HTTP/1.1\r\nHost: test\r\n%s" % (method, path, headers)
        if body and "chunked" not in headers:
            head += "Content-Length: %d\r\n" % len(body)
        conn.sock.sendall(head.encode() + b"\r\n" + body)

    def response(self, conn, method="GET"):
        """(status, body, headers) of the next response on conn."""
        msg = fault_proxy.Message(conn.read_head())
        status = int(msg.first[1])
        if method == "HEAD" or status < 200 or status in (204, 304):
            body = b""
        elif msg.chunked():
            body = conn.read_chunked()
        elif msg.content_length() is not None:
            body = conn.read_exact(msg.content_length())
        else:
            body = conn.read_to_end()
        return status, body, msg

    def test_keep_alive_every_request_is_decided(self):
        self.rules([{"method": "GET", "path": "^/ka$", "fault": "503", "nth": 2}])
        conn = self.connect()
        statuses = []
        for _ in range(3):
            self.request(conn, "GET", "/ka")
            statuses.append(self.response(conn)[0])
        self.assertEqual(statuses, [200, 503, 200])
        self.assertEqual(Upstream.seen.get("/ka"), 2)
        log = self.logged()
        self.assertEqual([r["fault"] for r in log], ["pass", "503", "pass"])
        self.assertEqual({r["conn"] for r in log}, {log[0]["conn"]})
        self.assertEqual([r["on_conn"] for r in log], [1, 2, 3])

    def test_bodies_arrive_intact(self):
        self.rules([])
        conn = self.connect()
        data = os.urandom(300000)
        self.request(conn, "PUT", "/cl", data)
        self.assertEqual(self.response(conn)[1], hashlib.md5(data).hexdigest().encode())
        chunked = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in (data[:1000], data[1000:]))
        self.request(conn, "PUT", "/te", chunked + b"0\r\nX-Sum: 1\r\n\r\n",
                     "Transfer-Encoding: chunked\r\n")
        self.assertEqual(self.response(conn)[1], hashlib.md5(data).hexdigest().encode())
        self.request(conn, "GET", "/chunked")
        status, body, _ = self.response(conn)
        self.assertEqual((status, body.count(b"hello "), body.endswith(b"X-Trailer: yes\r\n\r\n")),
                         (200, 1, True))

    def test_expect_100_continue(self):
        self.rules([])
        conn = self.connect()
        data = b"x" * 5000
        conn.sock.sendall(b"PUT /expect HTTP/1.1\r\nHost: test\r\nExpect: 100-continue\r\n"
                          b"Content-Length: %d\r\n\r\n" % len(data))
        self.assertEqual(self.response(conn)[0], 100)
        conn.sock.sendall(data)
        self.assertEqual(self.response(conn)[1], hashlib.md5(data).hexdigest().encode())

    def test_responses_without_body_keep_the_connection_in_step(self):
        self.rules([{"method": "HEAD", "path": "^/head503$", "fault": "503"}])
        conn = self.connect()
        for method, path, want in (("HEAD", "/head", 200), ("GET", "/nocontent", 204),
                                   ("GET", "/notmodified", 304), ("HEAD", "/head503", 503),
                                   ("GET", "/after", 200)):
            self.request(conn, method, path)
            self.assertEqual(self.response(conn, method)[0], want, path)

    def test_response_ending_with_the_connection(self):
        self.rules([])
        conn = self.connect()
        self.request(conn, "GET", "/untilclose")
        self.assertEqual(self.response(conn)[1], b"the body ends with the connection")

    def test_reset_mid_body(self):
        self.rules([{"method": "PUT", "path": "^/reset$", "fault": "reset", "times": 1}])
        conn = self.connect()
        data = os.urandom(4 * 1024 * 1024)
        with self.assertRaises((OSError, fault_proxy.PeerGone)):
            self.request(conn, "PUT", "/reset", data)
            self.response(conn)
        conn = self.connect()
        self.request(conn, "PUT", "/reset", data)
        self.assertEqual(self.response(conn)[0], 200)
        log = self.logged()
        self.assertEqual([r["fault"] for r in log], ["reset", "pass"])
        self.assertTrue(0 < log[0]["body"] < len(data))
        self.assertEqual(Upstream.seen.get("/reset"), 1)

    def test_stall_and_lost(self):
        self.rules([{"path": "^/stall$", "fault": "stall"}, {"path": "^/lost$", "fault": "lost"}])
        conn = self.connect()
        conn.sock.settimeout(STALL_WAIT_S)
        self.request(conn, "GET", "/stall")
        with self.assertRaises(socket.timeout):
            self.response(conn)
        conn = self.connect()
        self.request(conn, "PUT", "/lost", b"applied")
        with self.assertRaises((OSError, fault_proxy.PeerGone)):
            self.response(conn)
        self.assertEqual(Upstream.seen.get("/lost"), 1)
        self.assertNotIn("/stall", Upstream.seen)
        log = self.logged()
        self.assertEqual([(r["fault"], r["status"]) for r in log],
                         [("stall", None), ("lost", None)])
        self.assertEqual(log[1]["upstream_status"], 200)

    def test_counts_from_and_times(self):
        self.rules([{"method": "GET", "path": "^/n$", "fault": "500", "from": 2, "times": 2}])
        conn = self.connect()
        statuses = []
        for _ in range(5):
            self.request(conn, "GET", "/n")
            statuses.append(self.response(conn)[0])
        self.assertEqual(statuses, [200, 500, 500, 200, 200])

    def test_bad_rules_are_refused(self):
        for bad in ([{"fault": "explode"}], [{"fault": "503", "nth": 0}],
                    [{"fault": "503", "pathh": "x"}], {"fault": "503"}):
            run = subprocess.run([sys.executable, PROXY, "rules", str(self.port), json.dumps(bad)],
                                 capture_output=True, text=True)
            self.assertNotEqual(run.returncode, 0, bad)
            self.assertIn("rules refused", run.stderr)


if __name__ == "__main__":
    unittest.main()
