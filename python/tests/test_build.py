"""The in-tree build backend makes a wheel pip can install: the package, its
metadata, and a RECORD whose hashes match."""

import base64
import hashlib
import os
import shutil
import sys
import tempfile
import unittest
import zipfile

import support

sys.path.insert(0, os.path.dirname(support.HERE))
import build_backend  # noqa: E402


class BuildTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir)

    def test_wheel(self):
        name = build_backend.build_wheel(self.dir)
        self.assertEqual(name, "tooljail-0.1.0-py3-none-any.whl")
        with zipfile.ZipFile(os.path.join(self.dir, name)) as whl:
            names = set(whl.namelist())
            for module in ("__init__", "_call", "_errors", "_patch", "_report", "_run", "_transport"):
                self.assertIn("tooljail/%s.py" % module, names)
            meta = whl.read("tooljail-0.1.0.dist-info/METADATA").decode()
            self.assertIn("Name: tooljail\nVersion: 0.1.0\n", meta)
            self.assertIn("Requires-Python: >=3.9\n", meta)
            for row in whl.read("tooljail-0.1.0.dist-info/RECORD").decode().splitlines():
                path, digest, size = row.split(",")
                if path.endswith("RECORD"):
                    continue
                data = whl.read(path)
                want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                self.assertEqual((digest, int(size)), ("sha256=" + want, len(data)), path)

    def test_sdist_and_editable(self):
        self.assertEqual(build_backend.build_sdist(self.dir), "tooljail-0.1.0.tar.gz")
        name = build_backend.build_editable(self.dir)
        with zipfile.ZipFile(os.path.join(self.dir, name)) as whl:
            self.assertEqual(whl.read("tooljail.pth").decode().strip(), os.path.dirname(support.HERE))


if __name__ == "__main__":
    unittest.main()
