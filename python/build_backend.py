"""A PEP 517 build backend for this one pure-Python package, standard library
only: pip installs it offline with nothing else installed (setuptools needs
the wheel package, which a fresh venv may not have)."""

import base64
import hashlib
import io
import os
import re
import tarfile
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


def _wheel(directory, files):
    name, version, _ = _project()
    dist = "%s-%s.dist-info" % (name, version)
    filename = "%s-%s-py3-none-any.whl" % (name, version)
    files = list(files) + [
        (dist + "/METADATA", _metadata().encode("utf-8")),
        (dist + "/WHEEL", b"Wheel-Version: 1.0\nGenerator: tooljail build_backend\n"
                          b"Root-Is-Purelib: true\nTag: py3-none-any\n"),
    ]
    record = io.StringIO()
    with zipfile.ZipFile(os.path.join(directory, filename), "w", zipfile.ZIP_DEFLATED) as whl:
        for arcname, data in files:
            whl.writestr(arcname, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            record.write("%s,sha256=%s,%d\n" % (arcname, digest.decode(), len(data)))
        record.write(dist + "/RECORD,,\n")
        whl.writestr(dist + "/RECORD", record.getvalue())
    return filename


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
    return _wheel(wheel_directory, ((arc, _read(path)) for arc, path in _sources()))


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    # A .pth naming this directory: the installed package is the source tree.
    return _wheel(wheel_directory, [("%s.pth" % PACKAGE, (HERE + "\n").encode())])


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
