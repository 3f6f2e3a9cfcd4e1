"""Shared by the tests: the tooljail binary, a scratch workdir, a real server."""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # the source tree's tooljail package

BINARY = os.environ.get("TOOLJAIL_BIN") or shutil.which("tooljail")


def need_binary(case):
    """Skips a test class when there is no tooljail binary to jail with."""
    if not BINARY:
        return unittest.skip("no tooljail binary: set TOOLJAIL_BIN (make python does)")(case)
    return case


def serve_supported():
    if not BINARY:
        return False
    out = subprocess.run([BINARY, "serve", "--help"], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, timeout=30).stdout
    return b"unknown command" not in out


ROOT = os.getuid() == 0


def degraded_profile(directory):
    """For a caller other than root: the default profile without the cgroup
    caps, which a cgroup v1 host (this one) cannot delegate to a user; every
    other layer stays on. None for root."""
    if ROOT:
        return None
    path = os.path.join(directory, "unprivileged.toml")
    with open(path, "w") as f:
        f.write('extends = "default"\nallow_degraded = ["cgroup"]\n')
    return path


class Scratch:
    """A private temporary directory used as the workdir and for sockets; the
    process's cwd moves there so that the default workdir is a project-like
    directory (the jail refuses / and home directories)."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="tooljail-py-")
        # Outside the workdir: profiles are host files the command must not see change.
        self.config = tempfile.mkdtemp(prefix="tooljail-py-config-")
        self.profile = degraded_profile(self.config)
        self.kw = {} if self.profile is None else {"profile": self.profile}
        self._old_cwd = os.getcwd()
        self._old_env = {k: os.environ.get(k) for k in ("XDG_RUNTIME_DIR", "TOOLJAIL_SERVER")}
        # No default socket, no server from the environment: each test picks
        # its transport with socket= or not.
        os.environ["XDG_RUNTIME_DIR"] = self.dir
        os.environ.pop("TOOLJAIL_SERVER", None)
        os.chdir(self.dir)

    def close(self):
        os.chdir(self._old_cwd)
        for k, v in self._old_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(self.dir, ignore_errors=True)
        shutil.rmtree(self.config, ignore_errors=True)


class Server:
    """`tooljail serve --socket DIR/sock`, started and stopped by a test."""

    def __init__(self, directory, *args):
        self.dir = tempfile.mkdtemp(prefix="srv-", dir=directory)
        self.socket = os.path.join(self.dir, "sock")
        self.log = open(os.path.join(self.dir, "log"), "w+b")
        self.proc = subprocess.Popen([BINARY, "serve", "--socket", self.socket] + list(args),
                                     stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 15
        while not os.path.exists(self.socket):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                said = self.output()
                self.stop()
                raise RuntimeError("tooljail serve did not listen on %s: %s" % (self.socket, said))
            time.sleep(0.02)

    def output(self):
        self.log.seek(0)
        return self.log.read().decode("utf-8", "replace")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
