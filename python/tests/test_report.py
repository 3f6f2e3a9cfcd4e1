import copy
import pickle
import subprocess
import unittest

import support  # noqa: F401
import tooljail


RAW = {"status": "violation", "exit_code": 159, "limits": {"memory_bytes": 1024},
       "violations": [{"kind": "syscall", "syscall": "ptrace", "count": 1}]}


class ReportTest(unittest.TestCase):
    def test_access(self):
        r = tooljail.Report(RAW)
        self.assertIs(r.raw, RAW)
        self.assertEqual(r.status, "violation")
        self.assertEqual(r.limits.memory_bytes, 1024)
        self.assertEqual(r.violations[0].syscall, "ptrace")
        self.assertEqual(r["exit_code"], 159)
        self.assertIn("limits", r)
        self.assertIsNone(r.get("memory_peak_bytes"))
        with self.assertRaisesRegex(AttributeError, "memory_peak_bytes"):
            r.memory_peak_bytes
        with self.assertRaises(AttributeError):
            r.status = "exited"

    def test_copy_and_pickle(self):
        r = tooljail.Report(RAW)
        self.assertEqual(copy.deepcopy(r), r)
        self.assertEqual(pickle.loads(pickle.dumps(r)), r)
        e = pickle.loads(pickle.dumps(tooljail.CalledProcessError(1, ["x"], report=r)))
        self.assertEqual(e.report, r)

    def test_types(self):
        r = tooljail.Report(RAW)
        cp = tooljail.CompletedProcess(["x"], 1, b"", b"", r)
        self.assertIsInstance(cp, subprocess.CompletedProcess)
        with self.assertRaises(subprocess.CalledProcessError) as cm:
            cp.check_returncode()
        self.assertIsInstance(cm.exception, tooljail.CalledProcessError)
        self.assertIs(cm.exception.report, r)
        self.assertTrue(issubclass(tooljail.TimeoutExpired, subprocess.TimeoutExpired))
        self.assertTrue(issubclass(tooljail.JailError, subprocess.SubprocessError))
        e = tooljail.CalledProcessError(3, ["x"], report=tooljail.Report({"reason": "why"}))
        self.assertIn("why", str(e))


if __name__ == "__main__":
    unittest.main()
