"""`tooljail run` at a terminal, driven through Python's pty module as a
person at a terminal would drive it: the command gets a terminal of its
own, sees the caller's window size and its changes, ^C reaches it as
SIGINT, and the caller's terminal is as it was after, also after a
timeout kill."""

import fcntl
import os
import pty
import signal
import select
import struct
import termios
import time
import unittest

from support import BINARY, Scratch, need_binary


def set_size(fd, rows, cols):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


class Terminal:
    """tooljail run ARGS in a new session on a new pseudo-terminal."""

    def __init__(self, args, rows=24, cols=80):
        self.fd, peer = pty.openpty()
        set_size(self.fd, rows, cols)
        # The terminal as it was before tooljail touched it.
        self.before = termios.tcgetattr(self.fd)
        self.pid = os.fork()
        if self.pid == 0:
            try:
                # What pty.fork does: a session whose controlling terminal it is.
                os.setsid()
                fcntl.ioctl(peer, termios.TIOCSCTTY, 0)
                for fd in (0, 1, 2):
                    os.dup2(peer, fd)
                # As a person's shell starts it: ^C must reach the command
                # even when this test runs with SIGINT ignored (a background
                # job's), which tooljail and the command would keep.
                for sig in (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT):
                    signal.signal(sig, signal.SIG_DFL)
                os.execv(BINARY, [BINARY, "run", "-q"] + args)
            finally:
                os._exit(127)
        os.close(peer)
        self.out = b""
        self.status = None

    def read_until(self, want, timeout=60):
        deadline = time.monotonic() + timeout
        while want not in self.text():
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("no %r on the terminal; it shows %r" % (want, self.text()))
            ready, _, _ = select.select([self.fd], [], [], min(left, 0.5))
            if ready:
                try:
                    chunk = os.read(self.fd, 4096)
                except OSError:  # EIO: every process of the session is gone
                    chunk = b""
                if not chunk and self.status is not None:
                    break
                self.out += chunk
            self.poll()

    def poll(self):
        if self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(status)

    def text(self):
        return self.out.replace(b"\r\n", b"\n").decode(errors="replace")

    def wait(self, timeout=60):
        deadline = time.monotonic() + timeout
        while self.status is None and time.monotonic() < deadline:
            try:
                ready, _, _ = select.select([self.fd], [], [], 0.1)
                if ready:
                    self.out += os.read(self.fd, 4096)
            except OSError:
                pass
            self.poll()
        if self.status is None:
            os.kill(self.pid, 9)
            raise AssertionError("tooljail did not end; the terminal shows %r" % self.text())
        return self.status


@need_binary
class TTYTest(unittest.TestCase):
    def setUp(self):
        self.scratch = Scratch()
        self.addCleanup(self.scratch.close)
        self.flags = [] if self.scratch.profile is None else ["--profile", self.scratch.profile]

    def start(self, script, extra=(), rows=24, cols=80):
        t = Terminal(self.flags + list(extra) + ["--", "/bin/sh", "-c", script], rows, cols)
        self.addCleanup(os.close, t.fd)
        return t

    def test_isatty_resize_and_interrupt(self):
        t = self.start("test -t 0 && test -t 1 && echo isatty; stty size; "
                       "trap 'echo \"winch $(stty size)\"' WINCH; trap 'echo got-int; exit 3' INT; "
                       "echo ready; while :; do sleep 0.1; done", rows=33, cols=101)
        t.read_until("ready\n")
        self.assertIn("isatty\n33 101\n", t.text())
        set_size(t.fd, 40, 132)
        t.read_until("winch 40 132\n")
        os.write(t.fd, b"\x03")
        t.read_until("got-int\n")
        self.assertEqual(t.wait(), 3, t.text())
        self.assertEqual(termios.tcgetattr(t.fd), t.before)

    def test_restored_after_timeout(self):
        t = self.start("echo ready; sleep 60", extra=["--timeout", "2s"])
        t.read_until("ready\n")
        self.assertFalse(termios.tcgetattr(t.fd)[3] & termios.ICANON, "the caller's terminal is not raw during the run")
        self.assertNotEqual(t.wait(), 0, t.text())
        self.assertEqual(termios.tcgetattr(t.fd), t.before, "the caller's terminal was not restored after the timeout kill")


if __name__ == "__main__":
    unittest.main()
