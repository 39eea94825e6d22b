"""The in-tree PEP 517 build backend of latch-client, standard library only.

Why not setuptools: building a wheel with setuptools needs the `wheel`
package (or setuptools 70.1 or later), which is not part of Python, so
`pip install ./sdk/python` would need a package index. This backend needs
nothing: pyproject.toml's build-system requires no package, and the install
works offline. It builds a pure-Python wheel of src/latch_client, an sdist,
and an editable wheel (a .pth file pointing at src/).

It reads name, version, description and requires-python from the [project]
table of pyproject.toml (simple `key = "string"` lines).
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile
from typing import Dict, List, Optional, Tuple

ROOT = os.path.dirname(os.path.abspath(__file__))
PACKAGE = "latch_client"
SDIST_FILES = ["pyproject.toml", "README.md", "build_backend.py"]


def _project() -> Dict[str, str]:
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^\[project\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
    if not m:
        raise RuntimeError("pyproject.toml has no [project] table")
    fields = dict(re.findall(r'^([A-Za-z-]+)\s*=\s*"([^"]*)"\s*$', m.group(1), re.M))
    for k in ("name", "version"):
        if k not in fields:
            raise RuntimeError(f"pyproject.toml: [project] {k} is required")
    return fields


def _dist_name(p: Dict[str, str]) -> str:
    return re.sub(r"[-_.]+", "_", p["name"]).lower()


def _metadata(p: Dict[str, str]) -> str:
    lines = ["Metadata-Version: 2.1", f"Name: {p['name']}", f"Version: {p['version']}"]
    if p.get("description"):
        lines.append(f"Summary: {p['description']}")
    if p.get("requires-python"):
        lines.append(f"Requires-Python: {p['requires-python']}")
    lines.append("Classifier: Programming Language :: Python :: 3")
    lines.append("Classifier: Typing :: Typed")
    readme = os.path.join(ROOT, "README.md")
    body = ""
    if os.path.exists(readme):
        lines.append("Description-Content-Type: text/markdown")
        with open(readme, encoding="utf-8") as f:
            body = f.read()
    return "\n".join(lines) + "\n\n" + body


def _wheel_file() -> str:
    return "Wheel-Version: 1.0\nGenerator: latch-client build_backend\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


def _package_files() -> List[Tuple[str, str]]:
    """(path in the wheel, path on disk) of the package's files."""
    base = os.path.join(ROOT, "src", PACKAGE)
    out = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for fn in sorted(filenames):
            if fn.endswith(".py") or fn == "py.typed":
                full = os.path.join(dirpath, fn)
                out.append((os.path.relpath(full, os.path.join(ROOT, "src")).replace(os.sep, "/"), full))
    return out


def _record_line(arcname: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def _write_wheel(wheel_directory: str, entries: List[Tuple[str, bytes]]) -> str:
    p = _project()
    dist = f"{_dist_name(p)}-{p['version']}"
    info = f"{dist}.dist-info"
    entries = entries + [(f"{info}/METADATA", _metadata(p).encode("utf-8")),
                         (f"{info}/WHEEL", _wheel_file().encode("utf-8"))]
    record = [_record_line(n, d) for n, d in entries] + [f"{info}/RECORD,,"]
    entries.append((f"{info}/RECORD", ("\n".join(record) + "\n").encode("utf-8")))
    name = f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for arcname, data in entries:
            zi = zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0))
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
    return name


# ------------------------------------------------------------------ PEP 517

def get_requires_for_build_wheel(config_settings: Optional[dict] = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[dict] = None) -> List[str]:
    return []


def get_requires_for_build_editable(config_settings: Optional[dict] = None) -> List[str]:
    return []


def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: Optional[dict] = None) -> str:
    p = _project()
    info = f"{_dist_name(p)}-{p['version']}.dist-info"
    os.makedirs(os.path.join(metadata_directory, info), exist_ok=True)
    with open(os.path.join(metadata_directory, info, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata(p))
    with open(os.path.join(metadata_directory, info, "WHEEL"), "w", encoding="utf-8") as f:
        f.write(_wheel_file())
    return info


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory: str, config_settings: Optional[dict] = None,
                metadata_directory: Optional[str] = None) -> str:
    entries = []
    for arcname, path in _package_files():
        with open(path, "rb") as f:
            entries.append((arcname, f.read()))
    return _write_wheel(wheel_directory, entries)


def build_editable(wheel_directory: str, config_settings: Optional[dict] = None,
                   metadata_directory: Optional[str] = None) -> str:
    pth = (os.path.join(ROOT, "src") + "\n").encode("utf-8")
    return _write_wheel(wheel_directory, [(f"__editable__.{PACKAGE}.pth", pth)])


def build_sdist(sdist_directory: str, config_settings: Optional[dict] = None) -> str:
    p = _project()
    base = f"{_dist_name(p)}-{p['version']}"
    name = f"{base}.tar.gz"
    files = [(f, os.path.join(ROOT, f)) for f in SDIST_FILES if os.path.exists(os.path.join(ROOT, f))]
    files += [("src/" + arc, path) for arc, path in _package_files()]
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as tar:
        pkg_info = _metadata(p).encode("utf-8")
        ti = tarfile.TarInfo(f"{base}/PKG-INFO")
        ti.size, ti.mode, ti.mtime = len(pkg_info), 0o644, 1577836800
        tar.addfile(ti, io.BytesIO(pkg_info))
        for arc, path in files:
            with open(path, "rb") as f:
                data = f.read()
            ti = tarfile.TarInfo(f"{base}/{arc}")
            ti.size, ti.mode, ti.mtime = len(data), 0o644, 1577836800
            tar.addfile(ti, io.BytesIO(data))
    return name
