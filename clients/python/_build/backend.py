# SPDX-License-Identifier: BSD-2-Clause
"""A PEP 517 backend in the standard library alone: a pure-Python wheel of
the `warrant` package (and an sdist). Metadata comes from pyproject.toml's
[project] table, read with tomllib (3.11) or a small reader of the few keys
used here."""

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = "warrant"


def _project():
    with open(os.path.join(HERE, "pyproject.toml"), "rb") as f:
        data = f.read()
    try:
        import tomllib
        return tomllib.loads(data.decode())["project"]
    except ImportError:
        text = data.decode()
        sec = text.split("[project]", 1)[1].split("\n[", 1)[0]
        p = {k: v for k, v in re.findall(r'^(\w[\w-]*) = "([^"]*)"', sec, re.M)}
        p["dependencies"] = re.findall(r'"([^"]+)"', re.search(r"dependencies = \[(.*?)\]", sec).group(1))
        p["scripts"] = {"warrant-keygen": "warrant.keygen:main"}
        return p


def _meta():
    p = _project()
    lines = ["Metadata-Version: 2.1", f"Name: {p['name']}", f"Version: {p['version']}",
             f"Summary: {p.get('description', '')}", "License: BSD-2-Clause",
             f"Requires-Python: {p.get('requires-python', '>=3.9')}"]
    lines += [f"Requires-Dist: {d}" for d in p.get("dependencies", [])]
    with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    lines.append("Description-Content-Type: text/markdown")
    return p, "\n".join(lines) + "\n\n" + readme


def _files():
    for name in sorted(os.listdir(os.path.join(HERE, PKG))):
        if name.endswith(".py"):
            yield f"{PKG}/{name}"


def get_requires_for_build_wheel(config_settings=None):
    return []


get_requires_for_build_sdist = get_requires_for_build_editable = get_requires_for_build_wheel


def _wheel(wheel_directory, editable=False):
    p, meta = _meta()
    dist = f"{p['name']}-{p['version']}"
    name = f"{dist}-py3-none-any.whl"
    records = []

    def add(zf, arc, data):
        zf.writestr(zipfile.ZipInfo(arc, (1980, 1, 1, 0, 0, 0)), data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        records.append(f"{arc},sha256={digest},{len(data)}")

    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as zf:
        if editable:
            add(zf, f"{p['name']}.pth", (HERE + "\n").encode())
        else:
            for arc in _files():
                with open(os.path.join(HERE, arc), "rb") as f:
                    add(zf, arc, f.read())
        add(zf, f"{dist}.dist-info/METADATA", meta.encode())
        add(zf, f"{dist}.dist-info/WHEEL", b"Wheel-Version: 1.0\nGenerator: warrant-backend\n"
            b"Root-Is-Purelib: true\nTag: py3-none-any\n")
        scripts = p.get("scripts", {})
        if scripts:
            add(zf, f"{dist}.dist-info/entry_points.txt", ("[console_scripts]\n" + "".join(
                f"{k} = {v}\n" for k, v in scripts.items())).encode())
        records.append(f"{dist}.dist-info/RECORD,,")
        zf.writestr(zipfile.ZipInfo(f"{dist}.dist-info/RECORD", (1980, 1, 1, 0, 0, 0)),
                    "\n".join(records) + "\n")
    return name


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory, editable=True)


def build_sdist(sdist_directory, config_settings=None):
    p, meta = _meta()
    dist = f"{p['name']}-{p['version']}"
    name = f"{dist}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as tf:
        for arc in ["pyproject.toml", "README.md", "_build/backend.py"] + list(_files()):
            tf.add(os.path.join(HERE, arc), f"{dist}/{arc}")
        info = tarfile.TarInfo(f"{dist}/PKG-INFO")
        data = meta.encode()
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    return name
