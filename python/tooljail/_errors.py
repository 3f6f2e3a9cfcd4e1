"""Result and exception types: subprocess's own, with the jail's report attached.

They subclass subprocess's classes so that code written for subprocess
(``except subprocess.CalledProcessError``, ``except subprocess.TimeoutExpired``)
keeps working unchanged when it switches to tooljail.
"""

import errno as _errno
import os
import subprocess


class CompletedProcess(subprocess.CompletedProcess):
    """subprocess.CompletedProcess plus ``report``, the jail's report, and
    ``changes``, the change set of a run with changes= (None without)."""

    def __init__(self, args, returncode, stdout=None, stderr=None, report=None, changes=None):
        super().__init__(args, returncode, stdout, stderr)
        self.report = report
        self.changes = changes

    def __repr__(self):
        return super().__repr__()[:-1] + ", status=%r)" % (
            self.report.status if self.report is not None else None
        )

    def check_returncode(self):
        if self.returncode:
            raise CalledProcessError(
                self.returncode, self.args, self.stdout, self.stderr, self.report, self.changes
            )


class CalledProcessError(subprocess.CalledProcessError):
    """Raised by check=True for a non-zero exit; ``report`` says why;
    ``changes`` is the run's change set (kept for review), or None."""

    def __init__(self, returncode, cmd, output=None, stderr=None, report=None, changes=None):
        super().__init__(returncode, cmd, output, stderr)
        self.report = report
        self.changes = changes

    def __str__(self):
        text = super().__str__()
        reason = self.report.get("reason") if self.report is not None else None
        return "%s (%s)" % (text, reason) if reason else text


class TimeoutExpired(subprocess.TimeoutExpired):
    """The jail's wall-clock limit ended the run (its whole process tree was
    killed), or no answer came within the client's safety margin after it.

    ``output``/``stderr`` hold what the command wrote before it was killed
    (bytes, even with text=True, as subprocess gives them);
    ``report`` is the jail's report, or None when the client gave up waiting.
    """

    def __init__(self, cmd, timeout, output=None, stderr=None, report=None):
        super().__init__(cmd, timeout, output, stderr)
        self.report = report
        self.changes = None  # a run with changes=: its change set, kept

    def __str__(self):
        text = super().__str__()
        if self.report is None:
            if self.timeout is not None and self.timeout <= 0:
                return text + " (nothing was started: the timeout had passed before the start)"
            return text + " (no report: the client stopped waiting for the jail)"
        return text


class JailError(subprocess.SubprocessError):
    """tooljail could not run the command (its exit code 125): a bad profile or
    limit, a refused workdir, a layer this host cannot enforce, a server that
    refused the request or cannot be reached.

    ``code`` is the exit code tooljail gave (125 unless the CLI said otherwise),
    ``report`` the report when there is one (None for a refused request).
    """

    def __init__(self, message, cmd=None, code=125, report=None):
        super().__init__(message)
        self.message = message
        self.cmd = cmd
        self.code = code
        self.report = report

    def __str__(self):
        return self.message



class ExecError(OSError):
    """The command could not be executed in the jail (the jail's exit 126 or
    127), raised as subprocess raises the OSError execve gave: errno,
    strerror and filename (the program, or executable=) as subprocess's.
    ``report`` is the jail's report; its ``reason`` (also in str()) says what
    the jail found, e.g. ``command not found in the jail (PATH=...)``."""

    report = None

    def __str__(self):
        text = super().__str__()
        reason = self.report.get("reason") if self.report is not None else None
        return "%s (in the jail: %s)" % (text, reason) if reason else text


class CommandNotFound(ExecError, FileNotFoundError):
    """The program is not in the jail (errno ENOENT): a FileNotFoundError."""


class CommandNotExecutable(ExecError, PermissionError):
    """The program is not executable, or is a directory (errno EACCES): a
    PermissionError."""


def exec_error(number, filename, report):
    """The ExecError for errno number: CommandNotFound, CommandNotExecutable,
    or ExecError itself for other errnos (ENOEXEC: a script without #!)."""
    cls = {_errno.ENOENT: CommandNotFound, _errno.EACCES: CommandNotExecutable}.get(number, ExecError)
    e = cls(number, os.strerror(number), filename)
    e.report = report
    return e
