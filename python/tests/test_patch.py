import subprocess
import unittest

import support
import tooljail

ORIGINALS = {n: getattr(subprocess, n) for n in ("run", "call", "check_call", "check_output", "Popen")}


def restored(test):
    for name, fn in ORIGINALS.items():
        test.assertIs(getattr(subprocess, name), fn, name)


class PatchOptionsTest(unittest.TestCase):
    def test_undo(self):
        undo = tooljail.patch_subprocess()
        self.assertIsNot(subprocess.run, ORIGINALS["run"])
        self.assertIs(subprocess.Popen, ORIGINALS["Popen"])
        undo()
        restored(self)
        with tooljail.patch_subprocess() as undo2:
            self.assertEqual(subprocess.check_output.__name__, "check_output")
        restored(self)
        undo2()  # a second undo does nothing
        restored(self)

    def test_refused(self):
        with self.assertRaisesRegex(TypeError, "unexpected option"):
            tooljail.patch_subprocess(capture_output=True)
        restored(self)
        with tooljail.patch_subprocess():
            for kw in ({"stdin": subprocess.PIPE}, {"preexec_fn": print}, {"user": "nobody"},
                       {"pass_fds": (3,)}):
                with self.subTest(kw=kw):
                    with self.assertRaisesRegex(TypeError, "routed through tooljail"):
                        subprocess.run(["true"], **kw)
        restored(self)


@support.need_binary
class PatchRunTest(unittest.TestCase):
    def setUp(self):
        self.scratch = support.Scratch()
        self.addCleanup(self.scratch.close)

    def test_routed(self):
        with tooljail.patch_subprocess(memory="64M", **self.scratch.kw):
            r = subprocess.run(["/bin/sh", "-c", "echo $HOME; exit 2"], capture_output=True,
                               universal_newlines=True, close_fds=True, stdin=subprocess.DEVNULL)
            self.assertIsInstance(r, tooljail.CompletedProcess)
            self.assertEqual(r.returncode, 2)
            self.assertEqual(r.report.limits.memory_bytes, 64 << 20)
            self.assertEqual(subprocess.check_output("echo $((1+1))", shell=True), b"2\n")
            self.assertEqual(subprocess.call(["false"]), 1)
            self.assertEqual(subprocess.check_call(["true"]), 0)
            with self.assertRaises(subprocess.CalledProcessError) as cm:
                subprocess.check_call(["false"])
            self.assertIsNotNone(cm.exception.report)
            with self.assertRaises(subprocess.TimeoutExpired):
                subprocess.run(["sleep", "30"], timeout=0.5)
        restored(self)
        # Unpatched again: subprocess's own run.
        self.assertEqual(subprocess.run(["true"]).__class__, subprocess.CompletedProcess)


if __name__ == "__main__":
    unittest.main()
