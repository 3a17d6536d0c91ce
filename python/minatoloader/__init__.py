"""minatoloader: a PyTorch data loader whose core is Go.

``from minatoloader import DataLoader`` is a drop-in for torch's DataLoader
(same constructor) over any torch Dataset (Python worker processes fed one
sample at a time by the Go core) and over native datasets (the whole
pipeline in Go); :class:`NativeLoader` exposes every option of the core. Batches arrive as DLPack views (torch tensors, numpy
arrays, or raw DLPack objects) without a copy.

Importing this package does no work: the shared library is loaded on first
use. Set MINATOLOADER_LIBRARY to load a library of your own build.

The Go runtime does not survive fork(): after the library has been used, a
forked child that calls it gets :class:`ForkedError`. DataLoader's own worker
processes never call it, so they may be forked (the default on Linux, as for
torch); for processes of your own that use the library, use "spawn" or
"forkserver".
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import _native, datasets, transforms
from .dataset import Dataset, SyntheticDataset
from .dlpack import Batch, Tensor
from .errors import (
    ClosedError,
    Error,
    ForkedError,
    InternalError,
    InvalidArgumentError,
    LibraryError,
    NoMemoryError,
    SampleError,
    StateError,
    UnsupportedArgumentError,
)
from ._worker import get_worker_info
from .loader import EpochIterator, NativeLoader

__version__ = "0.1.0"

if TYPE_CHECKING:
    from .dataloader import DataLoader

ABI_VERSION = _native.ABI_VERSION


def __getattr__(name: str) -> Any:
    # DataLoader subclasses torch's: importing it imports torch (seconds),
    # which `import minatoloader` alone (NativeLoader, worker processes)
    # should not pay.
    if name == "DataLoader":
        from .dataloader import DataLoader

        globals()["DataLoader"] = DataLoader
        return DataLoader
    raise AttributeError(f"module 'minatoloader' has no attribute {name!r}")


def counters() -> dict[str, int]:
    """The library-wide counters (ml_counters): live_loaders, live_batches,
    live_buffers, live_buffer_bytes, live_goroutines, total_buffers. A clean
    shutdown brings every live_* to 0."""
    return _native.counters()


def library_path() -> str:
    """The path of the loaded libminatoloader.so (loads it if needed)."""
    _native.library()
    path = _native.library_path()
    assert path is not None
    return path


def get_include() -> str:
    """The directory holding minatoloader.h, the C ABI header: the copy
    shipped in the package, else a source checkout's include/."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "include", here.parent.parent / "include"):
        if (candidate / "minatoloader.h").is_file():
            return str(candidate)
    raise FileNotFoundError(f"minatoloader.h is not in {here / 'include'} nor in {here.parent.parent / 'include'}")


__all__ = [
    "ABI_VERSION",
    "Batch",
    "ClosedError",
    "DataLoader",
    "Dataset",
    "EpochIterator",
    "Error",
    "ForkedError",
    "InternalError",
    "InvalidArgumentError",
    "LibraryError",
    "NativeLoader",
    "NoMemoryError",
    "SampleError",
    "StateError",
    "SyntheticDataset",
    "Tensor",
    "UnsupportedArgumentError",
    "__version__",
    "counters",
    "get_worker_info",
    "datasets",
    "get_include",
    "library_path",
    "transforms",
]
