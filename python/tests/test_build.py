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


class VersionTest(unittest.TestCase):
    def test_pyproject_matches_repo_version(self):
        # Every release artefact is named by the repo's VERSION (issue 29).
        root = os.path.dirname(os.path.dirname(support.HERE))
        with open(os.path.join(root, "VERSION")) as f:
            want = f.read().strip()
        with open(os.path.join(root, "python", "pyproject.toml")) as f:
            text = f.read()
        self.assertIn('\nversion = "%s"\n' % want, text)


class PlatformWheelTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir)
        self.binary = os.path.join(self.dir, "bin")
        with open(self.binary, "wb") as f:
            f.write(b"\x7fELF not really")

    def build(self, sub):
        out = os.path.join(self.dir, sub)
        os.mkdir(out)
        return os.path.join(out, build_backend.build_platform_wheel(out, self.binary, "x86_64"))

    def test_layout_and_tags(self):
        path = self.build("a")
        self.assertEqual(os.path.basename(path),
                         "tooljail-0.1.0-py3-none-manylinux_2_17_x86_64.musllinux_1_1_x86_64.whl")
        with zipfile.ZipFile(path) as whl:
            info = whl.getinfo("tooljail-0.1.0.data/scripts/tooljail")
            self.assertEqual(info.external_attr >> 16, 0o100755)
            self.assertEqual(whl.read(info), b"\x7fELF not really")
            wheel = whl.read("tooljail-0.1.0.dist-info/WHEEL").decode()
            self.assertIn("Root-Is-Purelib: false\n", wheel)
            self.assertIn("Tag: py3-none-manylinux_2_17_x86_64\nTag: py3-none-musllinux_1_1_x86_64\n", wheel)
            names = whl.namelist()
            self.assertEqual(names[:-3], sorted(names[:-3]))  # dist-info last, as pip expects
            records = [r.split(",")[0] for r in whl.read(names[-1]).decode().splitlines()]
            self.assertEqual(sorted(records), sorted(names))

    def test_reproducible(self):
        with open(self.build("a"), "rb") as a, open(self.build("b"), "rb") as b:
            self.assertEqual(a.read(), b.read())

    def test_unknown_arch(self):
        with self.assertRaisesRegex(ValueError, "x86_64"):
            build_backend.build_platform_wheel(self.dir, self.binary, "riscv64")
