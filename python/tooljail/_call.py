"""What one call asks for, and how each transport spells it. Pure functions:
no I/O here, so the decisions are table-tested (tests/test_call.py)."""

import base64
import errno
import json
import math
import os
import signal

from ._changes import check_mode

# Popen keywords whose meaning is on the host side of the jail: refused by
# tooljail.run (pass_fds, preexec_fn: the others are not its keywords) and by
# patch_subprocess's Popen, with these reasons.
REFUSED_KEYWORDS = {
    "preexec_fn": "it runs Python code in the child before exec, on the host",
    "pass_fds": "only stdin, stdout and stderr cross into the jail",
    "user": "the jail's command always runs as the jail's user (uid 1000)",
    "group": "the jail's command always runs as the jail's group",
    "extra_groups": "the jail's command has no supplementary groups of the host",
    "umask": "the jail sets the command's umask",
}

# The jail's exit codes for a command that could not be started (DESIGN.md 3).
CANNOT_EXECUTE = 126
NOT_FOUND = 127
SETUP_FAILED = 125


class Call:
    """One run, checked: argv, workdir, env, stdin and the jail's options.

    stdin is None (the command's stdin is /dev/null), bytes (its whole
    stdin), or a file descriptor of the caller's to read it from (the CLI
    gets the descriptor itself; a server gets what is read from it).
    merge_stderr: the command's stdout and stderr are one pipe in the jail
    (stderr=STDOUT), so the order of their writes is kept. new_session: the
    CLI starts in a session of its own (start_new_session)."""

    __slots__ = ("argv", "workdir", "env", "stdin", "profile", "limits", "network", "timeout",
                 "merge_stderr", "new_session", "toolchains", "path", "changes", "changes_dir",
                 "session", "keep_running")

    def __init__(self, argv, workdir, env, stdin, profile, limits, network, timeout,
                 merge_stderr=False, new_session=False, toolchains=(), path=None, changes=None,
                 changes_dir=None):
        self.argv = argv
        self.workdir = workdir
        self.env = env
        self.stdin = stdin
        self.profile = profile
        self.limits = limits
        self.network = network
        self.timeout = timeout
        self.merge_stderr = merge_stderr
        self.new_session = new_session
        # toolchains: --toolchain values ("auto" or absolute prefixes); path:
        # the PATH "auto" (of toolchains or of a served profile) looks the
        # program up in (a server gets it as the request's path; the CLI
        # reads its own).
        self.toolchains = list(toolchains)
        self.path = path
        # changes: --changes MODE (None: the profile's); changes_dir: the
        # CLI's store of change sets (None: the user's default).
        self.changes = changes
        self.changes_dir = changes_dir
        # session: the id of the server's session the call runs in (its
        # workdir is then the call's working directory in the jail, or None
        # for the session's); keep_running keeps what it leaves running.
        self.session = None
        self.keep_running = False


def make_call(args, *, shell=False, executable=None, cwd=None, env=None, stdin=None,
              merge_stderr=False, new_session=False, profile=None, memory=None, cpus=None,
              pids=None, network=None, timeout=None, toolchain=None, changes=None,
              changes_dir=None, getcwd=os.getcwd, environ=os.environ):
    """Checks the caller's arguments and returns a Call; raises TypeError or
    ValueError with what to pass instead."""
    argv = command_argv(args, shell, executable)
    workdir = os.path.abspath(_path("cwd", cwd) if cwd is not None else getcwd())
    limits = {}
    for name, value in (("memory", memory), ("cpus", cpus), ("pids", pids)):
        if value is not None:
            limits[name] = _limit(name, value)
    if timeout is not None:
        limits["timeout"] = duration(timeout)
    command_env = _env(env)
    toolchains = _toolchains(toolchain)
    if changes_dir is not None:
        changes_dir = os.path.abspath(_path("changes_dir", changes_dir))
    return Call(
        argv=argv,
        workdir=workdir,
        env=command_env,
        stdin=stdin,
        profile=_name("profile", profile),
        limits=limits,
        network=_name("network", network),
        timeout=timeout,
        merge_stderr=bool(merge_stderr),
        new_session=bool(new_session),
        toolchains=toolchains,
        # As the CLI finds it: the command's PATH when env gives one, else
        # this process's (cli_environ).
        path=command_env.get("PATH", environ.get("PATH", "")),
        changes=check_mode(changes),
        changes_dir=changes_dir,
    )


def _toolchains(value):
    """toolchain= as --toolchain values: "auto", an absolute path, or a list
    of them."""
    if value is None:
        return []
    if isinstance(value, (str, bytes, os.PathLike)):
        value = [value]
    if not isinstance(value, (list, tuple)):
        raise TypeError("toolchain must be \"auto\", an absolute path or a list of them, not %s" % type(value).__name__)
    out = []
    for i, v in enumerate(value):
        t = _path("toolchain[%d]" % i, v)
        if t != "auto" and not os.path.isabs(t):
            raise ValueError("toolchain %r: want \"auto\" or an absolute path (the prefix of a toolchain)" % t)
        out.append(t)
    return out


def command_argv(args, shell, executable):
    """The command as it runs in the jail, as subprocess would exec it on
    POSIX: a string without shell is the program's name; with shell it is
    /bin/sh's script; executable replaces the program (with shell, the
    shell). The jail execs argv[0], so executable also becomes argv[0]."""
    if shell:
        if isinstance(args, (str, bytes, os.PathLike)):
            args = ["/bin/sh", "-c", args]
        elif isinstance(args, (list, tuple)):
            args = ["/bin/sh", "-c"] + list(args)
    elif isinstance(args, (str, bytes, os.PathLike)):
        args = [args]
    if not isinstance(args, (list, tuple)):
        raise TypeError("args must be a string or a list of strings, not %s" % type(args).__name__)
    if not args:
        raise ValueError("args is empty: name the program to run")
    argv = [_path("args[%d]" % i, a) for i, a in enumerate(args)]
    if executable is not None:
        argv[0] = _path("executable", executable)
    return argv


def _path(what, value):
    if not isinstance(value, (str, bytes, os.PathLike)):
        raise TypeError("%s must be a string, bytes or path, not %s" % (what, type(value).__name__))
    text = os.fsdecode(value)
    if "\0" in text:
        raise ValueError("%s contains a NUL byte" % what)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("%s is not valid UTF-8 (the jail's protocol carries text): %r" % (what, value)) from None
    return text


def _env(env):
    if env is None:
        return {}
    out = {}
    for key, value in dict(env).items():
        k, v = _path("env key", key), _path("env[%r]" % key, value)
        if not k or "=" in k:
            raise ValueError("env key %r: a variable name is non-empty and has no '='" % k)
        out[k] = v
    return out


def _name(what, value):
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise TypeError("%s must be a non-empty string, not %r" % (what, value))
    return value


def _limit(name, value):
    """A limit as profiles spell it: a string as is, an int as a plain number
    (bytes for memory), a float for cpus."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise TypeError("%s must be a string like the profile's or a number, not %r" % (name, value))
    if isinstance(value, float) and name != "cpus":
        raise TypeError("%s must be an integer or a string, not %r" % (name, value))
    if isinstance(value, str):
        if not value.strip():
            raise ValueError("%s is empty" % name)
        return value
    if value < 0 or (isinstance(value, float) and not math.isfinite(value)):
        raise ValueError("%s must be >= 0, not %r" % (name, value))
    return repr(value) if isinstance(value, float) else str(value)


def duration(seconds):
    """subprocess's timeout (seconds) as a Go duration, rounded up to whole
    milliseconds and at least 1ms: the jail reads 0 as no limit."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise TypeError("timeout must be a number of seconds, not %r" % (seconds,))
    if not math.isfinite(seconds):
        raise ValueError("timeout must be finite, not %r" % (seconds,))
    return "%dms" % max(1, math.ceil(seconds * 1000))


def cli_argv(binary, call, report):
    """The CLI's command line for a call: the command's output on the CLI's
    stdout and stderr as it comes, the report in the file report."""
    argv = [binary, "run", "--quiet", "--report", report]
    if call.profile is not None:
        argv += ["--profile", call.profile]
    for name in ("memory", "cpus", "pids", "timeout"):
        if name in call.limits:
            argv += ["--" + name, call.limits[name]]
    if call.network is not None:
        argv += ["--net", call.network]
    if call.merge_stderr:
        argv.append("--merge-stderr")
    for t in call.toolchains:
        argv += ["--toolchain", t]
    if call.changes is not None:
        argv += ["--changes", call.changes]
    if call.changes_dir is not None:
        argv += ["--changes-dir", call.changes_dir]
    argv += ["--workdir", call.workdir]
    argv += env_flags(call.env)
    return argv + ["--"] + call.argv


# Variables the tooljail process reads for itself (the seccomp cache, home
# directories it refuses as workdirs, the audit log, the server): a value the
# command is given for one of them cannot also be the process's, so it goes
# in argv. HOME is the jail's own anyway (dropped, named in the report).
TOOLJAIL_OWN = frozenset({
    "HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR", "TOOLJAIL_AUDIT_LOG", "TOOLJAIL_CACHE_DIR",
    "TOOLJAIL_SERVER", "TOOLJAIL_TEST_HOSTS", "KUBERNETES_SERVICE_HOST",
})


def env_flags(env):
    """The CLI's --env flags for the command's variables: `--env NAME` (the
    value taken from the tooljail process's environment, see cli_environ), so
    that no value is in argv, where every user of the host can read it
    (/proc/PID/cmdline); `--env NAME=VALUE` only for TOOLJAIL_OWN names."""
    out = []
    for key, value in env.items():
        out += ["--env", "%s=%s" % (key, value) if key in TOOLJAIL_OWN else key]
    return out


def cli_environ(env, environ, inherit=True):
    """The tooljail process's environment for a command given env (a dict,
    the values of env_flags' bare names): environ (with inherit, so that a
    profile's env.pass names are read from it; else only its TOOLJAIL_OWN
    variables, for tooljail itself, and the pass names are read from env),
    TOOLJAIL_SERVER dropped (the caller decides on a server, with --server),
    then env's variables but TOOLJAIL_OWN ones."""
    out = {k: v for k, v in environ.items()
           if k != "TOOLJAIL_SERVER" and (inherit or k in TOOLJAIL_OWN)}
    for key, value in env.items():
        if key not in TOOLJAIL_OWN:
            out[key] = value
    if "PATH" not in out and "PATH" in environ:
        # --toolchain auto looks the program up in tooljail's PATH, which
        # the command never gets (its PATH is the profile's and --env's).
        out["PATH"] = environ["PATH"]
    return out


def server_request(call, profile_text=None, stdin=None):
    """The request object of the wire protocol. Output is always streamed: the
    chunks are the command's exact bytes, in the order they came. With
    profile_text, the profile goes as that text (profile_toml), not by name.
    stdin: the bytes of call.stdin (read from it when it is a descriptor)."""
    if stdin is None and call.stdin is not None:
        if not isinstance(call.stdin, bytes):
            raise TypeError("server_request: call.stdin is a descriptor; pass the bytes read from it")
        stdin = call.stdin
    req = {"argv": call.argv, "workdir": call.workdir, "stream": True}
    if call.session is not None:
        # The session's jail: its start decided the workdir, the profile
        # and the limits but the timeout.
        req = {"argv": call.argv, "stream": True, "session": call.session}
        if call.workdir:
            req["cwd"] = call.workdir
        if call.keep_running:
            req["keep_running"] = True
        if call.env:
            req["env"] = call.env
        if stdin is not None:
            req["stdin"] = base64.b64encode(stdin).decode("ascii")
        if call.merge_stderr:
            req["merge_stderr"] = True
        if "timeout" in call.limits:
            req["limits"] = {"timeout": call.limits["timeout"]}
        return req
    if call.env:
        req["env"] = call.env
    if stdin is not None:
        req["stdin"] = base64.b64encode(stdin).decode("ascii")
    if call.merge_stderr:
        req["merge_stderr"] = True
    if profile_text is not None:
        req["profile_toml"] = profile_text
    elif call.profile is not None:
        req["profile"] = call.profile
    if call.limits:
        req["limits"] = dict(call.limits)
    if call.network is not None:
        req["network"] = call.network
    if call.toolchains:
        req["toolchains"] = list(call.toolchains)
    if call.changes is not None:
        req["changes"] = call.changes
    if call.path:
        # Also without toolchain=: a served profile's toolchains = ["auto"]
        # looks the program up in it. The command never gets it.
        req["path"] = call.path
    return req


# The largest profile file tooljail reads (profiles.MaxSize).
MAX_PROFILE = 1 << 20


def is_profile_file(profile):
    """A profile given as a file, not a shipped or served name (as the CLI tells)."""
    return profile is not None and ("/" in profile or profile.endswith(".toml"))


def not_served(message, profile):
    """Whether a server's refusal says it serves no profile of that name."""
    return message.startswith('profile %s: not served here' % json.dumps(profile))


def default_socket(environ, uid):
    """The server's default socket path (the protocol's rule)."""
    runtime = environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return os.path.join(runtime, "tooljail.sock")
    if uid == 0:
        return "/run/tooljail/sock"
    return "/tmp/tooljail-%d/sock" % uid


def choose_transport(socket, environ, uid, exists, which):
    """("server", path) or ("cli", binary): an explicit socket, then
    TOOLJAIL_SERVER, then the default socket if it exists, then the CLI
    (TOOLJAIL_BIN or tooljail on PATH). LookupError when there is neither."""
    if socket is not None:
        return "server", os.fspath(socket)
    if environ.get("TOOLJAIL_SERVER"):
        return "server", environ["TOOLJAIL_SERVER"]
    path = default_socket(environ, uid)
    if exists(path):
        return "server", path
    binary = find_binary(environ, bundled(), which)
    if not binary:
        raise LookupError(
            "no tooljail server (no socket at %s, TOOLJAIL_SERVER unset) and no tooljail "
            "binary (%s): install the tooljail wheel, set TOOLJAIL_BIN, or start "
            "`tooljail serve`" % (path, LOOKED_AT)
        )
    return "cli", binary


# What find_binary looked at, for the error when it finds nothing.
LOOKED_AT = "none installed with this package, TOOLJAIL_BIN unset, none on PATH"


def find_binary(environ, own, which):
    """The tooljail binary to run: the one installed with this package (own,
    from bundled()), then TOOLJAIL_BIN, then tooljail on PATH; None when there
    is none. The bundled one wins so that a platform wheel always runs the
    binary its client was released with."""
    return own or environ.get("TOOLJAIL_BIN") or which("tooljail") or None


def bundled():
    """The tooljail binary the platform wheel installed beside this client (its
    .data/scripts entry, which pip puts in the environment's scripts dir: a
    venv's bin, ~/.local/bin for --user), or None. Only a distribution whose
    tooljail/__init__.py is this very file's package counts, so a source tree
    (make python) never picks up some other installed copy."""
    try:
        from importlib import metadata
        dist = metadata.distribution("tooljail")
        files = dist.files or []
    except Exception:
        return None
    here = os.path.realpath(os.path.dirname(os.path.abspath(__file__)))
    init = [f for f in files if f.parts[-2:] == ("tooljail", "__init__.py")]
    if not init or os.path.realpath(os.path.dirname(str(dist.locate_file(init[0])))) != here:
        return None
    for f in files:
        # RECORD names the script by its path relative to site-packages
        # (../../../bin/tooljail), not inside the package directory.
        if f.name == "tooljail" and f.parts[0] != "tooljail":
            path = os.path.realpath(str(dist.locate_file(f)))
            if os.path.isfile(path) and os.access(path, os.X_OK):
                return path
    return None


def outcome(report):
    """What a report means to the caller: ("returncode", N), ("timeout", None),
    ("exec", errno) or ("error", reason).

    A command that could not be executed (126) or was not found (127) is
    ("exec", errno): subprocess raises the OSError execve gave, and so does
    tooljail.run. A signal is a negative returncode, as subprocess gives it.
    """
    status = report.get("status")
    code = report.get("exit_code")
    if status == "timeout":
        return "timeout", None
    if status == "setup_error" and code in (CANNOT_EXECUTE, NOT_FOUND):
        return "exec", exec_errno(code, report.get("reason") or "")
    if status in ("exited",) and isinstance(code, int):
        return "returncode", code
    if status in ("signaled", "memory_limit", "violation") and isinstance(code, int):
        name = report.get("signal")
        if name:
            try:
                return "returncode", -signal.Signals[name].value
            except KeyError:
                pass
        return "returncode", -(code - 128) if code > 128 else code
    reason = report.get("reason") or "the jail ended with status %r (exit %r)" % (status, code)
    return "error", reason


# The errors execve gives besides EACCES for a program it cannot execute, as
# the jail's reason ends with them (Go's words for the errno; the report has
# no errno field).
_EXEC_ERRNOS = (
    ("exec format error", errno.ENOEXEC),
    ("argument list too long", errno.E2BIG),
    ("text file busy", errno.ETXTBSY),
    ("too many levels of symbolic links", errno.ELOOP),
    ("file name too long", errno.ENAMETOOLONG),
)


def exec_errno(code, reason):
    """The errno subprocess would raise for the jail's 126 or 127: ENOENT for
    127 (not found), the one the reason names for 126, else EACCES (not
    executable, a directory: what execve says for both)."""
    if code == NOT_FOUND:
        return errno.ENOENT
    for words, number in _EXEC_ERRNOS:
        if reason.endswith(words):
            return number
    return errno.EACCES
