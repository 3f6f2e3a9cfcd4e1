"""The pure decisions: argument checks, each transport's spelling, the
transport choice, and what a report means to the caller."""

import base64
import errno
import pathlib
import unittest

import support  # noqa: F401  (puts the source tree on sys.path)
from tooljail import _call


def make(args=("true",), **kw):
    kw.setdefault("environ", {})
    return _call.make_call(list(args) if isinstance(args, tuple) else args, getcwd=lambda: "/w", **kw)


class MakeCallTest(unittest.TestCase):
    def test_argv(self):
        cases = [
            (["echo", "hi"], {}, ["echo", "hi"]),
            (("echo", b"hi"), {}, ["echo", "hi"]),
            ([pathlib.Path("/bin/echo")], {}, ["/bin/echo"]),
            ("echo $HOME", {"shell": True}, ["/bin/sh", "-c", "echo $HOME"]),
            (["echo $0", "x"], {"shell": True}, ["/bin/sh", "-c", "echo $0", "x"]),
            # As subprocess on POSIX: a string without shell is the program.
            ("ls -l", {}, ["ls -l"]),
            (b"ls", {}, ["ls"]),
            (pathlib.Path("/bin/ls"), {}, ["/bin/ls"]),
            # executable replaces the program (argv[0] too: the jail execs argv[0]).
            (["sh", "-c", "echo"], {"executable": "/bin/dash"}, ["/bin/dash", "-c", "echo"]),
            ("echo", {"shell": True, "executable": "/bin/bash"}, ["/bin/bash", "-c", "echo"]),
        ]
        for args, kw, want in cases:
            with self.subTest(args=args):
                self.assertEqual(_call.make_call(args, getcwd=lambda: "/w", **kw).argv, want)

    def test_bad_argv(self):
        cases = [
            (None, TypeError, "string or a list of strings"),
            ({"ls"}, TypeError, "string or a list of strings"),
            ([], ValueError, "empty"),
            (["ls", 1], TypeError, r"args\[1\]"),
            (["ls", "a\0b"], ValueError, "NUL"),
            ([b"\xff"], ValueError, "UTF-8"),
        ]
        for args, exc, msg in cases:
            with self.subTest(args=args):
                with self.assertRaisesRegex(exc, msg):
                    _call.make_call(args, getcwd=lambda: "/w")

    def test_workdir(self):
        self.assertEqual(make().workdir, "/w")
        self.assertEqual(make(cwd="/a/b/../c").workdir, "/a/c")
        self.assertEqual(make(cwd=pathlib.Path("/p")).workdir, "/p")

    def test_limits(self):
        cases = [
            ({"memory": 1 << 20}, {"memory": "1048576"}),
            ({"memory": "256M"}, {"memory": "256M"}),
            ({"cpus": 0.5, "pids": 16}, {"cpus": "0.5", "pids": "16"}),
            ({"cpus": 2}, {"cpus": "2"}),
            ({"timeout": 1.5}, {"timeout": "1500ms"}),
            ({"timeout": 0.0001}, {"timeout": "1ms"}),
            ({"timeout": 0}, {"timeout": "1ms"}),
            ({"timeout": 3}, {"timeout": "3000ms"}),
        ]
        for kw, want in cases:
            with self.subTest(kw=kw):
                self.assertEqual(make(**kw).limits, want)

    def test_bad_limits(self):
        cases = [
            ({"memory": True}, TypeError),
            ({"memory": 1.5}, TypeError),
            ({"pids": -1}, ValueError),
            ({"cpus": float("nan")}, ValueError),
            ({"memory": " "}, ValueError),
            ({"timeout": "10s"}, TypeError),
            ({"timeout": float("inf")}, ValueError),
            ({"profile": ""}, TypeError),
            ({"network": 0}, TypeError),
            ({"env": {"A=B": "x"}}, ValueError),
            ({"env": {"A": None}}, TypeError),
        ]
        for kw, exc in cases:
            with self.subTest(kw=kw):
                with self.assertRaises(exc):
                    make(**kw)


class SpellingTest(unittest.TestCase):
    def test_cli_argv(self):
        call = make(["cat", "-"], profile="strict", memory="64M", cpus=0.5, pids=8, timeout=2,
                    network="none", env={"A": "1", "B": "x=y", "TOOLJAIL_CACHE_DIR": "/c"}, cwd="/proj")
        # Values go in the CLI's environment, not its argv (any user can read
        # that); those of tooljail's own variables cannot, and go in argv.
        self.assertEqual(_call.cli_argv("/bin/tj", call, "/r/report.json"), [
            "/bin/tj", "run", "--quiet", "--report", "/r/report.json", "--profile", "strict",
            "--memory", "64M", "--cpus", "0.5", "--pids", "8", "--timeout", "2000ms",
            "--net", "none", "--workdir", "/proj", "--env", "A", "--env", "B",
            "--env", "TOOLJAIL_CACHE_DIR=/c", "--", "cat", "-"])
        self.assertEqual(_call.cli_argv("tj", make(["true"]), "R"),
                         ["tj", "run", "--quiet", "--report", "R", "--workdir", "/w", "--", "true"])
        # stderr=STDOUT: one pipe in the jail, the order of the writes kept.
        self.assertEqual(_call.cli_argv("tj", make(["true"], merge_stderr=True), "R"),
                         ["tj", "run", "--quiet", "--report", "R", "--merge-stderr", "--workdir", "/w",
                          "--", "true"])

    def test_toolchain(self):
        call = make(["pytest"], toolchain=["auto", "/opt/go"], environ={"PATH": "/v/bin:/usr/bin"})
        self.assertEqual(_call.cli_argv("tj", call, "R"),
                         ["tj", "run", "--quiet", "--report", "R", "--toolchain", "auto", "--toolchain", "/opt/go",
                          "--workdir", "/w", "--", "pytest"])
        self.assertEqual(_call.server_request(call), {
            "argv": ["pytest"], "workdir": "/w", "stream": True, "toolchains": ["auto", "/opt/go"],
            "path": "/v/bin:/usr/bin"})
        # The command's PATH, when env gives one, is where "auto" looks (as the CLI does).
        call = make(["pytest"], toolchain="auto", env={"PATH": "/e/bin"}, environ={"PATH": "/v/bin"})
        self.assertEqual(_call.server_request(call)["path"], "/e/bin")
        self.assertNotIn("path", _call.server_request(make(["true"])))
        # Without toolchain= too: a served profile may find one.
        self.assertEqual(_call.server_request(make(["true"], environ={"PATH": "/v/bin"}))["path"], "/v/bin")
        for bad, exc in (("rel", ValueError), (["auto", "x/y"], ValueError), (3, TypeError), ("a\0b", ValueError)):
            with self.assertRaises(exc, msg=bad):
                make(toolchain=bad)
        # The CLI keeps this process's PATH for itself when env gives none.
        self.assertEqual(_call.cli_environ({"A": "1"}, {"PATH": "/p", "X": "y"}, inherit=False), {"A": "1", "PATH": "/p"})

    def test_cli_environ(self):
        environ = {"PATH": "/bin", "HOME": "/root", "TOOLJAIL_SERVER": "/s", "TOOLJAIL_CACHE_DIR": "/c",
                   "SECRET_TOKEN": "t"}
        env = {"A": "1", "PATH": "/mine", "TOOLJAIL_CACHE_DIR": "/x"}
        # tooljail.run: the caller's environment (the profile's env.pass
        # reads it) and the command's values; never TOOLJAIL_SERVER.
        self.assertEqual(_call.cli_environ(env, environ), {
            "PATH": "/mine", "HOME": "/root", "TOOLJAIL_CACHE_DIR": "/c", "SECRET_TOKEN": "t", "A": "1"})
        # Popen(env=...): only tooljail's own variables of the caller's.
        self.assertEqual(_call.cli_environ(env, environ, inherit=False), {
            "HOME": "/root", "TOOLJAIL_CACHE_DIR": "/c", "A": "1", "PATH": "/mine"})
        self.assertEqual(_call.env_flags(env), ["--env", "A", "--env", "PATH", "--env", "TOOLJAIL_CACHE_DIR=/x"])

    def test_profile_file_or_name(self):
        for profile, want in [("default", False), ("./mine.toml", True), ("mine.toml", True),
                              ("/etc/tj/agent", True), (None, False), ("strict", False)]:
            self.assertEqual(_call.is_profile_file(profile), want, profile)
        for message, profile, want in [
            ('profile "./a.toml": not served here (served: default); ask', "./a.toml", True),
            ('profile "./a.toml": not served here', "./b.toml", False),
            ("limits.memory: 2G is looser than the profile's 512M", "./a.toml", False),
        ]:
            self.assertEqual(_call.not_served(message, profile), want, message)

    def test_server_request_profile_text(self):
        call = make(["true"], profile="./mine.toml")
        self.assertEqual(_call.server_request(call)["profile"], "./mine.toml")
        req = _call.server_request(call, 'extends = "default"\n')
        self.assertEqual(req["profile_toml"], 'extends = "default"\n')
        self.assertNotIn("profile", req)

    def test_server_request(self):
        self.assertEqual(_call.server_request(make(["true"])),
                         {"argv": ["true"], "workdir": "/w", "stream": True})
        call = make(["cat"], stdin=b"\x00\xff", profile="default", memory=1024, timeout=1,
                    network="none", env={"K": "V"})
        self.assertEqual(_call.server_request(call), {
            "argv": ["cat"], "workdir": "/w", "stream": True, "env": {"K": "V"},
            "stdin": base64.b64encode(b"\x00\xff").decode(), "profile": "default",
            "limits": {"memory": "1024", "timeout": "1000ms"}, "network": "none"})
        self.assertEqual(_call.server_request(make(["cat"], stdin=b"", merge_stderr=True)), {
            "argv": ["cat"], "workdir": "/w", "stream": True, "stdin": "", "merge_stderr": True})
        # A descriptor's bytes are read by the transport and passed in.
        call = make(["cat"], stdin=0)
        self.assertEqual(_call.server_request(call, stdin=b"in")["stdin"], base64.b64encode(b"in").decode())
        with self.assertRaisesRegex(TypeError, "descriptor"):
            _call.server_request(call)


class TransportChoiceTest(unittest.TestCase):
    def test_default_socket(self):
        cases = [
            ({"XDG_RUNTIME_DIR": "/run/user/7"}, 7, "/run/user/7/tooljail.sock"),
            ({"XDG_RUNTIME_DIR": "/run/user/0"}, 0, "/run/user/0/tooljail.sock"),
            ({}, 0, "/run/tooljail/sock"),
            ({"XDG_RUNTIME_DIR": ""}, 1000, "/tmp/tooljail-1000/sock"),
        ]
        for env, uid, want in cases:
            with self.subTest(env=env, uid=uid):
                self.assertEqual(_call.default_socket(env, uid), want)

    def test_choose(self):
        which = {"tooljail": "/usr/bin/tooljail"}.get
        nowhere = {}.get
        cases = [
            ("/s", {"TOOLJAIL_SERVER": "/e"}, set(), which, ("server", "/s")),
            (None, {"TOOLJAIL_SERVER": "/e"}, set(), which, ("server", "/e")),
            (None, {}, {"/run/tooljail/sock"}, which, ("server", "/run/tooljail/sock")),
            (None, {}, set(), which, ("cli", "/usr/bin/tooljail")),
            (None, {"TOOLJAIL_BIN": "/b/tj"}, set(), which, ("cli", "/b/tj")),
            (None, {"TOOLJAIL_BIN": "/b/tj", "TOOLJAIL_SERVER": ""}, set(), nowhere, ("cli", "/b/tj")),
        ]
        for sock, env, existing, wh, want in cases:
            with self.subTest(socket=sock, env=env, existing=existing):
                self.assertEqual(_call.choose_transport(sock, env, 0, existing.__contains__, wh), want)
        with self.assertRaisesRegex(LookupError, "TOOLJAIL_BIN"):
            _call.choose_transport(None, {}, 0, set().__contains__, nowhere)


class FindBinaryTest(unittest.TestCase):
    def test_order(self):
        # The bundled binary first, then TOOLJAIL_BIN, then PATH (issue 29).
        which = {"tooljail": "/usr/bin/tooljail"}.get
        nowhere = {}.get
        cases = [
            ("/venv/bin/tooljail", {"TOOLJAIL_BIN": "/b/tj"}, which, "/venv/bin/tooljail"),
            ("/venv/bin/tooljail", {}, nowhere, "/venv/bin/tooljail"),
            (None, {"TOOLJAIL_BIN": "/b/tj"}, which, "/b/tj"),
            (None, {"TOOLJAIL_BIN": ""}, which, "/usr/bin/tooljail"),
            (None, {}, which, "/usr/bin/tooljail"),
            (None, {}, nowhere, None),
        ]
        for own, env, wh, want in cases:
            with self.subTest(own=own, env=env):
                self.assertEqual(_call.find_binary(env, own, wh), want)

    def test_source_tree_has_no_bundled_binary(self):
        # make python runs from the source tree with TOOLJAIL_BIN: nothing
        # installed may shadow bin/tooljail there.
        self.assertIsNone(_call.bundled())

    def test_error_names_all_three(self):
        for part in ("installed with this package", "TOOLJAIL_BIN", "PATH"):
            self.assertIn(part, _call.LOOKED_AT)


class OutcomeTest(unittest.TestCase):
    def test_outcome(self):
        cases = [
            ({"status": "exited", "exit_code": 0}, ("returncode", 0)),
            ({"status": "exited", "exit_code": 3}, ("returncode", 3)),
            ({"status": "signaled", "exit_code": 143, "signal": "SIGTERM"}, ("returncode", -15)),
            ({"status": "signaled", "exit_code": 137}, ("returncode", -9)),
            ({"status": "signaled", "exit_code": 200, "signal": "SIGNOPE"}, ("returncode", -72)),
            ({"status": "memory_limit", "exit_code": 137}, ("returncode", -9)),
            ({"status": "violation", "exit_code": 159}, ("returncode", -31)),
            ({"status": "timeout", "exit_code": 124}, ("timeout", None)),
            ({"status": "setup_error", "exit_code": 126, "reason": "x: is a directory"}, ("exec", errno.EACCES)),
            ({"status": "setup_error", "exit_code": 127, "reason": "x"}, ("exec", errno.ENOENT)),
            ({"status": "setup_error", "exit_code": 125, "reason": "no cgroup"}, ("error", "no cgroup")),
            ({"status": "cancelled", "exit_code": 125}, ("error", "the jail ended with status 'cancelled' (exit 125)")),
        ]
        for report, want in cases:
            with self.subTest(report=report):
                self.assertEqual(_call.outcome(report), want)

    def test_exec_errno(self):
        # The jail's reasons (jail/failure_test.go's stage 2 cases) and the
        # errno subprocess raises for the same execve failure.
        cases = [
            (127, "ls: command not found in the jail (PATH=/usr/bin)", errno.ENOENT),
            (127, "/no/such: no such file in the jail", errno.ENOENT),
            (126, "ls: not executable: permission denied", errno.EACCES),
            (126, "ls: is a directory", errno.EACCES),
            (126, "./script: exec format error", errno.ENOEXEC),
            (126, "ls: argument list too long", errno.E2BIG),
            (126, "ls: text file busy", errno.ETXTBSY),
            (126, "", errno.EACCES),
        ]
        for code, reason, want in cases:
            with self.subTest(reason=reason):
                self.assertEqual(_call.exec_errno(code, reason), want)


if __name__ == "__main__":
    unittest.main()
