"""The platform wheels in $TOOLJAIL_DIST (make test-wheel) install offline
into a fresh venv and bring their own binary: tooljail.run works with no
TOOLJAIL_BIN and no tooljail on PATH, as root and as uid 65534. Skipped
unless TOOLJAIL_DIST names a dist dir."""

import glob
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import zipfile

import support  # noqa: F401  (puts the source tree first on sys.path)

DIST = os.environ.get("TOOLJAIL_DIST")
PYTHON_DIR = os.path.dirname(support.HERE)
VERSION = open(os.path.join(os.path.dirname(PYTHON_DIR), "VERSION")).read().strip()
AMD64 = "tooljail-%s-py3-none-manylinux_2_17_x86_64.musllinux_1_1_x86_64.whl" % VERSION
ARM64 = "tooljail-%s-py3-none-manylinux_2_17_aarch64.musllinux_1_1_aarch64.whl" % VERSION
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
# cgroup v1 (this CI host is hybrid) cannot be delegated to uid 65534, so
# there tooljail refuses to run unprivileged (docs/cli.md: check exits 1 when
# a layer is degraded); on v2 it runs like root.
V1 = os.path.isdir("/sys/fs/cgroup/memory")
PROBE = 'import tooljail; print(tooljail.run(["id", "-u"], capture_output=True).stdout.decode().strip())'


@unittest.skipUnless(DIST, "TOOLJAIL_DIST unset (make test-wheel sets it)")
class WheelTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp()
        os.chmod(cls.dir, 0o755)  # uid 65534 runs the venv too
        cls.venv = os.path.join(cls.dir, "venv")
        subprocess.run([sys.executable, "-m", "venv", cls.venv], check=True)
        subprocess.run([cls.venv + "/bin/pip", "install", "-q", "--no-index", "--no-deps",
                        os.path.join(DIST, AMD64)], check=True)
        cls.env = {k: v for k, v in os.environ.items() if k not in ("TOOLJAIL_BIN", "PYTHONPATH")}
        cls.env["PATH"] = cls.venv + "/bin:/usr/bin:/bin"
        for d in ("/usr/bin", "/bin"):
            assert not os.path.exists(d + "/tooljail"), "%s/tooljail would hide the bundled one" % d

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir)

    def run_as(self, prefix, argv, cwd=None):
        return subprocess.run(prefix + argv, env=self.env, cwd=cwd or self.dir,
                              capture_output=True, text=True)

    def test_console_script_installed(self):
        path = os.path.join(self.venv, "bin", "tooljail")
        self.assertEqual(os.stat(path).st_mode & 0o777, 0o755)

    def test_run_finds_bundled_binary(self):
        for who, prefix in (("root", []), ("nobody", NOBODY)):
            with self.subTest(who=who):
                p = self.run_as(prefix, [self.venv + "/bin/python", "-c", PROBE])
                if who == "nobody" and V1:
                    # The refusal comes from the bundled binary: it was found and ran.
                    self.assertIn("cannot enforce on this host: cgroup", p.stderr)
                    continue
                self.assertEqual((p.returncode, p.stdout.strip()), (0, "1000"), p.stderr)
                p = self.run_as(prefix, [self.venv + "/bin/python", "-c",
                                         "import tooljail._call as c; print(c.bundled())"])
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertEqual(p.stdout.strip(), self.venv + "/bin/tooljail", p.stderr)

    def test_check(self):
        # docs/cli.md: check exits 0 on a host that enforces every layer.
        for who, prefix in (("root", []), ("nobody", NOBODY)):
            with self.subTest(who=who):
                p = self.run_as(prefix, ["tooljail", "check"])
                want = 1 if who == "nobody" and V1 else 0
                self.assertEqual(p.returncode, want, p.stdout + p.stderr)
                self.assertIn("seccomp", p.stdout)

    def test_arm64_wheel(self):
        target = os.path.join(self.dir, "arm64")
        subprocess.run([self.venv + "/bin/pip", "install", "-q", "--target", target,
                        "--platform", "manylinux_2_17_aarch64", "--only-binary=:all:",
                        "--no-index", "--no-deps", os.path.join(DIST, ARM64)], check=True)
        binary = os.path.join(target, "bin", "tooljail")
        self.assertTrue(os.path.isfile(os.path.join(target, "tooljail", "__init__.py")))
        self.assertEqual(os.stat(binary).st_mode & 0o777, 0o755)
        with open(binary, "rb") as f:
            head = f.read(20)
        self.assertEqual((head[:4], head[18:20]), (b"\x7fELF", b"\xb7\x00"))  # EM_AARCH64
        p = subprocess.run([binary, "version"], capture_output=True, text=True)  # qemu-user via binfmt
        self.assertIn("linux/arm64", p.stdout + p.stderr)

    def test_pure_wheel_uses_tooljail_bin(self):
        venv = os.path.join(self.dir, "pure")
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        subprocess.run([venv + "/bin/pip", "install", "-q", "--no-index", "--no-deps", PYTHON_DIR],
                       check=True, cwd=self.dir)
        self.assertFalse(os.path.exists(venv + "/bin/tooljail"))
        env = dict(self.env, PATH="/usr/bin:/bin", TOOLJAIL_BIN=self.venv + "/bin/tooljail")
        p = subprocess.run([venv + "/bin/python", "-c", PROBE], env=env, cwd=self.dir,
                           capture_output=True, text=True)
        self.assertEqual((p.returncode, p.stdout.strip()), (0, "1000"), p.stderr)
        del env["TOOLJAIL_BIN"]
        p = subprocess.run([venv + "/bin/python", "-c", PROBE], env=env, cwd=self.dir,
                           capture_output=True, text=True)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("none installed with this package, TOOLJAIL_BIN unset, none on PATH", p.stderr)


if __name__ == "__main__":
    unittest.main()
