"""A PEP 517 build backend for this one pure-Python package, standard library
only: pip installs it offline with nothing else installed (setuptools needs
the wheel package, which a fresh venv may not have)."""

import base64
import hashlib
import io
import os
import re
import sys
import tarfile
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = "tooljail"


def _project():
    with open(os.path.join(HERE, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    section = text.split("[project]", 1)[1].split("\n[", 1)[0]
    fields = dict(re.findall(r'^(\w[\w-]*) = "(.*)"$', section, re.M))
    return fields["name"], fields["version"], fields


def _metadata():
    name, version, fields = _project()
    with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    return (
        "Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: %s\nRequires-Python: %s\n"
        "Description-Content-Type: text/markdown\n\n%s"
        % (name, version, fields["description"], fields["requires-python"], readme)
    )


def _sources():
    root = os.path.join(HERE, PACKAGE)
    for entry in sorted(os.listdir(root)):
        if entry.endswith(".py"):
            yield "%s/%s" % (PACKAGE, entry), os.path.join(root, entry)


# Platform wheels: one body, the compressed tag set glibc and musl pip accept
# (the binary is static, so it runs on either).
PLATFORMS = {
    "x86_64": "manylinux_2_17_x86_64.musllinux_1_1_x86_64",
    "aarch64": "manylinux_2_17_aarch64.musllinux_1_1_aarch64",
}


def _date_time():
    # Reproducible: SOURCE_DATE_EPOCH (the commit's time) or 1980-01-01, the
    # earliest a zip can hold.
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))
    return time.gmtime(max(epoch, 315532800))[:6]


def _wheel(directory, files, platform=None):
    """Write the wheel; files is (arcname, bytes, mode). Entries are sorted,
    stamped with _date_time() and given fixed modes so that the same sources
    give the same bytes."""
    name, version, _ = _project()
    dist = "%s-%s.dist-info" % (name, version)
    tag = "py3-none-" + (platform or "any")
    filename = "%s-%s-%s.whl" % (name, version, tag)
    tags = "".join("Tag: py3-none-%s\n" % p for p in (platform or "any").split("."))
    files = sorted(files) + [
        (dist + "/METADATA", _metadata().encode("utf-8"), 0o644),
        (dist + "/WHEEL", ("Wheel-Version: 1.0\nGenerator: tooljail build_backend\n"
                           "Root-Is-Purelib: %s\n%s" % ("false" if platform else "true", tags)).encode(), 0o644),
    ]
    record = io.StringIO()
    stamp = _date_time()

    def put(whl, arcname, data, mode):
        info = zipfile.ZipInfo(arcname, stamp)
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = (0o100000 | mode) << 16
        info.create_system = 3
        whl.writestr(info, data)

    with zipfile.ZipFile(os.path.join(directory, filename), "w") as whl:
        for arcname, data, mode in files:
            put(whl, arcname, data, mode)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            record.write("%s,sha256=%s,%d\n" % (arcname, digest.decode(), len(data)))
        record.write(dist + "/RECORD,,\n")
        put(whl, dist + "/RECORD", record.getvalue().encode(), 0o644)
    return filename


def build_platform_wheel(wheel_directory, binary, arch):
    """The client plus a static tooljail binary as the console script
    tooljail-VERSION.data/scripts/tooljail (pip installs it to the
    environment's scripts dir, mode 0755, as ruff and uv ship theirs)."""
    if arch not in PLATFORMS:
        raise ValueError("unknown arch %r: want one of %s" % (arch, ", ".join(sorted(PLATFORMS))))
    name, version, _ = _project()
    files = [(arc, _read(path), 0o644) for arc, path in _sources()]
    files.append(("%s-%s.data/scripts/tooljail" % (name, version), _read(binary), 0o755))
    return _wheel(wheel_directory, files, PLATFORMS[arch])


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory, [(arc, _read(path), 0o644) for arc, path in _sources()])


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    # A .pth naming this directory: the installed package is the source tree.
    return _wheel(wheel_directory, [("%s.pth" % PACKAGE, (HERE + "\n").encode(), 0o644)])


def build_sdist(sdist_directory, config_settings=None):
    name, version, _ = _project()
    base = "%s-%s" % (name, version)
    filename = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz") as tar:
        for rel in ["pyproject.toml", "build_backend.py", "README.md"] + [a for a, _ in _sources()]:
            tar.add(os.path.join(HERE, rel), arcname="%s/%s" % (base, rel))
        info = tarfile.TarInfo(base + "/PKG-INFO")
        data = _metadata().encode("utf-8")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return filename


if __name__ == "__main__":
    # make dist-python: build_backend.py OUTDIR ARCH BINARY
    if len(sys.argv) != 4:
        sys.exit("usage: build_backend.py OUTDIR x86_64|aarch64 BINARY")
    print(os.path.join(sys.argv[1], build_platform_wheel(sys.argv[1], sys.argv[3], sys.argv[2])))
