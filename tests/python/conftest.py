"""Shared setup of the Python tests.

The package under test is the installed one (``pip install ./python``, then
``python -m pytest tests/python`` from that environment). Without an
installed package the tests fall back to the source tree (``python/``) and
to a library found through MINATOLOADER_LIBRARY, the checkout's
build/libminatoloader.so, or one built here with ``go build``.
"""

from __future__ import annotations

import gc
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

try:
    import minatoloader
except ImportError:
    sys.path.insert(0, str(REPO / "python"))
    import minatoloader

LIVE_KEYS = ("live_loaders", "live_batches", "live_buffers", "live_goroutines")


def _ensure_library(tmp_dir: Path) -> None:
    try:
        minatoloader.library_path()
        return
    except minatoloader.LibraryError:
        if os.environ.get("MINATOLOADER_LIBRARY"):
            raise
    go = shutil.which("go") or "/usr/local/go/bin/go"
    out = tmp_dir / "libminatoloader.so"
    subprocess.run([go, "build", "-buildmode=c-shared", "-o", str(out), "./capi"], cwd=REPO, check=True)
    os.environ["MINATOLOADER_LIBRARY"] = str(out)
    minatoloader.library_path()


@pytest.fixture(scope="session", autouse=True)
def library(tmp_path_factory: pytest.TempPathFactory) -> str:
    _ensure_library(tmp_path_factory.mktemp("lib"))
    return minatoloader.library_path()


def live_counters() -> dict[str, int]:
    c = minatoloader.counters()
    return {k: c[k] for k in LIVE_KEYS}


def wait_released(limit_s: float = 20.0) -> dict[str, int]:
    """Collects garbage and waits (bounded) for every live_* counter to reach
    0; returns the last reading. Goroutines stop in the background after a
    cancellation, so this polls rather than reading once."""
    deadline = time.monotonic() + limit_s
    while True:
        gc.collect()
        c = live_counters()
        if not any(c.values()) or time.monotonic() > deadline:
            return c
        time.sleep(0.01)


@pytest.fixture(autouse=True)
def no_leaks(library: str) -> Iterator[None]:
    """Every test must leave no loader, batch, buffer or goroutine behind
    (compared with what was live before it, so that one leak fails one test)."""
    before = wait_released(limit_s=2.0)
    yield
    after = wait_released()
    leaked = {k: after[k] - before[k] for k in LIVE_KEYS if after[k] > before[k]}
    assert not leaked, f"leaked: {leaked} (live before the test: {before})"


def epoch_indices(loader: minatoloader.NativeLoader) -> list:
    """The sample indices of one epoch, batch by batch (needs return_indices=True)."""
    out = []
    for item in loader:
        out.append([int(i) for i in item[2]])
    return out
