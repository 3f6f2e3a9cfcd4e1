"""Change sets (--changes): the report's ``changes`` block, and apply/discard
of a kept set through the server that ran it or through the CLI.

A run with ``changes="review"`` leaves the project untouched and keeps what
the command wrote as a change set; ``result.changes`` shows it, and
``result.changes.apply()`` or ``.discard()`` settles it (docs/changes.md).
"""

import json
import re
import socket as _socket
import struct
import subprocess

from ._errors import JailError
from ._report import Report

# The modes, in the order the docs give them (changes.Modes).
MODES = ("off", "record", "review", "apply-on-success")

# A change set's id: 16 random bytes in lowercase hex.
_ID = re.compile(r"\A[0-9a-f]{32}\Z")

# The actions of a changes_op request (docs/serve.md, "Change sets").
ACTIONS = ("list", "show", "diff", "apply", "discard")

CONNECT_SECONDS = 5.0
# An apply of a large set or a diff of large files can take a while; a
# server that says nothing for this long is taken as stuck.
ANSWER_SECONDS = 600.0


def check_mode(value):
    """changes= as the jail spells it; None stays None (the profile's mode)."""
    if value is None:
        return None
    if not isinstance(value, str) or value not in MODES:
        raise ValueError("changes=%r: want one of %s" % (value, ", ".join(repr(m) for m in MODES)))
    return value


def check_id(value):
    if not isinstance(value, str) or not _ID.match(value):
        raise ValueError("change set id %r: want the 32 lowercase hex digits a report's changes.id gives"
                         % (value,))
    return value


class ChangesConflict(JailError):
    """apply found paths changed on the host since the run (someone edited
    them, or another set was applied): nothing was applied. ``conflicts`` is
    the list of Report views with ``bind``, ``path`` and ``why``; apply again
    with force=True to overwrite them."""

    def __init__(self, message, id=None, conflicts=()):
        super().__init__(message, code=1)
        self.id = id
        self.conflicts = [c if isinstance(c, Report) else Report(c) for c in conflicts]


def conflict_message(id, conflicts):
    """What ChangesConflict says: each conflicting path and why."""
    named = "; ".join("%s%s: %s" % (c.get("bind", "").rstrip("/") + "/" if c.get("bind") else "",
                                    c.get("path", "?"), c.get("why", "changed"))
                      for c in conflicts)
    return ("change set %s: %d path%s changed on the host since the run (%s); nothing was applied: "
            "look at them, then apply(force=True) to overwrite them, or discard()"
            % (id, len(conflicts), "" if len(conflicts) == 1 else "s", named))


class Where:
    """Where a change set lives: the server that ran it (socket), or the
    store the CLI used (binary and changes_dir, None for its default)."""

    __slots__ = ("socket", "binary", "changes_dir")

    def __init__(self, socket=None, binary=None, changes_dir=None):
        self.socket = socket
        self.binary = binary
        self.changes_dir = changes_dir

    def __repr__(self):
        if self.socket is not None:
            return "Where(socket=%r)" % (self.socket,)
        return "Where(binary=%r, changes_dir=%r)" % (self.binary, self.changes_dir)


def cli_argv(binary, action, id=None, changes_dir=None, force=False, path=None):
    """`tooljail changes ACTION ...` with --json (diff prints text)."""
    argv = [binary, "changes", action]
    if id is not None:
        argv.append(id)
    if action == "diff" and path:
        argv.append(path)
    if action != "diff":
        argv.append("--json")
    if force:
        argv.append("--force")
    if changes_dir is not None:
        argv += ["--changes-dir", changes_dir]
    return argv


def op_request(action, id=None, force=False, path=None):
    """The server's changes_op request object (docs/serve.md)."""
    if action not in ACTIONS:
        raise ValueError("changes action %r: want one of %s" % (action, ", ".join(ACTIONS)))
    op = {"action": action}
    if id is not None:
        op["id"] = check_id(id)
    if force:
        op["force"] = True
    if path:
        op["path"] = path
    return {"changes_op": op}


def answer(action, id, msg):
    """The result of a server's answer line (a dict): the "changes" value;
    ChangesConflict or JailError for an error line."""
    if not isinstance(msg, dict):
        raise JailError("the tooljail server answered %.200r, not an object" % (msg,))
    if "error" in msg:
        err = msg["error"] or {}
        if err.get("conflicts"):
            raise ChangesConflict(conflict_message(id, err["conflicts"]), id, err["conflicts"])
        raise JailError(str(err.get("message", "the server refused the request")),
                        code=err.get("code", 125))
    if "changes" not in msg:
        raise JailError("the tooljail server answered %.200r: neither a result nor an error" % (msg,))
    return msg["changes"]


def cli_result(action, id, code, out, err):
    """The result of `tooljail changes ACTION --json`: its JSON (a diff: its
    text). Exit 1 from apply is a conflict: nothing applied, each named."""
    text = err.decode("utf-8", "replace").strip()
    if action == "apply" and code == 1:
        try:
            data = json.loads(out)
        except ValueError:
            data = None
        conflicts = _conflicts_of(data)
        if conflicts:
            raise ChangesConflict(conflict_message(id, conflicts), id, conflicts)
        raise ChangesConflict(_last_line(text) or "change set %s: conflicts; nothing was applied" % id, id)
    if code != 0:
        raise JailError(_last_line(text) or "tooljail changes %s exited %d" % (action, code), code=code)
    if action == "diff":
        return out.decode("utf-8", "replace")
    try:
        return json.loads(out)
    except ValueError:
        raise JailError("tooljail changes %s --json printed no JSON: %.200r" % (action, out)) from None


def _conflicts_of(data):
    """The conflicts a JSON answer names, wherever the CLI puts them: at the
    top ({"conflicts": [...]}) or in an error object."""
    if isinstance(data, dict):
        if isinstance(data.get("conflicts"), list) and data["conflicts"]:
            return data["conflicts"]
        err = data.get("error")
        if isinstance(err, dict) and isinstance(err.get("conflicts"), list):
            return err["conflicts"]
    return []


def _last_line(text):
    lines = text.splitlines()
    line = lines[-1] if lines else ""
    return line[len("tooljail: "):] if line.startswith("tooljail: ") else line


def run_op(where, action, id=None, force=False, path=None):
    """Does a changes action where the set lives; its result (parsed JSON,
    a diff's text)."""
    if id is not None:
        check_id(id)
    if where.socket is not None:
        return answer(action, id, _server_op(where.socket, op_request(action, id, force, path)))
    if not where.binary:
        raise JailError("no tooljail binary to act on change set %s: set TOOLJAIL_BIN" % id)
    from ._transport import _Popen
    argv = cli_argv(where.binary, action, id, where.changes_dir, force, path)
    try:
        proc = _Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as e:
        raise JailError("cannot start the tooljail CLI %s: %s" % (where.binary, e.strerror or e)) from None
    out, err = proc.communicate()
    return cli_result(action, id, proc.returncode, out, err)


def _server_op(path, request):
    from ._transport import _check_server
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(CONNECT_SECONDS)
        try:
            sock.connect(path)
        except OSError as e:
            raise JailError("cannot reach the tooljail server at %s: %s; the change set is kept by "
                            "the server that ran it" % (path, e.strerror or e)) from None
        _check_server(sock, path, _NoCall)
        sock.settimeout(ANSWER_SECONDS)
        sock.sendall(json.dumps(request, separators=(",", ":")).encode("utf-8") + b"\n")
        with sock.makefile("rb") as reader:
            raw = reader.readline()
        if not raw.endswith(b"\n"):
            raise JailError("the tooljail server at %s closed the connection before its answer" % path)
        try:
            return json.loads(raw)
        except ValueError:
            raise JailError("the tooljail server at %s sent a line that is not JSON: %.200r" % (path, raw)) from None
    except _socket.timeout:
        raise JailError("the tooljail server at %s did not answer within %ds" % (path, ANSWER_SECONDS)) from None
    finally:
        sock.close()


class _NoCall:
    argv = None


class ChangeSet(Report):
    """The report's ``changes`` block (docs/report.md): ``mode``,
    ``recorded``, ``reason``, ``id``, ``state`` ("kept", "applied",
    "empty", "conflict", "failed"), ``entries`` (each with ``bind``,
    ``path``, ``kind``, ``type``, ``size``, ``sha256``, ``mode``...),
    ``totals``, ``truncated``, ``conflicts``.

    A kept set (``id`` not None) is settled with apply() or discard(),
    through the server that ran it, else the CLI and the same store."""

    __slots__ = ("where",)

    def __init__(self, raw, where=None):
        super().__init__(raw)
        object.__setattr__(self, "where", where or Where())

    def __reduce__(self):
        return ChangeSet, (self.raw, self.where)

    @property
    def id(self):
        return self.raw.get("id") or None

    @property
    def state(self):
        return self.raw.get("state")

    @property
    def entries(self):
        return [Report(e) for e in self.raw.get("entries") or []]

    def _need_id(self, what):
        if self.id is None:
            raise JailError("%s: this run kept no change set (state %r%s)"
                            % (what, self.state, ": " + self.raw["reason"] if self.raw.get("reason") else ""))
        return self.id

    def apply(self, force=False):
        """Writes the set onto the host as one transaction; the result
        (``applied``, ``skipped``: entries apply never writes, protected or
        special files). ChangesConflict when a path changed on the host since
        the run: nothing is applied unless force=True."""
        return Report(run_op(self.where, "apply", self._need_id("apply"), force=bool(force)))

    def discard(self):
        """Throws the set away; the host was never touched."""
        return Report(run_op(self.where, "discard", self._need_id("discard")))

    def show(self):
        """The whole kept set: every entry (the report caps them) with its
        baseline, and the run's metadata."""
        return Report(run_op(self.where, "show", self._need_id("show")))

    def diff(self, path=None):
        """A unified diff of the set's text files (a line for a binary one);
        path picks one entry ("PATH", or "DEST/PATH" for one bind)."""
        result = run_op(self.where, "diff", self._need_id("diff"), path=path)
        if isinstance(result, dict):
            return result.get("diff", "")
        return result

    def __repr__(self):
        return "ChangeSet(id=%r, state=%r, entries=%d)" % (self.id, self.state,
                                                           len(self.raw.get("entries") or []))


def change_set(id, *, socket=None, changes_dir=None):
    """A kept change set by its id, as ``show`` gives it, with apply() and
    discard(): through the server at socket, else the CLI (changes_dir: its
    store, default the user's)."""
    from . import _call
    import os
    import shutil
    check_id(id)
    if socket is not None:
        where = Where(socket=os.fspath(socket))
    else:
        binary = _call.find_binary(os.environ, _call.bundled(), shutil.which)
        where = Where(binary=binary, changes_dir=changes_dir)
    shown = run_op(where, "show", id)
    block = dict(shown) if isinstance(shown, dict) else {}
    block.setdefault("id", id)
    if "changes" in block and "entries" not in block:
        block["entries"] = block.pop("changes")
    return ChangeSet(block, where)
