"""The two ways to a jail: a `tooljail serve` socket, or the CLI with --json.
Both return the report dict and pass the command's output to on_output(stream,
bytes): the server as the chunks come, the CLI from the report's text at the end."""

import base64
import json
import os
import socket as _socket
import struct
import subprocess
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


class GaveUp(Exception):
    """No report within the timeout plus the margin."""


def _client_timeout(call):
    if call.timeout is None:
        return None
    return max(call.timeout, 0) + MARGIN_SECONDS


def run_cli(binary, call, on_output):
    argv = cli_argv(binary, call)
    try:
        proc = _Popen(
            argv,
            stdin=subprocess.PIPE if call.stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=cli_environ(call.env, os.environ),
        )
    except OSError as e:
        raise JailError(
            "cannot start the tooljail CLI %s: %s; set TOOLJAIL_BIN to the tooljail binary"
            % (binary, e), cmd=call.argv
        ) from None
    try:
        out, err = proc.communicate(call.stdin, timeout=_client_timeout(call))
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise GaveUp() from None
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    try:
        report = json.loads(out)
        if not isinstance(report, dict) or "status" not in report:
            raise ValueError("not a report")
    except ValueError:
        # Refused before a run (bad flag, unknown profile, refused workdir):
        # the CLI says why on stderr and prints no report.
        lines = err.decode("utf-8", "replace").strip().splitlines()
        message = lines[-1] if lines else "tooljail exited %d without a report" % proc.returncode
        if message.startswith("tooljail: "):
            message = message[len("tooljail: "):]
        raise JailError(message, cmd=call.argv, code=proc.returncode or SETUP_FAILED) from None
    for stream in ("stdout", "stderr"):
        text = (report.get(stream) or {}).get("text")
        if text:
            on_output(stream, text.encode("utf-8"))
    return report


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
    `tooljail run --server --profile FILE` does."""
    try:
        return _run_server(path, call, on_output, None)
    except JailError as e:
        if not (is_profile_file(call.profile) and not_served(e.message, call.profile)):
            raise
    return _run_server(path, call, on_output, read_profile(call))


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


def _run_server(path, call, on_output, profile_text):
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
        line = json.dumps(server_request(call, profile_text), separators=(",", ":")).encode("utf-8") + b"\n"
        try:
            sock.settimeout(limit)
            sock.sendall(line)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server refused early; its error line says why
        except _socket.timeout:
            raise GaveUp() from None
        reader = sock.makefile("rb")
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
