"""run, call, check_call, check_output: subprocess's functions, jailed."""

import io
import os
import shutil
import subprocess
import sys

from . import _call, _transport
from ._call import REFUSED_KEYWORDS
from ._changes import ChangeSet, Where
from ._errors import CompletedProcess, JailError, TimeoutExpired, exec_error
from ._report import Report

PIPE = subprocess.PIPE
STDOUT = subprocess.STDOUT
DEVNULL = subprocess.DEVNULL


def run(args, *, stdin=None, input=None, capture_output=False, stdout=None, stderr=None,
        shell=False, executable=None, text=None, universal_newlines=None, encoding=None,
        errors=None, timeout=None, check=False, cwd=None, env=None, start_new_session=False,
        pass_fds=(), preexec_fn=None, profile=None, memory=None, cpus=None, pids=None,
        network=None, socket=None, toolchain=None, changes=None, changes_dir=None,
        _session=None):
    """Runs args in a jail and waits for it, like subprocess.run.

    Differences from subprocess.run, all because the jail builds the process
    (python/README.md, "Where it differs from subprocess"):
    - env is added over the profile's environment (PATH, HOME, LANG, TERM and
      the profile's env.set); it does not replace it, and this process's
      environment never reaches the command.
    - cwd is the workdir: bound read-write and the command's working
      directory; default the current directory (refused when it is /, a system
      or top-level directory or a home directory).
    - stdin=None is /dev/null, not this process's stdin.
    - timeout is the jail's wall-clock limit: the whole process tree is killed.
      A timeout <= 0 raises TimeoutExpired without starting anything.
    - executable= is also the command's argv[0].
    - pass_fds and preexec_fn are refused (JailError): only stdin, stdout and
      stderr cross into the jail, and no host code runs in the child.
    - toolchain= ("auto", an absolute path, or a list of them) shows the
      caller's toolchain read-only, its bin first in PATH (--toolchain):
      "auto" finds the program's own (a virtualenv, pyenv, nvm, rustup, a Go
      root...) in env's PATH when env gives one, else in os.environ's.
    - changes= ("off", "record", "review", "apply-on-success") records what
      the command changed in its workdir (--changes): the result's .changes
      lists it, and in review a kept set is applied or discarded later with
      .changes.apply() / .changes.discard(). changes_dir= is the CLI's store
      (--changes-dir); a server keeps its clients' sets in its own.
    - JailError when tooljail could not run the command at all.
    """
    for key, value in (("pass_fds", pass_fds), ("preexec_fn", preexec_fn)):
        if value:
            raise JailError("tooljail.run(%s=%r): refused: %s. Nothing was started; drop %s"
                            % (key, value, REFUSED_KEYWORDS[key], key), cmd=args)
    if text is not None and universal_newlines is not None and bool(text) != bool(universal_newlines):
        raise subprocess.SubprocessError("Cannot disambiguate when both text and universal_newlines "
                                         "are supplied but different. Pass one or the other.")
    text_mode = bool(encoding or errors or text or universal_newlines)
    if capture_output:
        if stdout is not None or stderr is not None:
            raise ValueError("stdout and stderr arguments may not be used with capture_output.")
        stdout = stderr = PIPE
    if stdout == STDOUT:
        raise ValueError("stdout=STDOUT: only stderr can be sent to stdout")
    # Resolved as subprocess resolves them, by a TextIOWrapper: the same
    # default encoding, and an unknown one raises LookupError before a start.
    if text_mode:
        probe = io.TextIOWrapper(io.BytesIO(), encoding=encoding, errors=errors)
        encoding, errors = probe.encoding, probe.errors
    if input is not None:
        if stdin is not None:
            raise ValueError("stdin and input arguments may not both be used.")
        stdin_data = _input_bytes(input, text_mode, encoding, errors)
    else:
        stdin_data = _stdin(stdin)
    merge = stderr == STDOUT
    call = _call.make_call(args, shell=shell, executable=executable, cwd=cwd, env=env,
                           stdin=stdin_data, merge_stderr=merge, new_session=start_new_session,
                           profile=profile, memory=memory, cpus=cpus, pids=pids, network=network,
                           timeout=timeout, toolchain=toolchain, changes=changes,
                           changes_dir=changes_dir)
    if _session is not None:
        # Session.run: the call goes to the session's server (socket).
        call.session, call.keep_running = _session
        call.workdir = cwd if cwd is None else os.fspath(cwd)
    out = _sink(stdout, "stdout")
    err = out if merge else _sink(stderr, "stderr")
    sinks = {"stdout": out, "stderr": err}

    def on_output(stream, data):
        sink = sinks.get(stream)
        if sink is not None and data:
            sink.write(data)

    try:
        kind, where = _call.choose_transport(socket, os.environ, os.getuid(), os.path.exists, shutil.which)
    except LookupError as e:
        raise JailError(str(e), cmd=call.argv) from None
    if kind == "server" and call.changes_dir is not None:
        raise JailError("changes_dir=%r: only the CLI takes it; the server at %s keeps its clients' "
                        "change sets in its own store: drop changes_dir, or pass no socket"
                        % (call.changes_dir, where), cmd=args)
    if timeout is not None and timeout <= 0:
        # subprocess starts the command and kills it at once (whether it ran
        # a little is a race there); the jail would race the same way. So,
        # deterministically, nothing starts, as if the kill came first.
        raise TimeoutExpired(args, timeout)
    transport = _transport.run_server if kind == "server" else _transport.run_cli
    try:
        raw = transport(where, call, on_output)
    except _transport.GaveUp:
        raise TimeoutExpired(args, timeout, out.partial(), _own_partial(err, out)) from None
    except JailError as e:
        e.cmd = args  # the caller's spelling, as subprocess's exceptions carry it
        raise
    report = Report(raw)
    changes_set = _change_set(raw, kind, where, call)
    what, value = _call.outcome(raw)
    if what == "timeout":
        # As subprocess's: bytes even with text=True, None when nothing came.
        e = TimeoutExpired(args, timeout, out.partial(), _own_partial(err, out), report)
        e.changes = changes_set
        raise e
    if what == "exec":
        # subprocess names the program it tried to exec: executable=, else args[0].
        raise exec_error(value, call.argv[0], report)
    if what == "error":
        raise JailError(value, cmd=args, code=raw.get("exit_code", _call.SETUP_FAILED), report=report)
    decode = _decoder(text_mode, encoding, errors)
    result = CompletedProcess(args, value, decode(out.value()), decode(_own(err, out)), report,
                              changes_set)
    if check:
        result.check_returncode()
    return result


def call(args, **kwargs):
    """Like subprocess.call: the returncode."""
    return run(args, **kwargs).returncode


def check_call(args, **kwargs):
    """Like subprocess.check_call: 0, or CalledProcessError."""
    run(args, check=True, **kwargs)
    return 0


def check_output(args, **kwargs):
    """Like subprocess.check_output: stdout, or CalledProcessError."""
    if "stdout" in kwargs:
        raise ValueError("stdout argument not allowed, it will be overridden.")
    if "check" in kwargs:
        raise ValueError("check argument not allowed, it will be overridden.")
    return run(args, stdout=PIPE, check=True, **kwargs).stdout


def _change_set(raw, kind, where, call):
    """The report's changes block as a ChangeSet that settles the set where it
    is kept: the server that ran it, or the CLI's store; None without one."""
    block = raw.get("changes")
    if not isinstance(block, dict):
        return None
    if kind == "server":
        return ChangeSet(block, Where(socket=where))
    return ChangeSet(block, Where(binary=where, changes_dir=call.changes_dir))


def _own(err, out):
    return None if err is out else err.value()


def _own_partial(err, out):
    return None if err is out else err.partial()


def _stdin(stdin):
    """The Call's stdin for subprocess's stdin= without input: None
    (/dev/null), b"" (PIPE: run closes it at once), or a descriptor."""
    if stdin is None or stdin == DEVNULL:
        # Not this process's stdin: an agent's stdin is often its own
        # protocol channel (MCP over stdio), which a command must not read.
        return None
    if stdin == PIPE:
        return b""
    if isinstance(stdin, bool) or not isinstance(stdin, int):
        if not hasattr(stdin, "fileno"):
            raise TypeError("stdin must be None, PIPE, DEVNULL, a file descriptor or a file object "
                            "with a descriptor, not %r" % (stdin,))
        stdin = stdin.fileno()
    if stdin < 0:
        raise ValueError("stdin=%d: not a file descriptor" % stdin)
    return stdin


def _input_bytes(data, text_mode, encoding, errors):
    if isinstance(data, str):
        if not text_mode:
            raise TypeError("input is a str: pass bytes, or text=True (or an encoding)")
        return data.encode(encoding, errors)
    try:
        return bytes(memoryview(data))
    except TypeError:
        raise TypeError("input must be bytes%s, not %s"
                        % (" or str" if text_mode else "", type(data).__name__)) from None


def _decoder(text_mode, encoding, errors):
    if not text_mode:
        return lambda b: b

    def decode(b):
        if b is None:
            return None
        # As subprocess's communicate (Popen._translate_newlines): the whole
        # output decoded at once, then universal newlines.
        return b.decode(encoding, errors).replace("\r\n", "\n").replace("\r", "\n")
    return decode


class _Sink:
    """Where one stream goes: collected (PIPE), dropped, or written as it comes."""

    def __init__(self, collects=False, writer=None):
        self.collects = collects
        self.writer = writer
        self.chunks = []

    def write(self, data):
        if self.collects:
            self.chunks.append(data)
        elif self.writer is not None:
            self.writer(data)

    def value(self):
        return b"".join(self.chunks) if self.collects else None

    def partial(self):
        """What a TimeoutExpired carries, as subprocess's: None when nothing
        was collected (not captured, or no output yet)."""
        return b"".join(self.chunks) if self.chunks else None


def _sink(dest, name):
    if dest is None:
        # Inherit: this process's sys.stdout/sys.stderr, looked up now so a
        # redirected stream (contextlib.redirect_stdout, a notebook) gets it.
        return _Sink(writer=_stream_writer(getattr(sys, name)))
    if dest == PIPE:
        return _Sink(collects=True)
    if dest == DEVNULL:
        return _Sink()
    if isinstance(dest, int):
        if dest < 0:
            raise ValueError("%s=%d: not a file descriptor" % (name, dest))
        return _Sink(writer=lambda b: _write_fd(dest, b))
    if hasattr(dest, "write"):
        return _Sink(writer=_stream_writer(dest))
    raise TypeError("%s must be None, PIPE, DEVNULL%s, a file descriptor or a file object, not %r"
                    % (name, ", STDOUT" if name == "stderr" else "", dest))


def _stream_writer(f):
    buffer = getattr(f, "buffer", None)
    try:
        fd = f.fileno() if buffer is None and not isinstance(f, io.TextIOBase) else None
    except (OSError, ValueError, AttributeError):
        fd = None

    def write(data):
        if buffer is not None:
            f.flush()
            buffer.write(data)
            buffer.flush()
        elif fd is not None:
            f.flush()
            _write_fd(fd, data)
        elif isinstance(f, io.TextIOBase):
            f.write(data.decode(getattr(f, "encoding", None) or "utf-8", "replace"))
        else:
            f.write(data)
    return write


def _write_fd(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
