"""The two ways to a jail: a `tooljail serve` socket, or the CLI with --report.
Both return the report dict and pass the command's exact output bytes to
on_output(stream, bytes) as they come."""

import base64
import fcntl
import json
import os
import selectors
import shutil
import socket as _socket
import struct
import subprocess
import tempfile
import time

from ._call import (MAX_PROFILE, SETUP_FAILED, cli_argv, cli_environ, is_profile_file, not_served,
                    server_request)
from ._errors import JailError

# subprocess's own Popen, taken before any patch_subprocess(): the CLI is
# started on the host, never through the patch.
_Popen = subprocess.Popen

# How long past the jail's own timeout the client waits for the report before
# it gives up: the jail kills the tree at the timeout and reports at once, so
# only a stuck server or CLI ever uses this margin.
MARGIN_SECONDS = 5.0
CONNECT_SECONDS = 5.0

# Reads of the CLI's pipes take up to this much at once, from pipes made this
# large (F_SETPIPE_SZ, where the host allows it): 16 MiB of output is 16 reads,
# not the 512 of subprocess's 32 KiB, and the relay in tooljail blocks less.
CHUNK = 1 << 20
_F_SETPIPE_SZ = 1031

# What the client keeps of the CLI's stderr for the message when it refuses a
# run (it prints no report then): its last line is the reason.
_STDERR_TAIL = 8192


class GaveUp(Exception):
    """No report within the timeout plus the margin."""


def _client_timeout(call):
    if call.timeout is None:
        return None
    return max(call.timeout, 0) + MARGIN_SECONDS


def report_dir(workdir):
    """A private directory for the report, outside the workdir (tooljail
    refuses a report inside the run's read-write binds)."""
    workdir = os.path.realpath(workdir)
    for base in (None, os.environ.get("XDG_RUNTIME_DIR"), "/dev/shm", "/tmp"):
        if base is not None and not os.path.isdir(base):
            continue
        d = tempfile.mkdtemp(prefix="tooljail-report-", dir=base)
        real = os.path.realpath(d)
        if real != workdir and not real.startswith(workdir.rstrip("/") + "/"):
            return d
        os.rmdir(d)
    raise JailError("no directory for the report outside the workdir %s: set TMPDIR" % workdir)


def read_report(path):
    """The report tooljail wrote to path, or None when there is none (it
    refused the run before it, or was killed)."""
    try:
        with open(path, "rb") as f:
            raw = json.loads(f.read())
    except (OSError, ValueError):
        return None
    return raw if isinstance(raw, dict) and "status" in raw else None


def read_fd(fd):
    """All of fd from its current offset, as the command would read it."""
    chunks = []
    while True:
        chunk = os.read(fd, CHUNK)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def run_cli(binary, call, on_output):
    tmp = report_dir(call.workdir)
    try:
        path = os.path.join(tmp, "report.json")
        code, tail = _run_cli(binary, call, path, on_output)
        report = read_report(path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if report is None:
        # Refused before a run (bad flag, unknown profile, refused workdir):
        # the CLI says why on stderr and writes no report.
        lines = tail.decode("utf-8", "replace").strip().splitlines()
        message = lines[-1] if lines else "tooljail exited %d without a report" % code
        if message.startswith("tooljail: "):
            message = message[len("tooljail: "):]
        raise JailError(message, cmd=call.argv, code=code or SETUP_FAILED)
    return report


def _run_cli(binary, call, report, on_output):
    """Runs the CLI, relaying its stdout and stderr to on_output as they come
    and feeding it call.stdin; its exit code and the tail of its stderr."""
    if call.stdin is None:
        stdin = subprocess.DEVNULL
    elif isinstance(call.stdin, int):
        stdin = call.stdin  # the caller's descriptor, as subprocess passes it
    else:
        stdin = subprocess.PIPE
    try:
        proc = _Popen(cli_argv(binary, call, report), stdin=stdin, stdout=subprocess.PIPE,
                      stderr=subprocess.PIPE, env=cli_environ(call.env, os.environ),
                      start_new_session=call.new_session)
    except OSError as e:
        raise JailError(
            "cannot start the tooljail CLI %s: %s; set TOOLJAIL_BIN to the tooljail binary"
            % (binary, e.strerror or e), cmd=call.argv
        ) from None
    limit = _client_timeout(call)
    deadline = None if limit is None else time.monotonic() + limit
    try:
        tail = _relay(proc, call.stdin if isinstance(call.stdin, bytes) else None, on_output, deadline)
        code = proc.wait(None if deadline is None else max(deadline - time.monotonic(), 0))
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise GaveUp() from None
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    finally:
        for f in (proc.stdin, proc.stdout, proc.stderr):
            if f is not None:
                f.close()
    return code, tail


def _relay(proc, data, on_output, deadline):
    """subprocess's communicate, with each chunk passed on as it comes and
    nothing joined here. GaveUp past the deadline."""
    names = {proc.stdout.fileno(): "stdout", proc.stderr.fileno(): "stderr"}
    tail = b""
    with selectors.PollSelector() as sel:
        for fd in names:
            try:
                fcntl.fcntl(fd, _F_SETPIPE_SZ, CHUNK)
            except OSError:
                pass  # above /proc/sys/fs/pipe-max-size: the default size works too
            sel.register(fd, selectors.EVENT_READ)
        view = None
        if proc.stdin is not None:
            if data:
                view = memoryview(data)
                os.set_blocking(proc.stdin.fileno(), False)
                sel.register(proc.stdin.fileno(), selectors.EVENT_WRITE)
            else:
                proc.stdin.close()
        while sel.get_map():
            timeout = None
            if deadline is not None:
                timeout = deadline - time.monotonic()
                if timeout <= 0:
                    raise subprocess.TimeoutExpired(proc.args, 0)
            for key, _ in sel.select(timeout):
                fd = key.fd
                if fd in names:
                    chunk = os.read(fd, CHUNK)
                    if not chunk:
                        sel.unregister(fd)
                        continue
                    if names[fd] == "stderr":
                        tail = (tail + chunk)[-_STDERR_TAIL:]
                    on_output(names[fd], chunk)
                    continue
                try:
                    view = view[os.write(fd, view[:CHUNK]):]
                except BlockingIOError:
                    continue
                except BrokenPipeError:
                    view = view[:0]  # the command stopped reading: as subprocess, not an error
                if not view:
                    sel.unregister(fd)
                    proc.stdin.close()
    return tail


def _check_server(sock, path, call):
    """Refuse a server that runs as neither this user nor root: anybody can put a
    socket at a path in /tmp first, and would then get the command, its env and
    input, and answer with a made-up report."""
    try:
        cred = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, struct.calcsize("3i"))
        _pid, uid, _gid = struct.unpack("3i", cred)
    except OSError as e:
        raise JailError("cannot tell who runs the server at %s (%s); refusing to send it the command"
                        % (path, e.strerror or e), cmd=call.argv) from None
    own = os.geteuid()
    if uid not in (own, 0):
        raise JailError("the socket %s is served by uid %d, neither this user (%d) nor root: it is "
                        "not your server; refusing to send it the command" % (path, uid, own),
                        cmd=call.argv)


def run_server(path, call, on_output):
    """A profile file goes by name first (the server may serve that file under
    the same string); a server that serves no such profile gets its text, as
    `tooljail run --server --profile FILE` does. A stdin descriptor is read to
    its end first: the request carries the whole stdin."""
    stdin = read_fd(call.stdin) if isinstance(call.stdin, int) else call.stdin
    try:
        return _run_server(path, call, on_output, None, stdin)
    except JailError as e:
        if not (is_profile_file(call.profile) and not_served(e.message, call.profile)):
            raise
    return _run_server(path, call, on_output, read_profile(call), stdin)


def read_profile(call):
    """The text of the call's profile file, read here: the server reads no file
    of the client's. One inside the workdir is refused: the command could
    rewrite it for the next run, and a server cannot bind it read-only."""
    path = os.path.abspath(call.profile)
    workdir = call.workdir.rstrip("/") + "/"
    if call.workdir and (path + "/").startswith(workdir):
        raise JailError("profile %s: inside the run's workdir %s, where the command could rewrite "
                        "it for the next run sent to a server; keep the profile outside the workdir"
                        % (call.profile, call.workdir), cmd=call.argv)
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_PROFILE + 1)
    except OSError as e:
        raise JailError("profile %s: %s" % (call.profile, e.strerror or e), cmd=call.argv) from None
    if len(data) > MAX_PROFILE:
        raise JailError("profile %s: larger than 1 MiB; a profile is a small TOML file"
                        % call.profile, cmd=call.argv)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise JailError("profile %s: not UTF-8 text" % call.profile, cmd=call.argv) from None


def _run_server(path, call, on_output, profile_text, stdin):
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    reader = None
    try:
        sock.settimeout(CONNECT_SECONDS)
        try:
            sock.connect(path)
        except OSError as e:
            raise JailError(
                "cannot reach the tooljail server at %s: %s; start it with "
                "`tooljail serve --socket %s`, or pass another socket (socket=, TOOLJAIL_SERVER)"
                % (path, e.strerror or e, path), cmd=call.argv
            ) from None
        _check_server(sock, path, call)
        limit = _client_timeout(call)
        deadline = None if limit is None else time.monotonic() + limit
        line = json.dumps(server_request(call, profile_text, stdin), separators=(",", ":")).encode("utf-8") + b"\n"
        try:
            sock.settimeout(limit)
            sock.sendall(line)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server refused early; its error line says why
        except _socket.timeout:
            raise GaveUp() from None
        # Big reads: a 64 KiB chunk is a line of 87 KiB, 11 reads of the
        # default 8 KiB buffer.
        reader = sock.makefile("rb", buffering=CHUNK)
        while True:
            if deadline is not None:
                sock.settimeout(max(deadline - time.monotonic(), 0.001))
            else:
                sock.settimeout(None)
            try:
                raw = reader.readline()
            except _socket.timeout:
                raise GaveUp() from None
            except OSError as e:
                raise JailError("reading from the tooljail server at %s: %s" % (path, e), cmd=call.argv) from None
            if not raw.endswith(b"\n"):
                raise JailError(
                    "the tooljail server at %s closed the connection before its report "
                    "(did it stop or crash? see its log)" % path, cmd=call.argv
                )
            try:
                msg = json.loads(raw)
            except ValueError:
                raise JailError("the tooljail server at %s sent a line that is not JSON: %.200r"
                                % (path, raw), cmd=call.argv) from None
            if not isinstance(msg, dict):
                raise JailError("the tooljail server at %s sent %.200r, not an object" % (path, raw), cmd=call.argv)
            if "stream" in msg:
                on_output(msg["stream"], base64.b64decode(msg.get("data", "")))
            elif "error" in msg:
                err = msg["error"] or {}
                raise JailError(str(err.get("message", "the server refused the request")),
                                cmd=call.argv, code=err.get("code", SETUP_FAILED))
            elif "status" in msg:
                return msg
            else:
                raise JailError("the tooljail server at %s sent %.200r: neither output, an error "
                                "nor a report" % (path, raw), cmd=call.argv)
    finally:
        if reader is not None:
            reader.close()
        sock.close()
