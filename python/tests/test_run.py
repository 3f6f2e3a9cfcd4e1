"""tooljail.run against the real binary: the same cases through the CLI and
through a real `tooljail serve` (test_parity.py compares both, and
subprocess, call by call)."""

import errno
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import support
import tooljail

BIG = 16 << 20  # the default profile's output limit: all of it comes back
PY = "/usr/bin/python3"


class RunCases:
    """Every run() parameter; a subclass says which transport (self.kw)."""

    def run_(self, args, **kw):
        return tooljail.run(args, **dict(self.kw, **kw))

    def test_bytes_and_text(self):
        r = self.run_(["/bin/sh", "-c", "echo hi; echo err >&2; exit 3"], capture_output=True)
        self.assertIsInstance(r, subprocess.CompletedProcess)
        self.assertEqual((r.returncode, r.stdout, r.stderr), (3, b"hi\n", b"err\n"))
        self.assertEqual(r.report.status, "exited")
        self.assertEqual(r.report.raw["exit_code"], 3)
        r = self.run_(["/bin/sh", "-c", "printf 'a\\r\\nb\\n'"], capture_output=True, text=True)
        self.assertEqual(r.stdout, "a\nb\n")
        r = self.run_(["/bin/sh", "-c", "printf '\\303\\251t\\303\\251'"], capture_output=True, encoding="utf-8")
        self.assertEqual(r.stdout, "été")
        r = self.run_(["/bin/sh", "-c", "printf x"], stdout=tooljail.PIPE, errors="strict")
        self.assertEqual((r.stdout, r.stderr), ("x", None))

    def test_input(self):
        self.assertEqual(self.run_(["cat"], input=b"\x00abc\n", capture_output=True).stdout, b"\x00abc\n")
        self.assertEqual(self.run_(["cat"], input="héllo", text=True, capture_output=True).stdout, "héllo")
        # No input: /dev/null, never this process's stdin.
        self.assertEqual(self.run_(["cat"], capture_output=True).stdout, b"")
        with self.assertRaisesRegex(TypeError, "text=True"):
            self.run_(["cat"], input="str without text")

    def test_large_output_and_input(self):
        r = self.run_(["/bin/sh", "-c", "yes | head -c %d" % BIG], stdout=tooljail.PIPE)
        self.assertEqual(len(r.stdout), BIG)
        self.assertEqual(r.stdout, b"y\n" * (BIG // 2))
        self.assertFalse(r.report.stdout.truncated)
        data = os.urandom(1 << 20).hex().encode()[:BIG] * 8  # 16 MiB of text
        r = self.run_(["cat"], input=data, stdout=tooljail.PIPE)
        self.assertEqual(r.stdout, data)

    def test_destinations(self):
        with tempfile.TemporaryFile() as f:
            self.run_(["/bin/sh", "-c", "echo out; echo err >&2"], stdout=f, stderr=tooljail.STDOUT)
            f.seek(0)
            self.assertEqual(f.read(), b"out\nerr\n")
        r = self.run_(["/bin/sh", "-c", "echo out; echo err >&2"], stdout=tooljail.DEVNULL, stderr=tooljail.PIPE)
        self.assertEqual((r.stdout, r.stderr), (None, b"err\n"))
        # stderr=STDOUT: one pipe in the jail, the order of the writes kept.
        r = self.run_(["/bin/sh", "-c", "echo 1; echo 2 >&2; echo 3"], stdout=tooljail.PIPE, stderr=tooljail.STDOUT)
        self.assertEqual((r.stdout, r.stderr), (b"1\n2\n3\n", None))
        with tempfile.TemporaryFile() as f:
            self.run_(["echo", "fd"], stdout=f.fileno())
            f.seek(0)
            self.assertEqual(f.read(), b"fd\n")
        buf = io.BytesIO()
        self.run_(["echo", "bytesio"], stdout=buf)
        self.assertEqual(buf.getvalue(), b"bytesio\n")
        # Inherited: this process's sys.stdout/sys.stderr.
        out, err = io.TextIOWrapper(io.BytesIO()), io.StringIO()
        saved = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = out, err
        try:
            r = self.run_(["/bin/sh", "-c", "echo inherited; echo e >&2"])
        finally:
            sys.stdout, sys.stderr = saved
        self.assertEqual((r.stdout, r.stderr), (None, None))
        out.flush()
        self.assertEqual(out.buffer.getvalue(), b"inherited\n")
        self.assertEqual(err.getvalue(), "e\n")
        with self.assertRaisesRegex(ValueError, "capture_output"):
            self.run_(["true"], capture_output=True, stdout=tooljail.PIPE)

    def test_check(self):
        self.assertEqual(self.run_(["true"], check=True).returncode, 0)
        with self.assertRaises(subprocess.CalledProcessError) as cm:
            self.run_(["/bin/sh", "-c", "echo o; echo e >&2; exit 4"], check=True, capture_output=True)
        e = cm.exception
        self.assertIsInstance(e, tooljail.CalledProcessError)
        self.assertEqual((e.returncode, e.output, e.stderr), (4, b"o\n", b"e\n"))
        self.assertEqual(e.report.status, "exited")
        self.assertEqual(tooljail.check_output(["echo", "x"], **self.kw), b"x\n")
        self.assertEqual(tooljail.check_output(["echo", "x"], text=True, **self.kw), "x\n")
        self.assertEqual(tooljail.check_call(["true"], **self.kw), 0)
        self.assertEqual(tooljail.call(["/bin/sh", "-c", "exit 5"], **self.kw), 5)
        with self.assertRaises(tooljail.CalledProcessError):
            tooljail.check_call(["false"], **self.kw)
        with self.assertRaises(ValueError):
            tooljail.check_output(["true"], stdout=None, **self.kw)

    def test_timeout(self):
        start = time.monotonic()
        with self.assertRaises(subprocess.TimeoutExpired) as cm:
            self.run_(["/bin/sh", "-c", "echo part; exec sleep 30"], timeout=1, capture_output=True)
        self.assertLess(time.monotonic() - start, 10)
        e = cm.exception
        self.assertIsInstance(e, tooljail.TimeoutExpired)
        # As subprocess's: None for a stream that wrote nothing.
        self.assertEqual((e.timeout, e.output, e.stderr), (1, b"part\n", None))
        self.assertEqual(e.report.status, "timeout")
        self.assertEqual(e.report.limits.timeout_ms, 1000)
        with self.assertRaises(tooljail.TimeoutExpired) as cm:
            self.run_(["/bin/sh", "-c", "echo part; exec sleep 30"], timeout=0.5, capture_output=True, text=True)
        self.assertEqual(cm.exception.output, b"part\n")  # bytes, as subprocess's
        # A timeout that is not reached changes nothing.
        self.assertEqual(self.run_(["true"], timeout=30).report.limits.timeout_ms, 30000)

    def test_signal(self):
        r = self.run_(["/bin/sh", "-c", "kill -TERM $$"])
        self.assertEqual(r.returncode, -signal.SIGTERM)
        self.assertEqual(r.report.status, "signaled")
        self.assertEqual(r.report.signal, "SIGTERM")

    def test_cannot_execute(self):
        # As subprocess: the OSError execve gave, here with the report.
        with self.assertRaises(FileNotFoundError) as cm:
            self.run_(["/no/such/program"], capture_output=True)
        e = cm.exception
        self.assertIsInstance(e, tooljail.CommandNotFound)
        self.assertEqual((e.errno, e.filename), (errno.ENOENT, "/no/such/program"))
        self.assertEqual((e.report.status, e.report.exit_code), ("setup_error", 127))
        self.assertIn("in the jail: /no/such/program", str(e))
        with self.assertRaises(PermissionError) as cm:
            self.run_(["/etc"], capture_output=True)
        self.assertIsInstance(cm.exception, tooljail.CommandNotExecutable)
        self.assertEqual((cm.exception.errno, cm.exception.report.exit_code), (errno.EACCES, 126))
        with self.assertRaises(tooljail.CommandNotFound):
            self.run_(["/no/such/program"], check=True, capture_output=True)
        with self.assertRaises(tooljail.CommandNotFound) as cm:
            self.run_(["/bin/echo", "x"], executable="/no/such/echo", capture_output=True)
        self.assertEqual(cm.exception.filename, "/no/such/echo")
        # The jail's one line is on the command's stderr too, for whoever
        # shows only the streams.
        with tempfile.TemporaryFile() as f:
            with self.assertRaises(tooljail.CommandNotFound):
                self.run_(["no-such-program-tj"], stderr=f)
            f.seek(0)
            self.assertRegex(f.read(), rb"^tooljail: no-such-program-tj: command not found in the jail .*\n$")

    def test_leftover_killed(self):
        # A process the command leaves running is killed when it exits
        # (subprocess would wait 30 s here for the pipes to close): nothing
        # outlives a run, and the report counts what was killed.
        marker = os.path.join(os.getcwd(), "leftover-marker")
        r = self.run_(["/bin/sh", "-c", "(sleep 1; touch leftover-marker) & sleep 30 & echo started"],
                      capture_output=True, timeout=25)
        self.assertEqual(r.stdout, b"started\n")
        self.assertGreaterEqual(r.report.get("killed_leftover_processes", 0), 2)
        time.sleep(1.5)
        self.assertFalse(os.path.exists(marker), "a leftover process ran on after the run")

    def test_cwd_and_env(self):
        sub = os.path.join(os.getcwd(), "sub")
        os.makedirs(sub, exist_ok=True)
        self.assertEqual(self.run_(["pwd"], capture_output=True, text=True).stdout, os.getcwd() + "\n")
        self.assertEqual(self.run_(["pwd"], cwd=sub, capture_output=True, text=True).stdout, sub + "\n")
        self.run_(["/bin/sh", "-c", "echo made > f"], cwd=sub, check=True)
        with open(os.path.join(sub, "f")) as f:
            self.assertEqual(f.read(), "made\n")
        r = self.run_(["/bin/sh", "-c", 'echo "$FOO|$HOME|$SECRET"'], env={"FOO": "bar baz"},
                      capture_output=True, text=True)
        foo, home, secret = r.stdout.rstrip("\n").split("|")
        self.assertEqual(foo, "bar baz")
        self.assertTrue(home)  # the profile's environment is kept
        self.assertEqual(secret, "")  # this process's is not passed
        with self.assertRaises(tooljail.JailError) as cm:
            self.run_(["true"], cwd="/", capture_output=True)
        self.assertIn("workdir", str(cm.exception))
        self.assertEqual(cm.exception.code, 125)

    def test_limits(self):
        # Looser than the profile's too: the caller could write a profile of
        # its own; a ceiling is the profile's [limits.max] (CeilingTest).
        self.assertEqual(self.run_(["true"], memory="64G").report.limits.memory_bytes, 64 << 30)
        r = self.run_(["true"], memory="64M", cpus=0.5, pids=32, network="none")
        self.assertEqual(r.report.limits.memory_bytes, 64 << 20)
        self.assertEqual(r.report.limits.cpus, 0.5)
        self.assertEqual(r.report.limits.pids, 32)
        self.assertTrue(r.report.enforcement.namespaces.net)
        self.assertEqual(self.run_(["true"], memory=64 << 20).report.limits.memory_bytes, 64 << 20)

    @unittest.skipUnless(os.getuid() == 0 and os.path.exists(PY), "memory cap as root, with %s" % PY)
    def test_memory_limit(self):
        r = self.run_([PY, "-c", "b = bytearray(256 << 20)"], memory="64M", capture_output=True)
        if not r.report.enforcement.caps.memory:
            self.skipTest("the memory cap is not enforced on this host")
        self.assertEqual((r.report.status, r.returncode), ("memory_limit", -signal.SIGKILL))

    def test_toolchain(self):
        # A Node-like prefix outside the workdir whose programs are echo: found
        # by "auto" in env's PATH, or named; its bin first in PATH.
        d = tempfile.mkdtemp(prefix="tooljail-py-tc-", dir=scratch.config)
        self.addCleanup(shutil.rmtree, d, True)
        os.chmod(d, 0o755)
        os.makedirs(os.path.join(d, "bin"))
        os.makedirs(os.path.join(d, "lib", "node_modules"))
        for name in ("node", "tjnode"):  # the layout needs bin/node; the host may have a node of its own
            shutil.copy("/bin/echo", os.path.join(d, "bin", name))
        env = {"PATH": d + "/bin:/usr/bin:/bin"}
        with self.assertRaises(FileNotFoundError):
            self.run_(["tjnode", "hi"], capture_output=True)
        for toolchain, kind, frm in (("auto", "node", "auto"), (d, "node", "flag"), ([d], "node", "flag")):
            with self.subTest(toolchain=toolchain):
                r = self.run_(["tjnode", "hi"], toolchain=toolchain, env=env, capture_output=True)
                self.assertEqual(r.stdout, b"hi\n")
                tcs = r.report.raw["enforcement"]["toolchains"]
                self.assertEqual([(t["kind"], t["prefixes"], t["bin"], t["from"]) for t in tcs],
                                 [(kind, [os.path.realpath(d)], [os.path.realpath(d) + "/bin"], frm)])
        with self.assertRaises(ValueError):
            self.run_(["node"], toolchain="relative/dir")

    def test_bad_input(self):
        # A string without shell=True is the program's name, as subprocess's.
        with self.assertRaises(FileNotFoundError) as cm:
            self.run_("echo hi", capture_output=True)
        self.assertEqual(cm.exception.filename, "echo hi")
        for kw in ({"pass_fds": (1,)}, {"preexec_fn": print}):
            name = next(iter(kw))
            with self.assertRaisesRegex(tooljail.JailError, r"\b%s=.*refused.*drop %s" % (name, name)):
                self.run_(["true"], **kw)
        with self.assertRaisesRegex(subprocess.SubprocessError, "disambiguate"):
            self.run_(["true"], text=True, universal_newlines=False)
        with self.assertRaisesRegex(ValueError, "may not both be used"):
            self.run_(["cat"], input=b"x", stdin=tooljail.PIPE)
        with self.assertRaises(LookupError):
            self.run_(["true"], encoding="no-such-codec")
        with self.assertRaises(ValueError):
            self.run_([])
        with self.assertRaises(tooljail.JailError) as cm:
            self.run_(["true"], profile="no-such-profile", capture_output=True)
        self.assertIn("no-such-profile", str(cm.exception))
        self.assertEqual(cm.exception.code, 125)
        with self.assertRaisesRegex(TypeError, "file object"):
            self.run_(["true"], stdout="out.txt")

    def test_shell(self):
        r = self.run_("echo $((6*7))", shell=True, capture_output=True, text=True)
        self.assertEqual(r.stdout, "42\n")

    def test_binary_output_exact(self):
        # The command's bytes, invalid UTF-8 included, on both transports.
        r = self.run_(["/bin/sh", "-c", "printf '\\377\\000\\376'"], capture_output=True)
        self.assertEqual(r.stdout, b"\xff\x00\xfe")
        r = self.run_(["/bin/sh", "-c", "printf '\\351t\\351'"], capture_output=True, encoding="latin-1")
        self.assertEqual(r.stdout, "été")

    def test_live_output(self):
        # on_output gets the bytes as they come: the first line is in the
        # file before the command ends (it waits for the marker).
        marker = os.path.join(os.getcwd(), "live-marker")
        with tempfile.NamedTemporaryFile() as f:
            def watch():
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:
                    if os.path.getsize(f.name) > 0:
                        open(marker, "w").close()
                        return
                    time.sleep(0.01)
            t = threading.Thread(target=watch)
            t.start()
            r = self.run_(["/bin/sh", "-c", "echo first; i=0; while [ ! -e live-marker ] && [ $i -lt 1000 ]; "
                           "do sleep 0.01; i=$((i+1)); done; echo second"], stdout=f, timeout=60)
            t.join()
            f.seek(0)
            self.assertEqual(f.read(), b"first\nsecond\n")
        self.assertTrue(os.path.exists(marker), "the first line came only when the command ended")
        os.unlink(marker)


def setUpModule():
    global scratch
    scratch = support.Scratch()


def tearDownModule():
    scratch.close()


@support.need_binary
class CLITest(RunCases, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.kw = scratch.kw

    def test_profile(self):
        if support.ROOT:
            self.assertEqual(tooljail.run(["true"], profile="default").report.profile, "default")
            self.assertEqual(tooljail.run(["true"], profile="strict").report.profile, "strict")
        else:
            self.assertEqual(self.run_(["true"]).report.profile, scratch.profile)

    def test_cli_missing(self):
        saved = os.environ.get("TOOLJAIL_BIN")
        os.environ["TOOLJAIL_BIN"] = "/no/such/tooljail"
        try:
            with self.assertRaisesRegex(tooljail.JailError, "TOOLJAIL_BIN"):
                self.run_(["true"])
        finally:
            if saved is None:
                del os.environ["TOOLJAIL_BIN"]
            else:
                os.environ["TOOLJAIL_BIN"] = saved


class ServerMixin:
    @classmethod
    def setUpClass(cls):
        if not support.serve_supported():
            raise unittest.SkipTest("this tooljail has no serve subcommand")
        served = [] if scratch.profile is None else ["--profile", scratch.profile]
        cls.server = support.Server(scratch.config, *served)
        cls.kw = {"socket": cls.server.socket}

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()


@support.need_binary
class ServerTest(ServerMixin, RunCases, unittest.TestCase):
    def test_found_by_environment(self):
        os.environ["TOOLJAIL_SERVER"] = self.server.socket
        try:
            self.assertEqual(tooljail.run(["echo", "env"], capture_output=True).stdout, b"env\n")
        finally:
            del os.environ["TOOLJAIL_SERVER"]
        default = os.path.join(scratch.dir, "tooljail.sock")  # XDG_RUNTIME_DIR is scratch.dir
        os.symlink(self.server.socket, default)
        try:
            self.assertEqual(tooljail.run(["echo", "default"], capture_output=True).stdout, b"default\n")
        finally:
            os.unlink(default)



@support.need_binary
class CeilingTest(unittest.TestCase):
    """A profile's [limits.max]: both paths refuse above it, in the same words."""

    @classmethod
    def setUpClass(cls):
        if not support.serve_supported():
            raise unittest.SkipTest("this tooljail has no serve subcommand")
        base = "default" if scratch.profile is None else scratch.profile
        cls.profile = os.path.join(scratch.config, "ceiling.toml")
        with open(cls.profile, "w") as f:
            f.write('extends = %s\n[limits]\nmemory = "64M"\n[limits.max]\nmemory = "256M"\n'
                    % json.dumps(base))
        cls.server = support.Server(scratch.config, "--profile", cls.profile)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def test_same_refusal(self):
        errors = []
        for transport in ({}, {"socket": self.server.socket}):
            self.assertEqual(tooljail.run(["true"], memory="128M", profile=self.profile,
                                          **transport).report.limits.memory_bytes, 128 << 20)
            with self.assertRaises(tooljail.JailError) as cm:
                tooljail.run(["true"], memory="1G", profile=self.profile, capture_output=True, **transport)
            self.assertEqual(cm.exception.code, 125)
            errors.append(str(cm.exception))
        self.assertIn("above the ceiling", errors[0])
        self.assertEqual(errors[0], errors[1])


@support.need_binary
class ClientProfileTest(unittest.TestCase):
    """profile= a file the server does not serve: its text goes as profile_toml,
    as `tooljail run --server --profile FILE` does."""

    @classmethod
    def setUpClass(cls):
        if not support.serve_supported():
            raise unittest.SkipTest("this tooljail has no serve subcommand")
        served = [] if scratch.profile is None else ["--profile", scratch.profile]
        cls.open_server = support.Server(scratch.config, "--allow-client-profiles", *served)
        cls.plain_server = support.Server(scratch.config, *served)
        base = "default" if scratch.profile is None else scratch.profile
        cls.mine = os.path.join(scratch.config, "mine.toml")
        with open(cls.mine, "w") as f:
            f.write('extends = %s\n[env]\nset = { TJ_MINE = "mine" }\n' % json.dumps(base))

    @classmethod
    def tearDownClass(cls):
        cls.open_server.stop()
        cls.plain_server.stop()

    def test_text_sent(self):
        r = tooljail.run(["/bin/sh", "-c", "echo $TJ_MINE"], capture_output=True,
                         profile=self.mine, socket=self.open_server.socket)
        self.assertEqual((r.returncode, r.stdout), (0, b"mine\n"))
        self.assertEqual(r.report.profile, "profile_toml")

    def test_refused_without_the_flag(self):
        with self.assertRaisesRegex(tooljail.JailError, "--allow-client-profiles"):
            tooljail.run(["true"], profile=self.mine, socket=self.plain_server.socket)

    def test_inside_workdir_refused(self):
        # The command could rewrite it for the next run sent to a server.
        inside = os.path.join(scratch.dir, "inside.toml")
        with open(inside, "w") as f:
            f.write('extends = "default"\n')
        try:
            with self.assertRaisesRegex(tooljail.JailError, "inside the run's workdir"):
                tooljail.run(["true"], profile=inside, cwd=scratch.dir, socket=self.open_server.socket)
        finally:
            os.unlink(inside)

    def test_missing_file(self):
        with self.assertRaisesRegex(tooljail.JailError, "no-such.toml"):
            tooljail.run(["true"], profile=os.path.join(scratch.config, "no-such.toml"),
                         socket=self.open_server.socket)


if __name__ == "__main__":
    unittest.main()
