"""patch_subprocess: every process this Python starts through subprocess,
jailed, or refused.

While a patch is active, subprocess.Popen is JailedPopen: a real Popen whose
process is `tooljail run [--server S] --quiet --report FILE [jail options]
[--env NAME]... -- ARGV` with the caller's stdio, so that run, call,
check_call, check_output, getoutput, getstatusoutput, os.popen and asyncio's
subprocesses (all built on Popen) are jailed; os.system runs through it too.
What cannot be jailed raises JailError before anything starts. See
python/README.md, "What patch_subprocess covers".
"""

import contextlib
import inspect
import os
import shutil
import subprocess
import threading
import weakref

from . import _call, _transport
from ._changes import ChangeSet, Where, check_mode
from ._errors import JailError, exec_error
from ._report import Report

# subprocess's Popen as this package found it: the base of JailedPopen, and
# what an unjailed call gets.
_Popen = subprocess.Popen
_SIGNATURE = inspect.signature(_Popen.__init__)

_OPTIONS = ("profile", "memory", "cpus", "pids", "network", "toolchain", "socket", "changes",
            "changes_dir")

# os functions that start a program without subprocess: refused while a patch
# is active (the spawn* functions fork and exec in Python; posix_spawn and the
# exec* functions replace or start a process directly).
_OS_REFUSED = tuple(n for n in (
    "spawnv", "spawnve", "spawnvp", "spawnvpe", "spawnl", "spawnle", "spawnlp", "spawnlpe",
    "posix_spawn", "posix_spawnp",
    "execv", "execve", "execl", "execle", "execlp", "execlpe", "execvp", "execvpe",
) if hasattr(os, n))

_lock = threading.RLock()
_stack = ()      # the active patches' configs, innermost last (replaced, never mutated)
_saved = None    # {(module, name): original} while installed
_local = threading.local()


def _after_fork_in_child():
    global _lock
    _lock = threading.RLock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class _Config:
    __slots__ = ("flags", "socket", "allow", "thread", "changes_dir", "session_server")

    def __init__(self, flags, socket, allow, thread, changes_dir=None, session_server=None):
        self.flags = flags
        self.socket = socket
        self.allow = allow
        self.thread = thread
        self.changes_dir = changes_dir
        # session_server: a Session's calls go to its server, named in
        # flags (--server), whatever stdin is.
        self.session_server = session_server


def _active():
    """The config that applies to this thread's call: the innermost patch this
    thread entered, else the innermost of any thread; None when no patch is
    active or the call is inside unjailed()."""
    if getattr(_local, "unjailed", 0):
        return None
    stack = _stack
    if not stack:
        return None
    me = threading.get_ident()
    for cfg in reversed(stack):
        if cfg.thread == me:
            return cfg
    return stack[-1]


@contextlib.contextmanager
def _launching():
    """Marks this thread's own start of a process (the tooljail CLI, or an
    allowed call): subprocess may start it with os.posix_spawn, which the
    patch refuses to others."""
    _local.launching = getattr(_local, "launching", 0) + 1
    try:
        yield
    finally:
        _local.launching -= 1


@contextlib.contextmanager
def unjailed():
    """Within the block, this thread's processes start as without any patch:
    for the agent runtime's own commands (its git, its package manager), never
    for a model's. Thread-local: other threads stay patched, and asyncio tasks,
    which share their loop's thread, are unjailed together while the block is
    open. Nestable."""
    _local.unjailed = getattr(_local, "unjailed", 0) + 1
    try:
        yield
    finally:
        _local.unjailed -= 1


def _allowed(cfg, argv):
    if cfg.allow is None:
        return False
    return bool(cfg.allow(list(argv)))


class _PopenMeta(type):
    # isinstance(p, subprocess.Popen) holds for an unjailed call's Popen too
    # while subprocess.Popen is JailedPopen.
    def __instancecheck__(cls, obj):
        if cls is JailedPopen:
            return isinstance(obj, _Popen)
        return super().__instancecheck__(obj)

    def __subclasscheck__(cls, sub):
        if cls is JailedPopen:
            return issubclass(sub, _Popen)
        return super().__subclasscheck__(sub)


class JailedPopen(_Popen, metaclass=_PopenMeta):
    """subprocess.Popen while patch_subprocess() is active: the process is
    the tooljail CLI running the command in a jail, with the caller's stdio.

    Pipes, communicate, wait, poll, the context manager and streaming reads
    are Popen's own. send_signal and terminate reach the command (tooljail
    forwards them); kill() kills tooljail, and the jail dies with it.
    Once it has exited, ``report`` is the jail's report (None when there is
    none: killed, or refused before a run) and ``returncode`` the command's
    (``-N`` for a signal N); 125 with ``jail_error`` set when tooljail could
    not run the command. ``args`` is the caller's.

    Outside any patch (unjailed(), an allow= predicate that says so, or a
    reference kept after the undo) the call gets subprocess's own Popen.
    """

    def __new__(cls, *args, **kwargs):
        cfg = _active()
        if cfg is not None and cfg.allow is not None:
            try:
                bound = _SIGNATURE.bind(None, *args, **kwargs)
            except TypeError:
                bound = None  # Popen's own error, from __init__
            if bound is not None:
                a = bound.arguments
                argv = _call.command_argv(a["args"], a.get("shell", False), a.get("executable"))
                if _allowed(cfg, argv):
                    cfg = None
        if cfg is None:
            with _launching():
                return _Popen(*args, **kwargs)
        self = super().__new__(cls)
        self._tj_cfg = cfg
        return self

    def __init__(self, *args, **kwargs):
        self._tj_returncode = None
        self._tj_done = True  # until the jailed process is started
        self._tj_signal = None
        self.report = None
        self.changes = None
        self.jail_error = None
        cfg = self.__dict__.pop("_tj_cfg", None) or _active()
        bound = _SIGNATURE.bind(self, *args, **kwargs)
        bound.apply_defaults()
        a = dict(bound.arguments)
        del a["self"]
        if cfg is None:
            with _launching():
                super().__init__(**a)
            return
        caller_args = a["args"]
        for key, why in _call.REFUSED_KEYWORDS.items():
            if key not in a:
                continue
            value = a[key]
            if key == "umask" and value == -1:
                continue
            if key == "pass_fds" and not value:
                continue
            if key != "umask" and key != "pass_fds" and value is None:
                continue
            raise JailError(
                "tooljail.patch_subprocess(): Popen(%s=%r) cannot be jailed: %s. Nothing was "
                "started. Drop %s, or run this call unjailed on purpose with "
                "tooljail.unjailed() or patch_subprocess(allow=...)" % (key, value, why, key),
                cmd=caller_args)
        argv = _call.command_argv(caller_args, a["shell"], a["executable"])
        env = a["env"]
        command_env = _call._env(env) if env is not None else {}
        binary = _call.find_binary(os.environ, _call.bundled(), shutil.which)
        if not binary:
            raise JailError(
                "tooljail.patch_subprocess(): no tooljail binary (%s); nothing was started: "
                "install the tooljail wheel or set TOOLJAIL_BIN" % _call.LOOKED_AT, cmd=caller_args)
        server = _server(cfg, a["stdin"]) if cfg.session_server is None else None
        if cfg.session_server is not None:
            self._tj_where = Where(socket=cfg.session_server)
        elif server is not None:
            self._tj_where = Where(socket=server)
        else:
            self._tj_where = Where(binary=binary, changes_dir=cfg.changes_dir)
        workdir = os.path.realpath(os.fsdecode(a["cwd"]) if a["cwd"] is not None else os.getcwd())
        tmp = _transport.report_dir(workdir)
        report = os.path.join(tmp, "report.json")
        tj_argv = [binary, "run", "--quiet", "--report", report] + list(cfg.flags)
        if a["stderr"] == subprocess.STDOUT:
            # One pipe in the jail: the command's writes keep their order.
            tj_argv.append("--merge-stderr")
        if server is not None:
            tj_argv += ["--server", server]
        # tooljail says on this pipe when the command has been exec'd
        # (--exec-fd): as subprocess's Popen, the constructor returns then,
        # or raises the OSError execve gave. Not for a session's call with
        # input: `tooljail run --server` sends the run once it has read all
        # of stdin, which the caller writes only after the constructor.
        exec_r = exec_w = None
        if cfg.session_server is None or _stdin_empty(a["stdin"]):
            exec_r, exec_w = os.pipe()
            tj_argv += ["--exec-fd", str(exec_w)]
            # close_fds=False would only reach tooljail, never the command,
            # and beside pass_fds it is a RuntimeWarning: tooljail gets its
            # stdio and this pipe.
            a.update(pass_fds=(exec_w,), close_fds=True)
        tj_argv += _call.env_flags(command_env) + ["--"] + argv
        if env is None:
            tj_env = _call.cli_environ({}, os.environ)
        else:
            tj_env = _call.cli_environ(command_env, os.environ, inherit=False)
        a.update(args=tj_argv, shell=False, executable=None, env=tj_env)
        self._tj_report = report
        self._tj_argv = tj_argv
        self._tj_cleanup = weakref.finalize(self, shutil.rmtree, tmp, True)
        self._tj_done = False
        try:
            try:
                with _launching():
                    super().__init__(**a)
            finally:
                if exec_w is not None:
                    os.close(exec_w)
        except OSError as e:
            if exec_r is not None:
                os.close(exec_r)
            self._tj_done = True
            self._tj_cleanup()
            if e.filename == binary:
                raise JailError("cannot start the tooljail CLI %s: %s; set TOOLJAIL_BIN to the "
                                "tooljail binary" % (binary, e.strerror), cmd=caller_args) from None
            raise
        except BaseException:
            if exec_r is not None:
                os.close(exec_r)
            self._tj_done = True
            self._tj_cleanup()
            raise
        self.args = caller_args
        if exec_r is not None:
            self._tj_await_exec(exec_r, argv[0])

    def _tj_await_exec(self, fd, program):
        """Reads --exec-fd's pipe to its end: "exec" once the command runs.
        Without it the command never ran: tooljail is about to exit, and a
        program not found or not executable raises here, as from
        subprocess's Popen (its pipes closed, tooljail reaped)."""
        said = b""
        try:
            while True:
                chunk = os.read(fd, 64)
                if not chunk:
                    break
                said += chunk
        except BaseException:
            # ^C while the jail starts: nothing is left running.
            os.close(fd)
            self.kill()
            self.wait()
            self._tj_close_pipes()
            raise
        os.close(fd)
        if said == b"exec\n":
            return
        self.wait()
        if self.report is None or _call.outcome(self.report.raw)[0] != "exec":
            return  # 125 (jail_error), a timeout, a kill: the returncode says
        self._tj_close_pipes()
        raise exec_error(_call.outcome(self.report.raw)[1], program, self.report)

    def _tj_close_pipes(self):
        for f in (self.stdin, self.stdout, self.stderr):
            if f is not None:
                try:
                    f.close()
                except OSError:
                    pass

    @property
    def returncode(self):
        return self.__dict__.get("_tj_returncode")

    @returncode.setter
    def returncode(self, value):
        # Set by Popen (wait, poll) or by asyncio's child watcher with
        # tooljail's own exit status: the command's is in the report.
        if value is None or self.__dict__.get("_tj_done", True):
            self._tj_returncode = value
            return
        self._tj_done = True
        self._tj_returncode = self._tj_outcome(value)

    def send_signal(self, sig):
        if self.returncode is None:
            self._tj_signal = sig
        super().send_signal(sig)

    def _tj_outcome(self, code):
        raw = _transport.read_report(self._tj_report)
        self._tj_cleanup()
        if raw is None:
            # No report: tooljail was killed (kill(): its jail died with it),
            # a run on a server was cancelled by a signal (128+N), or tooljail
            # refused the run before it (125, the reason on stderr).
            sent = self._tj_signal
            if sent is not None and code == 128 + int(sent):
                return -int(sent)
            if code == _call.SETUP_FAILED:
                self.jail_error = JailError(
                    "tooljail could not run the command (exit 125, no report); it said why on "
                    "the stderr it was given", cmd=self.args)
            return code
        self.report = Report(raw)
        if isinstance(raw.get("changes"), dict):
            self.changes = ChangeSet(raw["changes"], self._tj_where)
        what, value = _call.outcome(raw)
        if what == "returncode":
            return value
        if what == "exec":
            # _tj_await_exec raises it from the constructor; an asyncio
            # watcher that reaped tooljail first sees 126 or 127 here.
            return code
        if what == "timeout":
            return code  # 124: the jail's timeout killed the tree (report.status "timeout")
        self.jail_error = JailError(value, cmd=self.args, code=code, report=self.report)
        return code


def popen_with(cfg, *args, **kwargs):
    """A JailedPopen under cfg whatever patch is active (Session.popen)."""
    self = object.__new__(JailedPopen)
    self._tj_cfg = cfg
    self.__init__(*args, **kwargs)
    return self


def _server(cfg, stdin):
    """The server socket to send this run to, or None to jail it here. Only
    when stdin cannot deadlock: `tooljail run --server` reads all of stdin
    before it sends the run, so an interactive pipe would wait forever."""
    try:
        kind, where = _call.choose_transport(cfg.socket, os.environ, os.getuid(),
                                             os.path.exists, lambda name: None)
    except LookupError:
        return None
    if kind != "server" or cfg.changes_dir is not None:
        # changes_dir names the CLI's own store: a server keeps its own.
        return None
    return where if _stdin_empty(stdin) else None


def _stdin_empty(stdin):
    """Whether Popen's stdin gives the command nothing to read: DEVNULL, or
    this process's own stdin when that is /dev/null."""
    return stdin == subprocess.DEVNULL or (stdin is None and _stdin_is_null())


def _stdin_is_null():
    try:
        st = os.fstat(0)
        null = os.stat(os.devnull)
    except OSError:
        return False  # no stdin: Popen gives the child none either; jail it here
    return (st.st_mode & 0o170000) == 0o020000 and st.st_rdev == null.st_rdev


def _system(command):
    """os.system, jailed: /bin/sh -c COMMAND with this process's stdio; the
    wait status as os.system gives it."""
    cfg = _active()
    if cfg is None or _allowed(cfg, ["/bin/sh", "-c", os.fsdecode(command)]):
        with _launching():
            return _saved_os("system")(command)
    p = JailedPopen(command, shell=True)
    code = p.wait()
    return -code if code < 0 else (code & 0xFF) << 8


def _saved_os(name):
    saved = _saved
    if saved is not None:
        return saved[(os, name)]
    return getattr(os, name)


def _refuser(name, original):
    spawn = name.startswith("spawn")
    listed = "l" in name[5 if spawn else 4:] if name.startswith(("spawn", "exec")) else False
    with_env = name.endswith("e") and name not in ("posix_spawn", "posix_spawnp")

    def refuse(*args, **kwargs):
        cfg = _active()
        if cfg is None or getattr(_local, "launching", 0):
            return original(*args, **kwargs)
        rest = list(args[1:] if spawn else args)
        try:
            path = rest[0]
            if name.startswith("posix_spawn"):
                argv = list(rest[1])
            elif listed:
                argv = rest[1:-1] if with_env else rest[1:]
            else:
                argv = list(rest[1])
            argv = [os.fsdecode(path)] + [os.fsdecode(x) for x in argv[1:]]
        except (IndexError, TypeError):
            argv = None
        if argv is not None and _allowed(cfg, argv):
            return original(*args, **kwargs)
        raise JailError(
            "tooljail.patch_subprocess(): os.%s starts a program that the patch cannot jail; "
            "nothing was started. Use subprocess (jailed), or run it unjailed on purpose with "
            "tooljail.unjailed() or patch_subprocess(allow=...)" % name, cmd=argv)

    refuse.__name__ = refuse.__qualname__ = name
    refuse.__doc__ = "os.%s, refused by tooljail.patch_subprocess() while it is active." % name
    refuse.__wrapped__ = original
    return refuse


def _pty_refuser(original):
    # pty.spawn forks and execs in the child: refused here, in the caller,
    # rather than by os.execlp in a child that would go on running the
    # caller's code.
    def spawn(argv, *args, **kwargs):
        cfg = _active()
        listed = [argv] if isinstance(argv, (str, bytes)) else list(argv)
        if cfg is None or _allowed(cfg, [os.fsdecode(a) for a in listed]):
            return original(argv, *args, **kwargs)
        raise JailError(
            "tooljail.patch_subprocess(): pty.spawn starts a program on a terminal, which the "
            "patch cannot jail; nothing was started. Run it unjailed on purpose with "
            "tooljail.unjailed() or patch_subprocess(allow=...)", cmd=listed)

    spawn.__name__ = spawn.__qualname__ = "spawn"
    spawn.__wrapped__ = original
    return spawn


def _install():
    global _saved
    import pty
    saved = {(subprocess, "Popen"): subprocess.Popen, (os, "system"): os.system,
             (pty, "spawn"): pty.spawn}
    for name in _OS_REFUSED:
        saved[(os, name)] = getattr(os, name)
    _saved = saved
    subprocess.Popen = JailedPopen
    os.system = _system
    pty.spawn = _pty_refuser(saved[(pty, "spawn")])
    for name in _OS_REFUSED:
        setattr(os, name, _refuser(name, saved[(os, name)]))


def _uninstall():
    global _saved
    for (module, name), fn in _saved.items():
        setattr(module, name, fn)
    _saved = None


class _Patch:
    """The undo of one patch_subprocess(): call it, or leave its with block."""

    def __init__(self, cfg):
        self._cfg = cfg

    def __call__(self):
        global _stack
        with _lock:
            cfg, self._cfg = self._cfg, None
            if cfg is None or cfg not in _stack:
                return
            _stack = tuple(c for c in _stack if c is not cfg)
            if not _stack:
                _uninstall()

    undo = __call__

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self()
        return False


def patch_subprocess(*, allow=None, **jail):
    """Jails every process this Python starts through subprocess until undone:
    subprocess.Popen becomes JailedPopen (so run, call, check_call,
    check_output, getoutput, getstatusoutput, os.popen and asyncio's
    subprocesses are jailed), os.system runs through it, and os.spawn*,
    os.posix_spawn(p) and os.exec* raise JailError. A Popen keyword the jail
    cannot honour (preexec_fn, pass_fds, user, group, extra_groups, umask)
    raises JailError naming it; nothing runs unjailed by accident.

    jail: the jail's options for every call (profile, memory, cpus, pids,
    network, toolchain: "auto" or prefixes, changes and changes_dir, as
    tooljail.run's; socket: the server to use when a call can go to one).
    With changes=, each Popen's ``changes`` is its run's ChangeSet once it
    has ended.
    allow: a predicate over a call's argv (a list of str; a shell command is
    ["/bin/sh", "-c", CMD]); True runs that call unjailed, as unjailed() does.

    Usable as a context manager (``with tooljail.patch_subprocess(): ...``) or
    as a call returning the undo (``undo = tooljail.patch_subprocess(); undo()``).
    Nestable and thread-safe: the innermost active patch of the calling thread
    applies, else the innermost of any thread; subprocess and os get their own
    functions back (the same objects) when the last one is undone, in any
    order.
    """
    global _stack
    for key in jail:
        if key not in _OPTIONS:
            raise TypeError("patch_subprocess() got an unexpected option %r" % key)
    if allow is not None and not callable(allow):
        raise TypeError("allow must be a callable taking an argv list, not %r" % (allow,))
    flags = []
    profile = _call._name("profile", jail.get("profile"))
    if profile is not None:
        if _call.is_profile_file(profile):
            profile = os.path.abspath(profile)
        flags += ["--profile", profile]
    for name in ("memory", "cpus", "pids"):
        if jail.get(name) is not None:
            flags += ["--" + name, _call._limit(name, jail[name])]
    network = _call._name("network", jail.get("network"))
    if network is not None:
        flags += ["--net", network]
    for t in _call._toolchains(jail.get("toolchain")):
        flags += ["--toolchain", t]
    mode = check_mode(jail.get("changes"))
    if mode is not None:
        flags += ["--changes", mode]
    changes_dir = jail.get("changes_dir")
    if changes_dir is not None:
        changes_dir = os.path.abspath(_call._path("changes_dir", changes_dir))
        flags += ["--changes-dir", changes_dir]
    socket = jail.get("socket")
    cfg = _Config(tuple(flags), os.fspath(socket) if socket is not None else None, allow,
                  threading.get_ident(), changes_dir)
    with _lock:
        if not _stack:
            _install()
        _stack = _stack + (cfg,)
    return _Patch(cfg)
