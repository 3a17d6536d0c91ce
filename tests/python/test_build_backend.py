"""The in-tree PEP 517 backend writes a correct wheel (and sdist)."""

import base64
import hashlib
import importlib.util
import shutil
import sys
import tarfile
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
BACKEND = REPO / "python" / "_build" / "backend.py"

needs_go = pytest.mark.skipif(
    shutil.which("go") is None and not Path("/usr/local/go/bin/go").exists(), reason="the Go toolchain is not installed"
)


@pytest.fixture(scope="module")
def backend() -> ModuleType:
    spec = importlib.util.spec_from_file_location("minatoloader_build_backend", BACKEND)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_no_build_requirements(backend: ModuleType) -> None:
    assert backend.get_requires_for_build_wheel() == []
    assert backend.get_requires_for_build_editable() == []


def test_fallback_pyproject_reader_agrees(backend: ModuleType) -> None:
    text = (REPO / "python" / "pyproject.toml").read_text()
    subset = backend._read_project_subset(text)
    assert subset["name"] == "minatoloader"
    assert subset["version"] == "0.1.0"
    assert subset["requires-python"] == ">=3.9"
    assert subset["dependencies"] == ["numpy"]
    if sys.version_info >= (3, 11):
        import tomllib

        assert subset == tomllib.loads(text)["project"]


def test_prepare_metadata(backend: ModuleType, tmp_path: Path) -> None:
    name = backend.prepare_metadata_for_build_wheel(str(tmp_path))
    assert name == "minatoloader-0.1.0.dist-info"
    metadata = (tmp_path / name / "METADATA").read_text()
    for line in ("Name: minatoloader", "Version: 0.1.0", "Requires-Python: >=3.9", "Requires-Dist: numpy"):
        assert line in metadata.splitlines()


@needs_go
def test_wheel_contents_and_record(backend: ModuleType, tmp_path: Path) -> None:
    name = backend.build_wheel(str(tmp_path))
    platform = backend._platform_tag()
    assert name == f"minatoloader-0.1.0-py3-none-{platform}.whl"
    with zipfile.ZipFile(tmp_path / name) as zf:
        names = set(zf.namelist())
        for member in (
            "minatoloader/__init__.py",
            "minatoloader/_native.py",
            "minatoloader/_lib/libminatoloader.so",
            "minatoloader/include/minatoloader.h",
            "minatoloader-0.1.0.dist-info/METADATA",
            "minatoloader-0.1.0.dist-info/WHEEL",
            "minatoloader-0.1.0.dist-info/RECORD",
        ):
            assert member in names, member
        assert not any("__pycache__" in n for n in names)
        wheel = zf.read("minatoloader-0.1.0.dist-info/WHEEL").decode()
        assert "Root-Is-Purelib: false" in wheel.splitlines()
        assert f"Tag: py3-none-{platform}" in wheel.splitlines()
        record = zf.read("minatoloader-0.1.0.dist-info/RECORD").decode().splitlines()
        listed = set()
        for line in record:
            path, digest, size = line.rsplit(",", 2)
            listed.add(path)
            if path.endswith("RECORD"):
                assert digest == "" and size == ""
                continue
            data = zf.read(path)
            expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert digest == f"sha256={expected}", path
            assert int(size) == len(data), path
        assert listed == names
        so = zf.getinfo("minatoloader/_lib/libminatoloader.so")
        assert (so.external_attr >> 16) & 0o111
        assert zf.read("minatoloader/_lib/libminatoloader.so")[:4] == b"\x7fELF"


def test_sdist_carries_the_go_module(backend: ModuleType, tmp_path: Path) -> None:
    name = backend.build_sdist(str(tmp_path))
    assert name == "minatoloader-0.1.0.tar.gz"
    with tarfile.open(tmp_path / name) as tar:
        names = set(tar.getnames())
    for member in (
        "PKG-INFO",
        "pyproject.toml",
        "_build/backend.py",
        "minatoloader/__init__.py",
        "_go/go.mod",
        "_go/include/minatoloader.h",
        "_go/capi/main.go",
    ):
        assert f"minatoloader-0.1.0/{member}" in names, member
    assert not any(n.endswith("_test.go") for n in names)
