"""tooljail.Session: one jail a tooljail server keeps across calls.

    with tooljail.Session(cwd="/home/me/proj") as s:
        s.run(["sh", "-c", "python3 -m http.server 8000 &"], keep_running=True)
        r = s.run(["curl", "-s", "localhost:8000"], capture_output=True)

Each call is tooljail.run's (the same keywords and results) in the session's
jail: its /tmp, HOME and the processes a call kept stay between calls. The
jail's own options (profile, cwd as the workdir, memory, cpus, pids,
network, toolchain) are the session's, given when it starts. See
docs/sessions.md.
"""

import json
import os
import socket as _socket

from . import _call, _patch, _run, _transport
from ._errors import JailError

# What the session's start decided: a call may not set them.
_SESSION_OPTIONS = ("profile", "memory", "cpus", "pids", "network", "toolchain", "changes",
                    "changes_dir", "socket")


class Session:
    """A session of a tooljail server (socket=, TOOLJAIL_SERVER, or the default
    socket): the jail of profile with cwd (default the current directory) as
    its workdir and the given limits, kept until stop() (or the with block's
    end), idle seconds without a call, max_life seconds after its start, or
    the server's end. Without detach the session is tied to this object's
    connection: it also ends if this process dies. JailError when no server
    can start it."""

    def __init__(self, *, profile=None, cwd=None, memory=None, cpus=None, pids=None, network=None,
                 toolchain=None, socket=None, idle=None, max_life=None, detach=False):
        try:
            kind, where = _call.choose_transport(socket, os.environ, os.getuid(), os.path.exists,
                                                 lambda name: None)
        except LookupError:
            kind, where = None, None
        if kind != "server":
            raise JailError("tooljail.Session: a session lives in a tooljail server, and none was found "
                            "(no socket=, TOOLJAIL_SERVER unset, no default socket at %s): start one "
                            "with `tooljail serve`" % _call.default_socket(os.environ, os.getuid()))
        self.socket = where
        self.id = None
        self.info = None
        self.result = None
        self._conn = None
        call = _call.make_call(["(session)"], cwd=cwd, profile=profile, memory=memory, cpus=cpus,
                               pids=pids, network=network, toolchain=toolchain)
        if "auto" in call.toolchains:
            raise ValueError('toolchain="auto" finds the toolchain of a command, and a session has '
                             "none when it starts: name the prefixes")
        req = _call.server_request(call)
        for key in ("argv", "stream", "path"):
            req.pop(key, None)
        op = {"action": "start"}
        if idle is not None:
            op["idle"] = _call.duration(idle)
        if max_life is not None:
            op["max_life"] = _call.duration(max_life)
        if detach:
            op["detach"] = True
        req["session_op"] = op
        if profile is not None and _call.is_profile_file(call.profile):
            req.pop("profile", None)
            req["profile_toml"] = _transport.read_profile(call)
        answer, conn = self._request(req, keep=not detach)
        self.info = answer["session"]
        self.id = self.info["id"]
        self._conn = conn

    def _request(self, req, keep=False):
        """Sends one request line; returns its answer object, and the
        connection when keep (an attached start), else closes it."""
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            sock.settimeout(_transport.CONNECT_SECONDS)
            try:
                sock.connect(self.socket)
            except OSError as e:
                raise JailError("cannot reach the tooljail server at %s: %s; start it with "
                                "`tooljail serve --socket %s`" % (self.socket, e.strerror or e, self.socket)) from None
            _transport._check_server(sock, self.socket, _call.Call(["(session)"], "", {}, None, None, {}, None, None))
            sock.settimeout(300)
            sock.sendall(json.dumps(req, separators=(",", ":")).encode("utf-8") + b"\n")
            line = b""
            while not line.endswith(b"\n"):
                chunk = sock.recv(65536)
                if not chunk:
                    raise JailError("the tooljail server at %s closed the connection before its answer"
                                    % self.socket)
                line += chunk
            msg = json.loads(line)
            if "error" in msg:
                err = msg["error"] or {}
                raise JailError(str(err.get("message", "the server refused the request")),
                                code=err.get("code", _call.SETUP_FAILED))
            if keep:
                sock.settimeout(None)
                conn, sock = sock, None
                return msg, conn
            return msg, None
        finally:
            if sock is not None:
                sock.close()

    def _call_options(self, kwargs):
        for key in _SESSION_OPTIONS:
            if key in kwargs:
                raise TypeError("Session call got %s=: the session's start decides it (the jail is "
                                "the session's); start a session with it instead" % key)
        cwd = kwargs.get("cwd")
        if cwd is not None and not os.path.isabs(os.fspath(cwd)):
            raise ValueError("cwd=%r: a session call's working directory is an absolute path in its "
                             "jail (the session's workdir is at its own path)" % (cwd,))

    def run(self, args, *, keep_running=False, **kwargs):
        """tooljail.run(args, **kwargs) in the session: the same keywords (but
        the jail's own options) and results. cwd is the call's working
        directory in the jail (default the session's workdir); keep_running
        keeps what the command leaves running (a server it started with &)
        until the session stops, where otherwise it is killed when the
        command ends."""
        if self.id is None or self.result is not None:
            raise JailError("tooljail.Session: the session has stopped; start a new one", cmd=args)
        self._call_options(kwargs)
        return _run.run(args, socket=self.socket, _session=(self.id, bool(keep_running)), **kwargs)

    def popen(self, args, *, keep_running=False, **kwargs):
        """A Popen (tooljail.JailedPopen, patch_subprocess's) of a call in the
        session: subprocess.Popen's keywords but the jail's own options; cwd
        as for run. The session's server reads all of stdin before the call
        starts, as `tooljail run --server` does."""
        if self.id is None or self.result is not None:
            raise JailError("tooljail.Session: the session has stopped; start a new one", cmd=args)
        self._call_options(kwargs)
        flags = ["--session", self.id, "--server", self.socket]
        if keep_running:
            flags.append("--keep-running")
        cwd = kwargs.pop("cwd", None)
        if cwd is not None:
            flags += ["--workdir", os.fspath(cwd)]
        cfg = _patch._Config(tuple(flags), None, None, None, session_server=self.socket)
        return _patch.popen_with(cfg, args, **kwargs)

    def stop(self):
        """Stops the session, killing what is left in it; returns its final
        report (a dict: calls, stopped_for, the cgroup's figures, the denied
        calls of kept processes). Later calls return the same."""
        if self.result is not None or self.id is None:
            return self.result
        try:
            msg, _ = self._request({"session_op": {"action": "stop", "id": self.id}})
            self.result = msg["session"]
        except JailError:
            # Already gone (idle, max life, the server's end): nothing is left.
            self.result = {"id": self.id, "stopped_for": "ended"}
        finally:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
        return self.result

    close = stop

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def __repr__(self):
        return "tooljail.Session(id=%r, socket=%r)" % (self.id, self.socket)
