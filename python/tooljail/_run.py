"""run, call, check_call, check_output: subprocess's functions, jailed."""

import io
import locale
import os
import shutil
import subprocess
import sys

from . import _call, _transport
from ._errors import CompletedProcess, JailError, TimeoutExpired
from ._report import Report

PIPE = subprocess.PIPE
STDOUT = subprocess.STDOUT
DEVNULL = subprocess.DEVNULL


def run(args, *, input=None, capture_output=False, stdout=None, stderr=None, shell=False,
        text=False, encoding=None, errors=None, timeout=None, check=False, cwd=None, env=None,
        profile=None, memory=None, cpus=None, pids=None, network=None, socket=None):
    """Runs args in a jail and waits for it, like subprocess.run.

    Differences from subprocess.run, all because the jail builds the process:
    - env is added over the profile's environment (PATH, HOME, LANG, TERM and
      the profile's env.set); it does not replace it, and this process's
      environment never reaches the command.
    - cwd is the workdir: bound read-write and the command's working
      directory; default the current directory (refused when it is /, a system
      or top-level directory or a home directory).
    - stdin is /dev/null unless input is given.
    - timeout is the jail's wall-clock limit: the whole process tree is killed.
    - A command that cannot be executed or is not found gives returncode 126 or
      127 (as a shell does), not an OSError; report.reason says why.
    - JailError when tooljail could not run the command at all.
    """
    text_mode = bool(text or encoding or errors)
    if capture_output:
        if stdout is not None or stderr is not None:
            raise ValueError("stdout and stderr arguments may not be used with capture_output.")
        stdout = stderr = PIPE
    if stdout == STDOUT:
        raise ValueError("stdout=STDOUT: only stderr can be sent to stdout")
    stdin = _input_bytes(input, text_mode, encoding, errors)
    call = _call.make_call(args, shell=shell, cwd=cwd, env=env, stdin=stdin, profile=profile,
                           memory=memory, cpus=cpus, pids=pids, network=network, timeout=timeout)
    out = _sink(stdout, "stdout")
    err = out if stderr == STDOUT else _sink(stderr, "stderr")
    sinks = {"stdout": out, "stderr": err}

    def on_output(stream, data):
        sink = sinks.get(stream)
        if sink is not None and data:
            sink.write(data)

    try:
        kind, where = _call.choose_transport(socket, os.environ, os.getuid(), os.path.exists, shutil.which)
    except LookupError as e:
        raise JailError(str(e), cmd=call.argv) from None
    transport = _transport.run_server if kind == "server" else _transport.run_cli
    decode = _decoder(text_mode, encoding, errors)
    try:
        raw = transport(where, call, on_output)
    except _transport.GaveUp:
        # As subprocess's, the partial output is bytes even with text=True.
        raise TimeoutExpired(args, timeout, out.value(), _own(err, out)) from None
    except JailError as e:
        e.cmd = args  # the caller's spelling, as subprocess's exceptions carry it
        raise
    report = Report(raw)
    # A truncated stream: the report keeps the head and the tail with a
    # marker; the stream carried only what was relayed. Take the report's.
    for name, sink in (("stdout", out), ("stderr", None if err is out else err)):
        part = raw.get(name) or {}
        if sink is not None and sink.collects and part.get("truncated") and "text" in part:
            sink.chunks = [part["text"].encode("utf-8")]
    what, value = _call.outcome(raw)
    if what == "timeout":
        raise TimeoutExpired(args, timeout, out.value(), _own(err, out), report)
    if what == "error":
        raise JailError(value, cmd=args, code=raw.get("exit_code", _call.SETUP_FAILED), report=report)
    result = CompletedProcess(args, value, decode(out.value()), decode(_own(err, out)), report)
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


def _own(err, out):
    return None if err is out else err.value()


def _input_bytes(data, text_mode, encoding, errors):
    if data is None:
        return None
    if isinstance(data, str):
        if not text_mode:
            raise TypeError("input is a str: pass bytes, or text=True (or an encoding)")
        return data.encode(encoding or locale.getpreferredencoding(False), errors or "strict")
    try:
        return bytes(memoryview(data))
    except TypeError:
        raise TypeError("input must be bytes%s, not %s"
                        % (" or str" if text_mode else "", type(data).__name__)) from None


def _decoder(text_mode, encoding, errors):
    if not text_mode:
        return lambda b: b
    enc = encoding or locale.getpreferredencoding(False)
    err = errors or "strict"

    def decode(b):
        if b is None:
            return None
        # subprocess reads text through universal newlines.
        return b.decode(enc, err).replace("\r\n", "\n").replace("\r", "\n")
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
