"""tooljail.Session against a real `tooljail serve`: calls share the jail's
/tmp and the processes a call kept, not their env or cwd; results are
tooljail.run's; Popen is patch_subprocess's; stop (and the with block's end,
and the client's end for an attached session) leaves nothing."""

import os
import subprocess
import sys
import time
import unittest

from support import Scratch, Server, need_binary, serve_supported

import tooljail


@need_binary
@unittest.skipUnless(serve_supported(), "this tooljail has no serve")
class SessionTest(unittest.TestCase):
    def setUp(self):
        self.scratch = Scratch()
        self.addCleanup(self.scratch.close)
        args = [] if self.scratch.profile is None else ["--profile", self.scratch.profile]
        self.server = Server(self.scratch.config, *args)
        self.addCleanup(self.server.stop)

    def session(self, **kw):
        return tooljail.Session(socket=self.server.socket, cwd=self.scratch.dir, **kw)

    def test_calls_share_the_jail(self):
        with self.session() as s:
            self.assertEqual(len(s.id), 32)
            r = s.run(["sh", "-c", "echo one > /tmp/f; export X=1; sleep 300 & echo started"],
                      capture_output=True, text=True, env={"CALL": "1"})
            self.assertEqual((r.returncode, r.stdout), (0, "started\n"))
            self.assertEqual(r.report.get("session", {}).get("call"), 1)
            # Wait for the kept child's exec: until then it is a copy of sh.
            kept = s.run('sleep 301 & until [ "$(cat /proc/$!/comm)" = sleep ]; do :; done',
                         shell=True, keep_running=True)
            self.assertEqual(kept.returncode, 0)
            r = s.run(["sh", "-c", 'cat /tmp/f; pwd; echo "X=$X CALL=$CALL"; ps -e -o args= | grep -c "^sleep 30"'],
                      capture_output=True, text=True)
            self.assertEqual(r.stdout, "one\n%s\nX= CALL=\n1\n" % self.scratch.dir)
            r = s.run(["pwd"], cwd="/tmp", stdout=subprocess.PIPE)
            self.assertEqual(r.stdout, b"/tmp\n")
            with self.assertRaises(subprocess.CalledProcessError) as e:
                s.run(["sh", "-c", "exit 3"], check=True)
            self.assertEqual(e.exception.returncode, 3)
            with self.assertRaises(TypeError):
                s.run(["true"], memory="1G")
            with s.popen(["sh", "-c", "cat /tmp/f; cat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE) as p:
                out, _ = p.communicate(b"piped\n")
            self.assertEqual((p.returncode, out), (0, b"one\npiped\n"))
            # Without input, the call's Popen raises what execve said, as
            # subprocess's; with input it cannot know before it is sent.
            with self.assertRaises(tooljail.CommandNotFound):
                s.popen(["no-such-program-tj"], stdin=subprocess.DEVNULL)
            with s.popen(["no-such-program-tj"], stdin=subprocess.PIPE, stderr=subprocess.DEVNULL) as p:
                p.communicate(b"")
            self.assertEqual(p.returncode, 127)
        self.assertEqual(s.result["calls"], 8)
        self.assertEqual(s.result["stopped_for"], "stop")
        self.assertFalse(_host_procs("sleep 301"), "a kept process outlived the session")
        with self.assertRaises(tooljail.JailError):
            s.run(["true"])

    def test_attached_session_ends_with_its_client(self):
        code = ("import sys, tooljail; s = tooljail.Session(socket=%r, cwd=%r); "
                "s.run(['sh', '-c', 'sleep 302 &'], keep_running=True); print(s.id, flush=True); "
                "sys.stdin.read()") % (self.server.socket, self.scratch.dir)
        env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(tooljail.__file__)))
        p = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        sid = p.stdout.readline().decode().strip()
        self.assertEqual(len(sid), 32)
        self.assertTrue(_host_procs("sleep 302"))
        p.kill()  # the client dies without stopping its session
        p.wait()
        p.stdin.close()
        p.stdout.close()
        deadline = time.monotonic() + 30
        while _host_procs("sleep 302") and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertFalse(_host_procs("sleep 302"), "the session outlived its client")

    def test_detached_session_stays(self):
        s = self.session(detach=True)
        s.run(["sh", "-c", "sleep 303 &"], keep_running=True)
        self.assertTrue(_host_procs("sleep 303"))
        res = s.stop()
        self.assertEqual(res["calls"], 1)
        self.assertFalse(_host_procs("sleep 303"))


def _host_procs(needle):
    found = []
    for pid in os.listdir("/proc"):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                if needle.encode() in f.read().replace(b"\0", b" "):
                    found.append(pid)
        except OSError:
            pass
    return found


if __name__ == "__main__":
    unittest.main()
