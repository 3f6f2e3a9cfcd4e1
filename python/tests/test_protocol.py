"""The client's side of the wire protocol against scripted servers and CLIs
that misbehave: every failure is a clear exception, never a hang."""

import base64
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import support
import tooljail
from tooljail import _transport

REPORT = {"schema": "tooljail.report/v1", "status": "exited", "exit_code": 0,
          "stdout": {"bytes": 3, "truncated": False, "text": "\ufffd\x00\ufffd"},
          "stderr": {"bytes": 0, "truncated": False, "text": ""}}


def line(obj):
    return json.dumps(obj).encode() + b"\n"


class FakeServer:
    """Answers each connection with handler(conn, request_bytes)."""

    def __init__(self, directory, handler):
        self.path = os.path.join(directory, "fake-%d.sock" % id(self))
        self.requests = []
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(self.path)
        self.sock.listen(8)
        self.handler = handler
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                data = b""
                while not data.endswith(b"\n"):
                    chunk = conn.recv(1 << 16)
                    if not chunk:
                        break
                    data += chunk
                self.requests.append(json.loads(data) if data else None)
                try:
                    self.handler(conn)
                except OSError:
                    pass

    def close(self):
        self.sock.close()
        os.unlink(self.path)


class ProtocolTest(unittest.TestCase):
    def setUp(self):
        self.scratch = support.Scratch()
        self.addCleanup(self.scratch.close)
        self.margin = _transport.MARGIN_SECONDS
        _transport.MARGIN_SECONDS = 0.5
        self.addCleanup(setattr, _transport, "MARGIN_SECONDS", self.margin)

    def serve(self, handler):
        srv = FakeServer(self.scratch.dir, handler)
        self.addCleanup(srv.close)
        return srv

    def test_stream_then_report(self):
        def handler(conn):
            conn.sendall(line({"stream": "stdout", "data": base64.b64encode(b"\xff\x00").decode()}))
            conn.sendall(line({"stream": "stderr", "data": base64.b64encode(b"e").decode()}))
            conn.sendall(line({"stream": "stdout", "data": base64.b64encode(b"\xfe").decode()}))
            conn.sendall(json.dumps(REPORT, separators=(",", ":")).encode() + b"\n")
        srv = self.serve(handler)
        r = tooljail.run(["x"], capture_output=True, input=b"in", socket=srv.path, env={"A": "1"},
                         timeout=5, memory="1M")
        self.assertEqual((r.returncode, r.stdout, r.stderr), (0, b"\xff\x00\xfe", b"e"))
        req = srv.requests[0]
        self.assertEqual(req["argv"], ["x"])
        self.assertEqual(req["workdir"], os.getcwd())
        self.assertEqual(base64.b64decode(req["stdin"]), b"in")
        self.assertEqual(req["env"], {"A": "1"})
        self.assertEqual(req["limits"], {"memory": "1M", "timeout": "5000ms"})
        self.assertIs(req["stream"], True)
        # stderr=STDOUT keeps the order of arrival.
        r = tooljail.run(["x"], stdout=tooljail.PIPE, stderr=tooljail.STDOUT, socket=srv.path)
        self.assertEqual(r.stdout, b"\xff\x00e\xfe")

    def test_output_is_the_stream(self):
        # The stream's bytes are the output, whatever text a report carries
        # (a streamed run's report has counts only; an older server's text
        # is not the bytes).
        report = dict(REPORT, stdout={"bytes": 99, "truncated": True, "text": "head[marker]tail"})

        def handler(conn):
            conn.sendall(line({"stream": "stdout", "data": base64.b64encode(b"head").decode()}))
            conn.sendall(line(report))
        srv = self.serve(handler)
        r = tooljail.run(["x"], capture_output=True, socket=srv.path)
        self.assertEqual(r.stdout, b"head")
        self.assertTrue(r.report.stdout.truncated)

    def test_error_line(self):
        srv = self.serve(lambda c: c.sendall(line({"error": {"code": 125, "message": "profile \"p\" is not served"}})))
        with self.assertRaises(tooljail.JailError) as cm:
            tooljail.run(["x"], profile="p", socket=srv.path)
        self.assertEqual((str(cm.exception), cm.exception.code, cm.exception.report),
                         ('profile "p" is not served', 125, None))

    def test_setup_error_report(self):
        report = dict(REPORT, status="setup_error", exit_code=125, reason="cgroup: no memory controller")
        srv = self.serve(lambda c: c.sendall(line(report)))
        with self.assertRaises(tooljail.JailError) as cm:
            tooljail.run(["x"], socket=srv.path)
        self.assertEqual(str(cm.exception), "cgroup: no memory controller")
        self.assertEqual(cm.exception.report.status, "setup_error")

    def test_broken_servers(self):
        cases = [
            ("closes", lambda c: None, "closed the connection"),
            ("half a line", lambda c: c.sendall(b'{"status": "exi'), "closed the connection"),
            ("garbage", lambda c: c.sendall(b"hello\n"), "not JSON"),
            ("not an object", lambda c: c.sendall(b"[1]\n"), "not an object"),
            ("unknown object", lambda c: c.sendall(b'{"what": 1}\n'), "neither"),
        ]
        for name, handler, msg in cases:
            with self.subTest(name):
                srv = self.serve(handler)
                with self.assertRaisesRegex(tooljail.JailError, msg):
                    tooljail.run(["x"], socket=srv.path, timeout=5)

    def test_server_not_there(self):
        start = time.monotonic()
        for path in (os.path.join(self.scratch.dir, "nothing"), "/no/such/dir/sock"):
            with self.subTest(path):
                with self.assertRaisesRegex(tooljail.JailError, "cannot reach the tooljail server at " + path):
                    tooljail.run(["true"], socket=path)
        # A socket file nobody listens on (a dead server's).
        dead = os.path.join(self.scratch.dir, "dead.sock")
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(dead)
        s.close()
        os.environ["TOOLJAIL_SERVER"] = dead
        try:
            with self.assertRaisesRegex(tooljail.JailError, "refused"):
                tooljail.run(["true"])
        finally:
            del os.environ["TOOLJAIL_SERVER"]
        self.assertLess(time.monotonic() - start, 5)

    @unittest.skipUnless(os.geteuid() == 0 and shutil.which("setpriv"), "needs root and setpriv for a server of another uid")
    def test_foreign_server_refused(self):
        # A socket served by neither this user nor root (anybody can create
        # /tmp/tooljail-$UID first) gets nothing: not the command, not its env.
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d, True)
        os.chmod(d, 0o777)
        path = os.path.join(d, "sock")
        got = os.path.join(d, "got")
        ready = os.path.join(d, "ready")
        # The socket file exists from bind(); "ready" only once it listens
        # (a connect between the two is refused: a busy CI host did it).
        code = ("import socket,sys\n"
                "s=socket.socket(socket.AF_UNIX);s.bind(sys.argv[1]);s.listen(1)\n"
                "open(sys.argv[3],'w').close()\n"
                "c,_=s.accept();c.settimeout(3)\n"
                "try:\n data=c.recv(65536)\nexcept Exception:\n data=b''\n"
                "open(sys.argv[2],'wb').write(data)\n")
        p = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                              sys.executable, "-c", code, path, got, ready])
        self.addCleanup(p.kill)
        deadline = time.monotonic() + 5
        while not os.path.exists(ready) and time.monotonic() < deadline:
            time.sleep(0.02)
        os.chmod(path, 0o777)
        with self.assertRaisesRegex(tooljail.JailError, "served by uid 65534, neither this user"):
            tooljail.run(["echo", "secret"], socket=path, env={"API_KEY": "sk-secret"})
        p.wait(timeout=10)
        with open(got, "rb") as f:
            self.assertEqual(f.read(), b"", "the command was sent to a foreign server")

    def test_silent_server(self):
        # Accepts, reads, never answers: the caller gets TimeoutExpired after
        # its timeout plus the margin, with no report.
        stop = threading.Event()
        self.addCleanup(stop.set)
        srv = self.serve(lambda c: stop.wait(30))
        start = time.monotonic()
        with self.assertRaises(tooljail.TimeoutExpired) as cm:
            tooljail.run(["x"], socket=srv.path, timeout=0.2, capture_output=True)
        self.assertLess(time.monotonic() - start, 3)
        self.assertIsNone(cm.exception.report)
        self.assertIn("client stopped waiting", str(cm.exception))

    def test_stuck_cli(self):
        cli = os.path.join(self.scratch.dir, "stuck-tooljail")
        with open(cli, "w") as f:
            f.write("#!/bin/sh\nexec sleep 30\n")
        os.chmod(cli, stat.S_IRWXU)
        saved = os.environ.get("TOOLJAIL_BIN")
        os.environ["TOOLJAIL_BIN"] = cli
        try:
            start = time.monotonic()
            with self.assertRaises(tooljail.TimeoutExpired):
                tooljail.run(["x"], timeout=0.2)
            self.assertLess(time.monotonic() - start, 3)
        finally:
            if saved is None:
                del os.environ["TOOLJAIL_BIN"]
            else:
                os.environ["TOOLJAIL_BIN"] = saved

    def use_cli(self, script):
        cli = os.path.join(self.scratch.config, "scripted-tooljail")
        with open(cli, "w") as f:
            f.write(script)
        os.chmod(cli, stat.S_IRWXU)
        saved = os.environ.get("TOOLJAIL_BIN")
        os.environ["TOOLJAIL_BIN"] = cli
        self.addCleanup(lambda: os.environ.pop("TOOLJAIL_BIN") if saved is None
                        else os.environ.__setitem__("TOOLJAIL_BIN", saved))

    def test_cli_report_file(self):
        # The CLI's stdout and stderr are the command's, relayed as they
        # come; the report is the file named by --report, in a private
        # directory outside the workdir, removed afterwards.
        seen = os.path.join(self.scratch.config, "seen.json")
        self.use_cli("#!%s\n" % sys.executable + """import json, os, sys
argv = sys.argv[1:]
path = argv[argv.index("--report") + 1]
json.dump({"argv": argv, "dir_mode": os.stat(os.path.dirname(path)).st_mode & 0o777,
           "stdin": sys.stdin.buffer.read().decode("latin-1")}, open(%r, "w"))
os.write(1, b"\\xff\\x00"); os.write(2, b"\\xfe"); os.write(1, b"\\r\\n")
json.dump({"status": "exited", "exit_code": 4}, open(path, "w"))
sys.exit(4)
""" % seen)
        r = tooljail.run(["x"], capture_output=True, input=b"\x01in")
        self.assertEqual((r.returncode, r.stdout, r.stderr), (4, b"\xff\x00\r\n", b"\xfe"))
        with open(seen) as f:
            got = json.load(f)
        self.assertEqual(got["stdin"], "\x01in")
        self.assertEqual(got["dir_mode"], 0o700)
        argv = got["argv"]
        self.assertEqual(argv[:2], ["run", "--quiet"])
        report = argv[argv.index("--report") + 1]
        self.assertFalse(report.startswith(self.scratch.dir + "/"), report)
        self.assertFalse(os.path.exists(os.path.dirname(report)))
        self.assertEqual(argv[argv.index("--") + 1:], ["x"])

    def test_cli_without_report(self):
        cli = os.path.join(self.scratch.dir, "bad-tooljail")
        with open(cli, "w") as f:
            f.write("#!/bin/sh\necho 'tooljail: something went wrong; do this' >&2\nexit 2\n")
        os.chmod(cli, stat.S_IRWXU)
        saved = os.environ.get("TOOLJAIL_BIN")
        os.environ["TOOLJAIL_BIN"] = cli
        try:
            with self.assertRaises(tooljail.JailError) as cm:
                tooljail.run(["x"], capture_output=True)
            self.assertEqual((str(cm.exception), cm.exception.code), ("something went wrong; do this", 2))
        finally:
            if saved is None:
                del os.environ["TOOLJAIL_BIN"]
            else:
                os.environ["TOOLJAIL_BIN"] = saved


if __name__ == "__main__":
    unittest.main()
