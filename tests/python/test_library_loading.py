"""Finding and loading libminatoloader.so; failures list every path tried."""

import os
import subprocess
import sys
from pathlib import Path

import minatoloader
from minatoloader import _native


def _run(code: str, **env: str) -> subprocess.CompletedProcess:
    full_env = dict(os.environ)
    full_env.update(env)
    pkg_parent = str(Path(minatoloader.__file__).resolve().parent.parent)
    full_env["PYTHONPATH"] = pkg_parent + os.pathsep + full_env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-c", code], env=full_env, capture_output=True, text=True, timeout=120)


def test_abi_version_checked() -> None:
    assert _native.abi_version() == minatoloader.ABI_VERSION == 5
    assert Path(minatoloader.library_path()).is_file()


def test_import_does_not_load_the_library() -> None:
    proc = _run("import minatoloader, minatoloader._native as n; print(n.library_path())")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "None"


def test_missing_library_lists_paths_tried(tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "libminatoloader.so"
    proc = _run(
        "import minatoloader\n"
        "try:\n"
        "    minatoloader.counters()\n"
        "except ImportError as e:\n"
        "    print(type(e).__name__); print(e)\n",
        MINATOLOADER_LIBRARY=str(missing),
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("LibraryError")
    assert str(missing) in proc.stdout
    assert "MINATOLOADER_LIBRARY" in proc.stdout


def test_not_a_library(tmp_path: Path) -> None:
    bogus = tmp_path / "libminatoloader.so"
    bogus.write_bytes(b"not an ELF file")
    proc = _run(
        "import minatoloader\n"
        "try:\n"
        "    minatoloader.counters()\n"
        "except minatoloader.LibraryError as e:\n"
        "    print(e)\n",
        MINATOLOADER_LIBRARY=str(bogus),
    )
    assert proc.returncode == 0, proc.stderr
    assert "cannot be loaded" in proc.stdout and str(bogus) in proc.stdout


def test_candidate_paths_without_env(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("MINATOLOADER_LIBRARY", raising=False)
    paths = _native.candidate_paths()
    pkg = Path(minatoloader.__file__).resolve().parent
    assert paths[0] == pkg / "_lib" / "libminatoloader.so"


def test_get_include() -> None:
    assert (Path(minatoloader.get_include()) / "minatoloader.h").is_file()
