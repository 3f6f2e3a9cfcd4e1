"""The parity battery: each case run four ways, with subprocess's own result
as the oracle.

  subprocess  subprocess.run on the host, unjailed: the oracle
  cli         tooljail.run through the CLI
  server      tooljail.run through a `tooljail serve` this module starts
  patch       subprocess.run under tooljail.patch_subprocess()
  patch-server  the same with the server as socket=: a Popen with stdin
              DEVNULL goes to it, the others are jailed by the CLI

Every way must give the oracle's outcome (returncode, stdout, stderr; or
the exception's type and fields) except where a case names a documented
difference: then it states what that way gives instead, and the difference
is one of DIFFERENCES, each of which python/README.md lists (checked below).
The commands exist both on the host and in the jail (/bin/sh, printf, cat).
"""

import contextlib
import hashlib
import os
import re
import subprocess
import unittest

import support
import tooljail

WAYS = ("cli", "server", "patch", "patch-server")

# The documented differences a case may name, each with the words of
# python/README.md that document it (test_documented checks they are there).
DIFFERENCES = {
    "stdin-none": "`stdin=None`",
    "env-added": "**added over**",
    "executable-argv0": "`executable=`",
    "new-session": "`start_new_session`",
    "pass-fds": "`pass_fds`, `preexec_fn`",
}

JAIL_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
BIG = 16 << 20
RANDOM = os.urandom(BIG)
TEXT_IN = b"file stdin\n\xff\r\n"


class Case:
    """args and keywords of a run, the same for every way. kw values that
    are callables are called afresh for each way (a file to read stdin
    from). differs: {way: (difference, outcome that way gives)}."""

    def __init__(self, name, args, differs=None, **kw):
        self.name = name
        self.args = args
        self.kw = kw
        self.differs = differs or {}
        for way, (difference, _) in self.differs.items():
            assert way in WAYS and difference in DIFFERENCES, (name, way, difference)


def fresh_file(data):
    def make(stack):
        f = stack.enter_context(open(os.path.join(os.getcwd(), "stdin.txt"), "w+b"))
        f.write(data)
        f.seek(0)
        return f
    return make


def fresh_fd(data):
    def make(stack):
        r, w = os.pipe()
        os.write(w, data)
        os.close(w)
        stack.callback(os.close, r)
        return r
    return make


@contextlib.contextmanager
def parent_stdin(data):
    """This process's fd 0 is a pipe holding data (then EOF) in the block: what
    stdin=None gives a command that inherits it."""
    r, w = os.pipe()
    os.write(w, data)
    os.close(w)
    saved = os.dup(0)
    os.dup2(r, 0)
    os.close(r)
    try:
        yield
    finally:
        os.dup2(saved, 0)
        os.close(saved)


SH = "/bin/sh"
CASES = [
    # Bytes and exit codes.
    Case("binary", [SH, "-c", r"printf '\377\000\376'; printf '\001' >&2"], capture_output=True),
    Case("exit codes", [SH, "-c", "echo o; echo e >&2; exit 3"], capture_output=True),
    Case("exit 255", [SH, "-c", "exit 255"]),
    Case("empty output", ["true"], capture_output=True),
    Case("empty text", ["true"], capture_output=True, text=True),
    Case("signal", [SH, "-c", "kill -TERM $$"], capture_output=True),
    Case("16 MiB random", ["cat", "random.bin"], capture_output=True),
    Case("16 MiB input", ["cat"], input=RANDOM, stdout=subprocess.PIPE),
    # Decoding, as subprocess's communicate does it.
    Case("latin-1", [SH, "-c", r"printf '\351t\351'"], capture_output=True, encoding="latin-1"),
    Case("utf-16", [SH, "-c", r"printf '\377\376h\000i\000\r\000\n\000'"], capture_output=True,
         encoding="utf-16"),
    Case("utf-8", [SH, "-c", r"printf '\303\251t\303\251'"], capture_output=True, encoding="utf-8"),
    Case("invalid utf-8 strict", [SH, "-c", r"printf 'a\377b'"], capture_output=True, encoding="utf-8"),
    Case("invalid utf-8 replace", [SH, "-c", r"printf 'a\377b'"], capture_output=True, encoding="utf-8",
         errors="replace"),
    Case("invalid utf-8 surrogateescape", [SH, "-c", r"printf 'a\377b'"], stdout=subprocess.PIPE,
         encoding="utf-8", errors="surrogateescape"),
    Case("invalid, locale encoding", [SH, "-c", r"printf 'a\377b'"], capture_output=True, text=True),
    Case("crlf bytes", [SH, "-c", r"printf 'a\r\nb\rc\n'"], capture_output=True),
    Case("crlf text", [SH, "-c", r"printf 'a\r\nb\rc\n'"], capture_output=True, text=True),
    Case("crlf universal_newlines", [SH, "-c", r"printf 'a\r\nb\rc\n' >&2"], capture_output=True,
         universal_newlines=True),
    Case("text input", ["cat"], input="h\xe9\r\n", capture_output=True, encoding="latin-1"),
    # Where the output goes.
    Case("stderr=STDOUT order", [SH, "-c", "echo 1; echo 2 >&2; echo 3; printf 4 >&2"],
         stdout=subprocess.PIPE, stderr=subprocess.STDOUT),
    Case("stderr=STDOUT text", [SH, "-c", r"printf 'a\r\n'; printf 'b\r\n' >&2"],
         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True),
    Case("stdout DEVNULL", [SH, "-c", "echo out; echo err >&2"], stdout=subprocess.DEVNULL,
         stderr=subprocess.PIPE),
    # stdin.
    Case("input", ["cat"], input=b"in\x00put", capture_output=True),
    Case("stdin PIPE, no input", ["cat"], stdin=subprocess.PIPE, capture_output=True),
    Case("stdin DEVNULL", ["cat"], stdin=subprocess.DEVNULL, capture_output=True),
    Case("stdin file", ["cat"], stdin=fresh_file(TEXT_IN), capture_output=True),
    Case("stdin descriptor", ["cat"], stdin=fresh_fd(TEXT_IN), capture_output=True),
    Case("stdin None", ["cat"], capture_output=True,
         differs={w: ("stdin-none", ("done", 0, b"", b"")) for w in ("cli", "server")}),
    # Programs that cannot run: Popen raises what execve said. The cases
    # with stdin=DEVNULL go to the server under "patch-server".
    Case("not found", ["/no/such/program"], stdout=subprocess.PIPE),
    Case("not found on PATH", ["no-such-program-tj"], check=True),
    Case("not found, stdin DEVNULL", ["no-such-program-tj"], stdin=subprocess.DEVNULL,
         capture_output=True),
    Case("not executable", ["./noexec.sh"]),
    Case("not executable, stdin DEVNULL", ["./noexec.sh"], stdin=subprocess.DEVNULL),
    Case("a directory", ["/etc"]),
    Case("exec format error", ["./noshebang"], stdin=subprocess.DEVNULL),
    Case("string program", "echo hi"),
    Case("executable not found", ["true"], executable="/no/such/program", stdin=subprocess.DEVNULL),
    # check=True.
    Case("check", [SH, "-c", "echo o; exit 4"], capture_output=True, check=True),
    Case("check ok", [SH, "-c", "echo o"], stdout=subprocess.PIPE, check=True),
    # Timeouts.
    Case("timeout captured", [SH, "-c", "echo part; exec sleep 30"], capture_output=True, timeout=2),
    Case("timeout not captured", [SH, "-c", "exec sleep 30"], stdout=subprocess.DEVNULL, timeout=0.5),
    Case("timeout 0", [SH, "-c", "echo x"], capture_output=True, timeout=0),
    # shell, executable, env, sessions.
    Case("shell", "echo $((6*7)); exit 2", shell=True, capture_output=True),
    Case("shell list", ["echo $0 $1", "zero", "one"], shell=True, capture_output=True),
    Case("shell executable", "echo ${BASH_VERSION:+bash}", shell=True, executable="/bin/bash",
         capture_output=True),
    Case("executable", ["some-name", "x"], executable="/bin/echo", capture_output=True),
    Case("executable argv[0]", ["my-name", "-c", "echo $0"], executable=SH, capture_output=True,
         differs={w: ("executable-argv0", ("done", 0, SH.encode() + b"\n", b"")) for w in WAYS}),
    Case("env", [SH, "-c", 'echo "$V"'], env={"V": "v a l"}, capture_output=True),
    Case("env added", [SH, "-c", 'echo "$V${HOME:+ HOME}"'], env={"V": "v"}, capture_output=True,
         differs={w: ("env-added", ("done", 0, b"v HOME\n", b"")) for w in WAYS}),
    Case("new session", [SH, "-c", 'set -- $(cat /proc/$$/stat); [ "$6" = $$ ] && echo leader'],
         start_new_session=True, capture_output=True),
    Case("no new session", [SH, "-c", 'set -- $(cat /proc/$$/stat); [ "$6" = $$ ] && echo leader'],
         capture_output=True,
         differs={w: ("new-session", ("done", 0, b"leader\n", b"")) for w in WAYS}),
    Case("pass_fds", ["true"], pass_fds=(2,),
         differs={w: ("pass-fds", ("JailError", "pass_fds")) for w in WAYS}),
]


def outcome(fn):
    """What a run gave, comparable across the ways: output over 1 MiB by hash."""
    def big(b):
        return ("sha256", hashlib.sha256(b).hexdigest()) if isinstance(b, bytes) and len(b) > 1 << 20 else b
    try:
        r = fn()
    except subprocess.TimeoutExpired as e:
        return ("timeout", big(e.output), big(e.stderr))
    except subprocess.CalledProcessError as e:
        return ("called", e.returncode, big(e.output), big(e.stderr))
    except UnicodeDecodeError as e:
        return ("decode", e.encoding, e.object, e.start, e.end, e.reason)
    except tooljail.JailError as e:
        keyword = re.search(r"\w+(?==)", str(e))
        return ("JailError", keyword.group() if keyword else str(e))
    except OSError as e:
        kind = next(c for c in (FileNotFoundError, PermissionError, OSError) if isinstance(e, c))
        return (kind.__name__, e.errno, e.strerror, e.filename)
    return ("done", r.returncode, big(r.stdout), big(r.stderr))


def setUpModule():
    global scratch, server
    scratch = support.Scratch()
    with open("random.bin", "wb") as f:
        f.write(RANDOM)
    with open("noexec.sh", "w") as f:
        f.write("#!/bin/sh\necho never\n")
    os.chmod("noexec.sh", 0o644)
    with open("noshebang", "w") as f:
        f.write("echo no interpreter named\n")
    os.chmod("noshebang", 0o755)
    server = None


def tearDownModule():
    if server is not None:
        server.stop()
    scratch.close()


@support.need_binary
class ParityTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        global server
        if not support.serve_supported():
            raise unittest.SkipTest("this tooljail has no serve subcommand")
        served = [] if scratch.profile is None else ["--profile", scratch.profile]
        server = support.Server(scratch.config, *served)
        # The oracle looks programs up in this PATH, the jail in its own: the
        # same directories, so that a host PATH with a directory this user
        # cannot search (EACCES, not ENOENT) does not change the oracle.
        cls.saved_path = os.environ.get("PATH")
        os.environ["PATH"] = JAIL_PATH

    @classmethod
    def tearDownClass(cls):
        if cls.saved_path is None:
            os.environ.pop("PATH", None)
        else:
            os.environ["PATH"] = cls.saved_path

    def run_way(self, way, case):
        with contextlib.ExitStack() as stack:
            kw = {k: (v(stack) if callable(v) else v) for k, v in case.kw.items()}
            if way == "subprocess":
                return outcome(lambda: subprocess.run(case.args, **kw))
            if way in ("patch", "patch-server"):
                served = {"socket": server.socket} if way == "patch-server" else {}
                with tooljail.patch_subprocess(**dict(scratch.kw, **served)):
                    return outcome(lambda: subprocess.run(case.args, **kw))
            transport = scratch.kw if way == "cli" else {"socket": server.socket}
            return outcome(lambda: tooljail.run(case.args, **dict(kw, **transport)))

    def test_parity(self):
        for case in CASES:
            if case.kw.get("executable") == "/bin/bash" and not os.path.exists("/bin/bash"):
                continue
            # What stdin=None inherits: a pipe with bytes in it, not a terminal.
            with parent_stdin(b"the parent's stdin\n"):
                want = self.run_way("subprocess", case)
            for way in WAYS:
                with self.subTest(case=case.name, way=way):
                    expected = case.differs.get(way, (None, want))[1]
                    with parent_stdin(b"the parent's stdin\n"):
                        got = self.run_way(way, case)
                    self.assertEqual(got, expected)

    def test_oracle_differs_where_documented(self):
        # A named difference is one: subprocess gives something else there.
        for case in CASES:
            for way, (difference, instead) in case.differs.items():
                with self.subTest(case=case.name, way=way):
                    with parent_stdin(b"the parent's stdin\n"):
                        self.assertNotEqual(self.run_way("subprocess", case), instead)


class DocumentedTest(unittest.TestCase):
    def test_documented(self):
        with open(os.path.join(support.HERE, "..", "README.md")) as f:
            readme = f.read()
        for name, words in DIFFERENCES.items():
            self.assertIn(words, readme, "difference %s is not in python/README.md" % name)


if __name__ == "__main__":
    unittest.main()
