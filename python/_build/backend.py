"""In-tree PEP 517 / PEP 660 build backend of minatoloader.

It needs no package from an index (``requires = []``): the wheel is written
with :mod:`zipfile` by hand. What goes in it:

* the ``minatoloader`` package's files (``.py`` and ``py.typed``);
* ``minatoloader/_lib/libminatoloader.so``, built by
  ``go build -buildmode=c-shared -trimpath -o <tmp>/libminatoloader.so ./capi``
  run in the repository root (the parent of this ``python/`` directory, or the
  ``_go/`` copy inside an sdist);
* ``minatoloader/include/minatoloader.h``, the C ABI header;
* the ``.dist-info`` files: METADATA, WHEEL, RECORD.

The wheel is tagged ``py3-none-<platform>``: the package calls the library
through ctypes, so it does not depend on the Python ABI, only on the platform.

Environment variables:

``GO``
    The go command to run (default: ``go`` on PATH, then ``/usr/local/go/bin/go``).
``MINATOLOADER_PREBUILT_LIBRARY``
    A ``libminatoloader.so`` built elsewhere to ship instead of building one
    (for hosts without a Go toolchain).
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import shutil
import subprocess
import sysconfig
import tarfile
import tempfile
import zipfile
from pathlib import Path
from typing import Any

PYTHON_DIR = Path(__file__).resolve().parent.parent
PACKAGE = "minatoloader"
LIBRARY_NAME = "libminatoloader.so"
HEADER_NAME = "minatoloader.h"

# Fixed timestamp for archive members, so that a rebuild of the same sources
# gives the same archive (the zip format cannot store dates before 1980).
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)

# Directories of the repository that the Go build does not need (left out of
# the sdist's _go/ copy).
_SDIST_SKIP_DIRS = {"python", "tests", "bench", "examples", "docs", "build", "testdata"}
_GO_SOURCE_SUFFIXES = (".go", ".c", ".h", ".s", ".S", ".cc", ".cpp", ".hpp", ".syso")


class BuildError(RuntimeError):
    """The wheel could not be built; the message says why and what to do."""


# ------------------------------------------------------------------ metadata


def _read_project() -> dict[str, object]:
    """Returns the [project] table of pyproject.toml."""
    text = (PYTHON_DIR / "pyproject.toml").read_text(encoding="utf-8")
    try:
        import tomllib  # Python >= 3.11
    except ModuleNotFoundError:
        return _read_project_subset(text)
    return dict(tomllib.loads(text)["project"])


def _read_project_subset(text: str) -> dict[str, object]:
    """Reads one-line ``key = "string"`` and ``key = ["a", "b"]`` entries of
    the [project] table: the subset pyproject.toml promises to stay within."""
    project: dict[str, object] = {}
    in_project = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            in_project = line == "[project]"
            continue
        if not in_project:
            continue
        m = re.fullmatch(r"([A-Za-z0-9_-]+)\s*=\s*(.+)", line)
        if m is None:
            raise BuildError(f"pyproject.toml: cannot read line {raw!r} of [project]")
        key, value = m.group(1), m.group(2).strip()
        if value.startswith('"'):
            project[key] = _toml_string(value, raw)
        elif value.startswith("[") and value.endswith("]"):
            inner = value[1:-1].strip()
            items = re.findall(r'"(?:[^"\\]|\\.)*"', inner)
            project[key] = [_toml_string(item, raw) for item in items]
        else:
            raise BuildError(f"pyproject.toml: cannot read line {raw!r} of [project]")
    return project


def _toml_string(token: str, raw: str) -> str:
    m = re.fullmatch(r'"((?:[^"\\]|\\.)*)"', token)
    if m is None:
        raise BuildError(f"pyproject.toml: cannot read line {raw!r} of [project]")
    return m.group(1).replace('\\"', '"').replace("\\\\", "\\")


def _metadata() -> tuple[str, str, str]:
    """Returns (name, version, METADATA text)."""
    project = _read_project()
    name = str(project["name"])
    version = str(project["version"])
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    if "description" in project:
        lines.append(f"Summary: {project['description']}")
    if "requires-python" in project:
        lines.append(f"Requires-Python: {project['requires-python']}")
    dependencies = project.get("dependencies", [])
    if not isinstance(dependencies, list):
        raise BuildError("pyproject.toml: [project] dependencies must be a list of strings")
    for dep in dependencies:
        lines.append(f"Requires-Dist: {dep}")
    return name, version, "\n".join(lines) + "\n"


def _dist_info_name(name: str, version: str) -> str:
    return f"{_normalize(name)}-{version}.dist-info"


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _platform_tag() -> str:
    return sysconfig.get_platform().replace("-", "_").replace(".", "_")


def _wheel_file(tag: str) -> str:
    return f"Wheel-Version: 1.0\nGenerator: minatoloader-backend 0.1.0\nRoot-Is-Purelib: false\nTag: {tag}\n"


# ------------------------------------------------------------------ Go build


def _repo_root() -> Path:
    """The directory holding go.mod: an sdist's _go/ copy, else the parent of
    python/ (a checkout)."""
    candidates = [PYTHON_DIR / "_go", PYTHON_DIR.parent]
    for root in candidates:
        if (root / "go.mod").is_file():
            return root
    tried = ", ".join(str(c / "go.mod") for c in candidates)
    raise BuildError(
        "minatoloader: cannot find the Go module to build libminatoloader.so "
        f"(looked for {tried}). Build from a checkout of the repository "
        "(pip install ./python from its root) or from an sdist made by this backend."
    )


def _go_command() -> str:
    tried = []
    explicit = os.environ.get("GO")
    if explicit:
        found = shutil.which(explicit)
        if found:
            return found
        raise BuildError(f"minatoloader: the GO environment variable names {explicit!r}, which is not an executable")
    found = shutil.which("go")
    if found:
        return found
    tried.append("go on PATH")
    for path in ("/usr/local/go/bin/go", str(Path.home() / "go" / "bin" / "go")):
        if os.access(path, os.X_OK):
            return path
        tried.append(path)
    raise BuildError(
        "minatoloader: building the package needs the Go toolchain (go >= the version in go.mod) "
        f"and a C compiler for cgo, and no go command was found (tried: {', '.join(tried)}). "
        "Install Go (https://go.dev/dl/), put it on PATH or set GO=/path/to/go, "
        "or set MINATOLOADER_PREBUILT_LIBRARY to a libminatoloader.so built elsewhere."
    )


def _build_tags(root: Path, env: dict[str, str]) -> list[str]:
    """["-tags", "turbojpeg"] when native/turbojpeg/detect.sh finds a static
    libjpeg-turbo that links into the library (else JPEG decodes with Go's
    image/jpeg); MINATOLOADER_TURBOJPEG=0/1 forces it off/on."""
    script = root / "native" / "turbojpeg" / "detect.sh"
    if not script.is_file():
        return []
    proc = subprocess.run(["sh", str(script)], cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise BuildError(f"minatoloader: {script} failed: {proc.stderr.strip()}")
    tags = proc.stdout.split()
    return ["-tags", ",".join(tags)] if tags else []


def _build_library(out_dir: Path) -> Path:
    """Builds (or copies the prebuilt) libminatoloader.so into out_dir."""
    out = out_dir / LIBRARY_NAME
    prebuilt = os.environ.get("MINATOLOADER_PREBUILT_LIBRARY")
    if prebuilt:
        if not Path(prebuilt).is_file():
            raise BuildError(f"minatoloader: MINATOLOADER_PREBUILT_LIBRARY={prebuilt!r} is not a file")
        shutil.copyfile(prebuilt, out)
        return out
    root = _repo_root()
    if not (root / "capi").is_dir():
        raise BuildError(f"minatoloader: {root / 'capi'} is missing: the C ABI package is needed to build the library")
    go = _go_command()
    env = dict(os.environ)
    env["CGO_ENABLED"] = "1"
    if not any(env.get(k) for k in ("GOCACHE", "XDG_CACHE_HOME", "HOME")):
        env["GOCACHE"] = str(out_dir / "gocache")
    cmd = [go, "build", "-buildmode=c-shared", "-trimpath", *_build_tags(root, env), "-o", str(out), "./capi"]
    proc = subprocess.run(cmd, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0 or not out.is_file():
        raise BuildError(
            f"minatoloader: `{' '.join(cmd)}` in {root} failed (exit status {proc.returncode}):\n"
            f"{proc.stdout.strip()}\n"
            "cgo needs a C compiler (CC, default gcc); the module's dependencies must be in the "
            "module cache or reachable through GOPROXY."
        )
    return out


# ------------------------------------------------------------------ archives


def _package_files() -> list[tuple[str, Path]]:
    """(archive name, path) of the package's own files, without build outputs."""
    pkg = PYTHON_DIR / PACKAGE
    files = []
    for path in sorted(pkg.rglob("*")):
        rel = path.relative_to(pkg)
        if not path.is_file() or rel.parts[0] in ("_lib", "include") or "__pycache__" in rel.parts:
            continue
        if path.suffix in (".py", ".typed", ".pyi"):
            files.append((f"{PACKAGE}/{rel.as_posix()}", path))
    return files


def _header() -> Path:
    header = _repo_root() / "include" / HEADER_NAME
    if not header.is_file():
        raise BuildError(f"minatoloader: the C ABI header {header} is missing")
    return header


def _record_hash(data: bytes) -> str:
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _write_wheel(wheel_directory: str, members: list[tuple[str, bytes, int]]) -> str:
    """Writes the wheel: members are (archive name, content, unix mode); the
    dist-info files are added here. Returns the wheel's file name."""
    name, version, metadata = _metadata()
    tag = f"py3-none-{_platform_tag()}"
    dist_info = _dist_info_name(name, version)
    members = list(members)
    members.append((f"{dist_info}/METADATA", metadata.encode("utf-8"), 0o644))
    members.append((f"{dist_info}/WHEEL", _wheel_file(tag).encode("utf-8"), 0o644))
    members.append((f"{dist_info}/top_level.txt", f"{PACKAGE}\n".encode(), 0o644))
    record_name = f"{dist_info}/RECORD"
    record = io.StringIO()
    for arcname, data, _ in members:
        record.write(f"{arcname},{_record_hash(data)},{len(data)}\n")
    record.write(f"{record_name},,\n")
    members.append((record_name, record.getvalue().encode("utf-8"), 0o644))

    wheel_name = f"{_normalize(name)}-{version}-{tag}.whl"
    target = Path(wheel_directory) / wheel_name
    tmp = target.with_suffix(".whl.part")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for arcname, data, mode in members:
            info = zipfile.ZipInfo(arcname, date_time=_ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (0o100000 | mode) << 16
            zf.writestr(info, data)
    os.replace(tmp, target)
    return wheel_name


# ------------------------------------------------------------------ PEP 517 hooks


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    return []


def get_requires_for_build_editable(config_settings: dict[str, Any] | None = None) -> list[str]:
    return []


def get_requires_for_build_sdist(config_settings: dict[str, Any] | None = None) -> list[str]:
    return []


def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: dict[str, Any] | None = None) -> str:
    name, version, metadata = _metadata()
    dist_info = Path(metadata_directory) / _dist_info_name(name, version)
    dist_info.mkdir(parents=True, exist_ok=True)
    (dist_info / "METADATA").write_text(metadata, encoding="utf-8")
    (dist_info / "WHEEL").write_text(_wheel_file(f"py3-none-{_platform_tag()}"), encoding="utf-8")
    return dist_info.name


def prepare_metadata_for_build_editable(metadata_directory: str, config_settings: dict[str, Any] | None = None) -> str:
    return prepare_metadata_for_build_wheel(metadata_directory, config_settings)


def build_wheel(
    wheel_directory: str, config_settings: dict[str, Any] | None = None, metadata_directory: str | None = None
) -> str:
    members = [(arc, path.read_bytes(), 0o644) for arc, path in _package_files()]
    members.append((f"{PACKAGE}/include/{HEADER_NAME}", _header().read_bytes(), 0o644))
    with tempfile.TemporaryDirectory(prefix="minatoloader-build-") as tmp:
        lib = _build_library(Path(tmp))
        members.append((f"{PACKAGE}/_lib/{LIBRARY_NAME}", lib.read_bytes(), 0o755))
    return _write_wheel(wheel_directory, members)


def build_editable(
    wheel_directory: str, config_settings: dict[str, Any] | None = None, metadata_directory: str | None = None
) -> str:
    """An editable install: a .pth file puts this python/ directory on
    sys.path, and the library is built into minatoloader/_lib/ in the source
    tree (ignored by git). Rerun the install after changing Go code, or point
    MINATOLOADER_LIBRARY at a library you rebuild yourself."""
    lib_dir = PYTHON_DIR / PACKAGE / "_lib"
    lib_dir.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="minatoloader-build-") as tmp:
        lib = _build_library(Path(tmp))
        shutil.copyfile(lib, lib_dir / (LIBRARY_NAME + ".part"))
        os.replace(lib_dir / (LIBRARY_NAME + ".part"), lib_dir / LIBRARY_NAME)
    pth = f"{PYTHON_DIR}\n".encode()
    name, version, _ = _metadata()
    return _write_wheel(wheel_directory, [(f"__editable__.{_normalize(name)}-{version}.pth", pth, 0o644)])


def build_sdist(sdist_directory: str, config_settings: dict[str, Any] | None = None) -> str:
    """A source archive that builds on its own: the python/ tree plus a _go/
    copy of the Go module (go.mod, go.sum, the Go/C sources, include/)."""
    name, version, metadata = _metadata()
    base = f"{_normalize(name)}-{version}"
    root = _repo_root()
    entries: list[tuple[str, Path]] = [("pyproject.toml", PYTHON_DIR / "pyproject.toml")]
    entries += [(f"_build/{p.name}", p) for p in sorted((PYTHON_DIR / "_build").glob("*.py"))]
    entries += _package_files()
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if not path.is_file() or any(part.startswith(".") for part in rel.parts):
            continue
        if rel.parts[0] in _SDIST_SKIP_DIRS or "testdata" in rel.parts or path.name.endswith("_test.go"):
            continue
        if rel.name in ("go.mod", "go.sum") or path.suffix in _GO_SOURCE_SUFFIXES or rel.parts[0] == "include":
            entries.append((f"_go/{rel.as_posix()}", path))
    sdist_name = f"{base}.tar.gz"
    target = Path(sdist_directory) / sdist_name
    with tarfile.open(target, "w:gz", format=tarfile.PAX_FORMAT) as tar:

        def add(arcname: str, data: bytes) -> None:
            info = tarfile.TarInfo(f"{base}/{arcname}")
            info.size = len(data)
            info.mode = 0o644
            info.mtime = 315532800  # 1980-01-01, as in the wheel
            tar.addfile(info, io.BytesIO(data))

        add("PKG-INFO", metadata.encode("utf-8"))
        for arcname, path in entries:
            add(arcname, path.read_bytes())
    return sdist_name
