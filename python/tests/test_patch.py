import asyncio
import multiprocessing
import os
import pty
import signal
import subprocess
import sys
import threading
import time
import unittest

import support
import tooljail
from tooljail import _patch

ORIGINALS = {(subprocess, n): getattr(subprocess, n)
             for n in ("run", "call", "check_call", "check_output", "getoutput", "Popen")}
ORIGINALS.update({(os, n): getattr(os, n) for n in ("system", "popen", "spawnv", "spawnl", "posix_spawn",
                                                    "posix_spawnp", "execv", "execve", "execvp")})
ORIGINALS[(pty, "spawn")] = pty.spawn
SECRET = "sk-secret-123"


def restored(test):
    for (module, name), fn in ORIGINALS.items():
        test.assertIs(getattr(module, name), fn, "%s.%s" % (module.__name__, name))


def patched(test):
    test.assertIs(subprocess.Popen, tooljail.JailedPopen)
    test.assertIsNot(os.system, ORIGINALS[(os, "system")])
    for name in ("spawnv", "posix_spawn", "execv"):
        test.assertIsNot(getattr(os, name), ORIGINALS[(os, name)], name)
    # What is built on Popen stays subprocess's own.
    for name in ("run", "call", "check_call", "check_output", "getoutput"):
        test.assertIs(getattr(subprocess, name), ORIGINALS[(subprocess, name)], name)


class PatchOptionsTest(unittest.TestCase):
    def test_undo(self):
        undo = tooljail.patch_subprocess()
        patched(self)
        undo()
        restored(self)
        with tooljail.patch_subprocess() as undo2:
            patched(self)
        restored(self)
        undo2()  # a second undo does nothing
        restored(self)

    def test_options(self):
        with self.assertRaisesRegex(TypeError, "unexpected option"):
            tooljail.patch_subprocess(capture_output=True)
        with self.assertRaisesRegex(TypeError, "allow must be a callable"):
            tooljail.patch_subprocess(allow=True)
        restored(self)
        with tooljail.patch_subprocess(profile="strict", memory="64M", cpus=0.5, pids=8, network="none"):
            self.assertEqual(_patch._active().flags, ("--profile", "strict", "--memory", "64M",
                                                      "--cpus", "0.5", "--pids", "8", "--net", "none"))
        restored(self)
        with tooljail.patch_subprocess(toolchain=["auto", "/opt/go"]):
            self.assertEqual(_patch._active().flags, ("--toolchain", "auto", "--toolchain", "/opt/go"))
        restored(self)
        with self.assertRaisesRegex(ValueError, "absolute path"):
            tooljail.patch_subprocess(toolchain="go")
        restored(self)

    def test_nesting_out_of_order(self):
        u1 = tooljail.patch_subprocess(profile="one")
        u2 = tooljail.patch_subprocess(profile="two")
        self.assertEqual(_patch._active().flags, ("--profile", "two"))
        u1()  # the outer one first
        patched(self)
        self.assertEqual(_patch._active().flags, ("--profile", "two"))
        u2()
        restored(self)
        self.assertIsNone(_patch._active())

    def test_threads(self):
        # Two threads, each in its own patch: each sees its own options, and
        # subprocess and os get back their own functions once both are out.
        barrier = threading.Barrier(2, timeout=10)
        seen, errors = {}, []

        def worker(name):
            try:
                with tooljail.patch_subprocess(profile=name):
                    barrier.wait()
                    seen[name] = _patch._active().flags
                    barrier.wait()
            except Exception as e:  # reported below
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(n,)) for n in ("a", "b")]
        for t in threads:
            t.start()
        for t in threads:
            t.join(15)
        self.assertEqual(errors, [])
        self.assertEqual(seen, {"a": ("--profile", "a"), "b": ("--profile", "b")})
        restored(self)

    def test_isinstance(self):
        with tooljail.patch_subprocess():
            self.assertTrue(issubclass(tooljail.JailedPopen, ORIGINALS[(subprocess, "Popen")]))
            with tooljail.unjailed():
                p = subprocess.Popen(["true"])
            p.wait()
            self.assertIs(type(p), ORIGINALS[(subprocess, "Popen")])
            self.assertIsInstance(p, subprocess.Popen)  # the patched name still recognises it
        restored(self)

    def test_server_rule(self):
        # A server only when stdin cannot deadlock (run --server reads stdin
        # to its end before it sends the run).
        cfg = _patch._Config((), "/some/sock", None, 0)
        self.assertEqual(_patch._server(cfg, subprocess.DEVNULL), "/some/sock")
        self.assertIsNone(_patch._server(cfg, subprocess.PIPE))
        self.assertIsNone(_patch._server(cfg, 0))
        with open(os.devnull) as null:
            saved = os.dup(0)
            try:
                os.dup2(null.fileno(), 0)
                self.assertEqual(_patch._server(cfg, None), "/some/sock")
            finally:
                os.dup2(saved, 0)
                os.close(saved)


def _fork_child(queue):
    queue.put(subprocess.check_output(["id", "-u"]))


@support.need_binary
class PatchRunTest(unittest.TestCase):
    """A fake agent: a secret in its environment, its tools spawned every
    way Python has; each must run as the jail's user without the secret, or
    be refused with nothing run on the host."""

    def setUp(self):
        self.scratch = support.Scratch()
        self.addCleanup(self.scratch.close)
        saved = os.environ.get("FAKE_API_KEY")
        os.environ["FAKE_API_KEY"] = SECRET
        self.addCleanup(lambda: os.environ.pop("FAKE_API_KEY") if saved is None
                        else os.environ.__setitem__("FAKE_API_KEY", saved))
        self.kw = self.scratch.kw
        self.marker = os.path.join(self.scratch.dir, "marker")

    def check_jailed(self, out):
        if isinstance(out, bytes):
            out = out.decode()
        self.assertEqual(out.splitlines()[0], "1000", out)
        self.assertNotIn(SECRET, out)

    def test_popen_communicate(self):
        with tooljail.patch_subprocess(**self.kw):
            p = subprocess.Popen(["sh", "-c", "id -u; env; echo err >&2; exit 7"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            self.assertIsInstance(p, tooljail.JailedPopen)
            self.assertIsNone(p.report)
            out, err = p.communicate(timeout=30)
        restored(self)
        self.check_jailed(out)
        self.assertEqual(err, b"err\n")
        self.assertEqual(p.returncode, 7)
        self.assertEqual(p.args, ["sh", "-c", "id -u; env; echo err >&2; exit 7"])
        self.assertEqual(p.report.status, "exited")
        self.assertEqual(p.report.exit_code, 7)
        self.assertIsNone(p.jail_error)
        self.assertFalse(os.path.exists(os.path.dirname(p._tj_report)))  # the report's directory is gone

    def test_same_as_subprocess(self):
        # subprocess without the patch is the oracle: what does not depend
        # on who runs the command (bytes, exit codes, a signal, text mode,
        # input) comes back the same jailed.
        cases = [
            (["sh", "-c", "printf 'a\\nb'; printf 'err' >&2; exit 3"], {"capture_output": True}),
            (["sh", "-c", r"printf '\000\377\r\n'"], {"stdout": subprocess.PIPE}),
            (["sh", "-c", r"printf 'x\r\ny\rz\n'"], {"capture_output": True, "text": True}),
            (["sh", "-c", "kill -TERM $$"], {}),
            (["cat"], {"input": b"piped\n", "capture_output": True}),
            ("echo $((6*7)); exit 0", {"shell": True, "stdout": subprocess.PIPE}),
            (["sh", "-c", "exit 126"], {"stdout": subprocess.DEVNULL}),
        ]
        for args, kw in cases:
            want = subprocess.run(args, timeout=30, **kw)
            with tooljail.patch_subprocess(**self.kw):
                got = subprocess.run(args, timeout=30, **kw)
            with self.subTest(args=args):
                self.assertEqual((got.returncode, got.stdout, got.stderr),
                                 (want.returncode, want.stdout, want.stderr))

    def test_exec_failure_raises_from_popen(self):
        # subprocess's Popen raises what execve said, from its constructor:
        # the oracle, run first. Jailed, the same exception, nothing said on
        # stderr, and nothing left: tooljail reaped, its report gone.
        missing = ["no-such-program-tj", "x"]
        with self.assertRaises(FileNotFoundError) as want:
            subprocess.Popen(missing, stdout=subprocess.PIPE)
        err = os.path.join(self.scratch.dir, "stderr.txt")
        saved = os.dup(2)
        try:
            with open(err, "wb") as f:
                os.dup2(f.fileno(), 2)
            with tooljail.patch_subprocess(**self.kw):
                with self.assertRaises(FileNotFoundError) as got:
                    subprocess.Popen(missing, stdout=subprocess.PIPE)
                with self.assertRaises(PermissionError):
                    subprocess.run(["/etc"])
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        self.assertIsInstance(got.exception, tooljail.CommandNotFound)
        self.assertEqual((got.exception.errno, got.exception.strerror, got.exception.filename),
                         (want.exception.errno, want.exception.strerror, want.exception.filename))
        self.assertEqual(got.exception.report.exit_code, 127)
        with open(err, "rb") as f:
            self.assertEqual(f.read(), b"")
        with self.assertRaises(ChildProcessError):
            os.waitpid(-1, os.WNOHANG)  # no child of this process is left, not even a zombie

    def test_close_fds_false_warns_nothing(self):
        # subprocess takes close_fds=False without a word; so does the patch,
        # which passes tooljail its exec pipe (pass_fds would warn).
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with tooljail.patch_subprocess(**self.kw):
                r = subprocess.run(["true"], close_fds=False)
        self.assertEqual(r.returncode, 0)

    def test_popen_returns_once_execed(self):
        # As subprocess's: when the constructor returns, the command has
        # been exec'd: its argv is in /proc at once.
        mark = "tj-exec-mark-%d" % os.getpid()
        with tooljail.patch_subprocess(**self.kw):
            p = subprocess.Popen(["sh", "-c", "read x", mark], stdin=subprocess.PIPE)
        try:
            seen = []
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    with open("/proc/%s/cmdline" % pid, "rb") as f:
                        if mark.encode() in f.read().split(b"\0"):
                            seen.append(pid)
                except OSError:
                    pass
            self.assertTrue(seen, "no process runs the command when Popen returns")
        finally:
            p.communicate(b"\n", timeout=30)
        self.assertEqual(p.returncode, 0)

    def test_stdin_pipe_and_context_manager(self):
        with tooljail.patch_subprocess(**self.kw):
            with subprocess.Popen(["sh", "-c", "read x; echo got $x; id -u"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True) as p:
                out, _ = p.communicate("hello\n", timeout=30)
        self.assertEqual(out, "got hello\n1000\n")
        self.assertEqual(p.returncode, 0)

    def test_asyncio(self):
        async def agent():
            p = await asyncio.create_subprocess_exec("sh", "-c", "id -u; env", stdout=subprocess.PIPE)
            out1, _ = await p.communicate()
            q = await asyncio.create_subprocess_shell("id -u; env; exit 3", stdout=subprocess.PIPE)
            out2, _ = await q.communicate()
            return out1, p.returncode, out2, q.returncode

        async def missing():
            await asyncio.create_subprocess_exec("no-such-program-tj")

        with tooljail.patch_subprocess(**self.kw):
            out1, rc1, out2, rc2 = asyncio.run(agent())
            with self.assertRaises(FileNotFoundError):
                asyncio.run(missing())
        self.check_jailed(out1)
        self.check_jailed(out2)
        self.assertEqual((rc1, rc2), (0, 3))

    def test_os_system(self):
        out = os.path.join(self.scratch.dir, "out.txt")
        with tooljail.patch_subprocess(**self.kw):
            status = os.system("id -u > out.txt; env >> out.txt; exit 5")
        restored(self)
        self.assertEqual(status, 5 << 8)
        with open(out) as f:
            self.check_jailed(f.read())

    def test_os_popen(self):
        with tooljail.patch_subprocess(**self.kw):
            with os.popen("id -u; env") as f:
                self.check_jailed(f.read())
            self.check_jailed(subprocess.getoutput("id -u; env"))
            status, text = subprocess.getstatusoutput("id -u; env; exit 4")
        self.assertEqual(status, 4)
        self.check_jailed(text)

    def test_run_with_env(self):
        # env= is the command's environment: its values reach the command
        # through tooljail's environment (never argv), less what the jail
        # owns and what looks like a credential.
        with tooljail.patch_subprocess(**self.kw):
            r = subprocess.run(["sh", "-c", "id -u; env"], env=os.environ | {"X": "1", "HOME": "/nope"},
                               capture_output=True, text=True, timeout=30)
            self.assertEqual(r.returncode, 0, r.stderr)
        self.check_jailed(r.stdout)
        self.assertIn("X=1\n", r.stdout)
        self.assertNotIn("HOME=/nope", r.stdout)
        with tooljail.patch_subprocess(**self.kw):
            self.assertEqual(subprocess.check_output("echo $((1+1))", shell=True), b"2\n")
            self.assertEqual(subprocess.call(["false"]), 1)
            with self.assertRaises(subprocess.CalledProcessError):
                subprocess.check_call(["false"])
            with self.assertRaises(subprocess.TimeoutExpired):
                subprocess.run(["sleep", "30"], timeout=0.5)

    def test_streaming(self):
        # The command prints its first line, then waits for a line of
        # input that the test sends only once it has read the first: output
        # held until the end would come only after the command gave up
        # waiting (30 s) and exited, and poll() would say so.
        with tooljail.patch_subprocess(**self.kw):
            p = subprocess.Popen(["sh", "-c", "echo first; timeout 30 head -n 1 >/dev/null; echo second"],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.assertEqual(p.stdout.readline(), b"first\n")
        self.assertIsNone(p.poll(), "the first line came only when the command had ended")
        p.stdin.write(b"go\n")
        p.stdin.close()
        self.assertEqual(p.stdout.read(), b"second\n")
        self.assertEqual(p.wait(30), 0)
        p.stdout.close()

    def test_signals(self):
        with tooljail.patch_subprocess(**self.kw):
            p = subprocess.Popen(["sh", "-c", 'trap "echo got USR1; exit 3" USR1; echo ready; '
                                  'while :; do sleep 0.05; done'], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                 text=True)
            q = subprocess.Popen(["sh", "-c", "echo ready; while :; do sleep 0.05; done"],
                                 stdout=subprocess.PIPE, text=True)
        self.assertEqual(p.stdout.readline(), "ready\n")
        p.send_signal(signal.SIGUSR1)
        self.assertEqual(p.communicate(timeout=30)[0], "got USR1\n")
        self.assertEqual(p.returncode, 3)
        self.assertEqual(q.stdout.readline(), "ready\n")
        q.terminate()
        q.communicate(timeout=30)
        self.assertEqual(q.returncode, -signal.SIGTERM)
        self.assertEqual(q.report.status, "signaled")

    def test_kill(self):
        # SIGKILL cannot be forwarded: it kills tooljail, and the jail dies
        # with it (its init has PR_SET_PDEATHSIG): the marker never comes.
        with tooljail.patch_subprocess(**self.kw):
            p = subprocess.Popen(["sh", "-c", "echo ready; sleep 1; touch marker"], stdout=subprocess.PIPE)
        self.assertEqual(p.stdout.readline(), b"ready\n")
        p.kill()
        p.communicate(timeout=30)
        self.assertEqual(p.returncode, -signal.SIGKILL)
        self.assertIsNone(p.report)
        time.sleep(1.5)
        self.assertFalse(os.path.exists(self.marker))

    def test_jail_error(self):
        with tooljail.patch_subprocess(profile="no-such-profile"):
            p = subprocess.Popen(["touch", "marker"], stderr=subprocess.PIPE)
            _, err = p.communicate(timeout=30)
        self.assertEqual(p.returncode, 125)
        self.assertIsInstance(p.jail_error, tooljail.JailError)
        self.assertIn(b"no-such-profile", err)
        self.assertFalse(os.path.exists(self.marker))

    def test_refused(self):
        touch = ["sh", "-c", "touch marker"]
        r, w = os.pipe()
        self.addCleanup(os.close, r)
        self.addCleanup(os.close, w)
        with tooljail.patch_subprocess(**self.kw):
            for kw in ({"preexec_fn": print}, {"pass_fds": (w,)}, {"user": "root"}, {"group": 0},
                       {"extra_groups": [0]}, {"umask": 0o22}):
                name = next(iter(kw))
                with self.subTest(keyword=name):
                    with self.assertRaisesRegex(tooljail.JailError, r"\b%s=" % name):
                        subprocess.Popen(touch, **kw)
                    with self.assertRaisesRegex(tooljail.JailError, r"\b%s=" % name):
                        subprocess.run(touch, **kw)
            for call in (lambda: os.spawnv(os.P_WAIT, "/bin/sh", touch),
                         lambda: os.spawnl(os.P_WAIT, "/bin/sh", *touch),
                         lambda: os.posix_spawn("/bin/sh", touch, os.environ),
                         lambda: os.posix_spawnp("sh", touch, os.environ),
                         # Not refused, it would fail: no such file.
                         lambda: os.execv("/no/such/program", ["x"]),
                         lambda: os.execvp("/no/such/program", ["x"]),
                         lambda: pty.spawn(touch)):
                with self.assertRaisesRegex(tooljail.JailError, r"(os|pty)\.\w+ starts a program"):
                    call()
        restored(self)
        self.assertFalse(os.path.exists(self.marker))
        # Not after the patch.
        self.assertEqual(os.spawnv(os.P_WAIT, "/bin/sh", touch), 0)
        self.assertTrue(os.path.exists(self.marker))

    def test_escape_hatch(self):
        host = str(os.getuid())
        with tooljail.patch_subprocess(allow=lambda argv: argv[0] == "id", **self.kw):
            self.assertEqual(subprocess.check_output(["id", "-u"]).decode().strip(), host)
            self.check_jailed(subprocess.check_output(["sh", "-c", "id -u"]))
            with tooljail.unjailed():
                self.assertEqual(subprocess.check_output(["sh", "-c", "id -u"]).decode().strip(), host)
                self.assertEqual(os.system("exit 2"), 2 << 8)
                self.assertEqual(os.spawnv(os.P_WAIT, "/bin/sh", ["sh", "-c", "exit 0"]), 0)
            self.check_jailed(subprocess.check_output(["sh", "-c", "id -u"]))
        restored(self)

    def test_multiprocessing_fork(self):
        ctx = multiprocessing.get_context("fork")
        queue = ctx.Queue()
        with tooljail.patch_subprocess(**self.kw):
            child = ctx.Process(target=_fork_child, args=(queue,))
            child.start()
            try:
                out = queue.get(timeout=30)
            finally:
                child.join(30)
        self.check_jailed(out)
        self.assertEqual(child.exitcode, 0)

    @unittest.skipUnless(support.serve_supported(), "tooljail serve not available")
    def test_server(self):
        served = [] if self.scratch.profile is None else ["--profile", self.scratch.profile]
        server = support.Server(self.scratch.config, *served)
        self.addCleanup(server.stop)
        with tooljail.patch_subprocess(socket=server.socket, **self.kw):
            p = subprocess.Popen(["sh", "-c", "id -u; env; exit 6"], stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE)
            out, _ = p.communicate(timeout=30)
        self.check_jailed(out)
        self.assertEqual(p.returncode, 6)
        self.assertEqual(p.report.status, "exited")
        self.assertIn("--server", p._tj_argv)
        # The served run says when it was exec'd too: a missing program
        # raises from the constructor.
        with tooljail.patch_subprocess(socket=server.socket, **self.kw):
            with self.assertRaises(tooljail.CommandNotFound) as e:
                subprocess.Popen(["no-such-program-tj"], stdin=subprocess.DEVNULL)
        self.assertEqual(e.exception.filename, "no-such-program-tj")


if __name__ == "__main__":
    unittest.main()
