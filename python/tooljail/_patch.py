"""patch_subprocess: subprocess.run and friends of this process, jailed."""

import subprocess

from . import _run

# subprocess keywords a jailed run honours as subprocess would.
_PASSED = {"input", "capture_output", "stdout", "stderr", "shell", "text", "encoding",
           "errors", "timeout", "check", "cwd", "env"}
# Keywords whose subprocess meaning the jail already gives (every descriptor
# but 0-2 is closed, signals are reset, buffering is the transport's).
_IGNORED = {"close_fds", "bufsize", "restore_signals"}
_NAMES = ("run", "call", "check_call", "check_output")


class _Patch:
    """The undo of one patch_subprocess(): call it, or leave its with block."""

    def __init__(self, saved):
        self._saved = saved

    def __call__(self):
        for name, fn in self._saved.items():
            setattr(subprocess, name, fn)
        self._saved = {}

    undo = __call__

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self()
        return False


def patch_subprocess(**jail):
    """Routes subprocess.run, call, check_call and check_output of this process
    through tooljail.run until undone. Popen (and so os.system, asyncio
    subprocesses, and modules that did `from subprocess import run` before the
    patch) is not covered.

    jail: tooljail.run's own options applied to every routed call (profile,
    memory, cpus, pids, network, socket).

    Usable as a context manager (``with tooljail.patch_subprocess(): ...``) or
    as a call returning the undo (``undo = tooljail.patch_subprocess(); undo()``).
    A call that uses a subprocess keyword the jail cannot honour (stdin other
    than None/DEVNULL, preexec_fn, user, pass_fds, ...) raises TypeError rather
    than running unjailed.
    """
    for key in jail:
        if key not in ("profile", "memory", "cpus", "pids", "network", "socket"):
            raise TypeError("patch_subprocess() got an unexpected option %r" % key)
    saved = {name: getattr(subprocess, name) for name in _NAMES}

    def translate(kwargs):
        out = dict(jail)
        for key, value in kwargs.items():
            if key in _PASSED:
                out[key] = value
            elif key == "universal_newlines":
                out["text"] = out.get("text") or value
            elif key == "stdin" and value in (None, subprocess.DEVNULL):
                pass
            elif key == "executable" and value is None:
                pass
            elif key in _IGNORED:
                pass
            else:
                raise TypeError(
                    "subprocess is routed through tooljail, which cannot honour %s=%r; "
                    "call tooljail.run with its own options, or undo patch_subprocess()"
                    % (key, value))
        return out

    def jailed_run(args, **kwargs):
        return _run.run(args, **translate(kwargs))

    def jailed_call(args, **kwargs):
        return _run.call(args, **translate(kwargs))

    def jailed_check_call(args, **kwargs):
        return _run.check_call(args, **translate(kwargs))

    def jailed_check_output(args, **kwargs):
        return _run.check_output(args, **translate(kwargs))

    for name, fn in zip(_NAMES, (jailed_run, jailed_call, jailed_check_call, jailed_check_output)):
        fn.__name__ = fn.__qualname__ = name
        fn.__doc__ = "subprocess.%s, routed through tooljail by patch_subprocess()." % name
        setattr(subprocess, name, fn)
    return _Patch(saved)
