"""tooljail: run commands in a tooljail jail with subprocess's API.

    import tooljail
    r = tooljail.run(["make", "test"], capture_output=True, text=True, timeout=60)
    r.returncode, r.stdout, r.report.status, r.report.get("memory_peak_bytes")

It talks to a `tooljail serve` server when there is one (socket=, the
TOOLJAIL_SERVER variable, or the default socket), and otherwise runs the
tooljail CLI (the bundled binary, TOOLJAIL_BIN, or tooljail on PATH) with --report. Standard
library only. See python/README.md.
"""

from ._changes import ChangesConflict, ChangeSet, change_set
from ._errors import (CalledProcessError, CommandNotExecutable, CommandNotFound, CompletedProcess,
                      ExecError, JailError, TimeoutExpired)
from ._patch import JailedPopen, patch_subprocess, unjailed
from ._report import Report
from ._run import DEVNULL, PIPE, STDOUT, call, check_call, check_output, run
from ._session import Session

__all__ = [
    "run", "call", "check_call", "check_output", "patch_subprocess", "unjailed", "JailedPopen",
    "CompletedProcess", "CalledProcessError", "TimeoutExpired", "JailError", "Report",
    "ExecError", "CommandNotFound", "CommandNotExecutable",
    "PIPE", "STDOUT", "DEVNULL", "ChangeSet", "ChangesConflict", "change_set", "Session",
]
