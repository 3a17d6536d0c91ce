"""ctypes bindings of libminatoloader.so (include/minatoloader.h).

The library is found relative to this file, loaded on first use (importing
minatoloader does no work), and checked for the ABI version this module was
written against. Every call goes through a wrapper here that

* refuses to run in a child created by fork() after the library was loaded
  (the Go runtime does not survive fork(): such a call would hang), raising
  ForkedError before touching the library;
* maps a negative status to an exception class (never by message text), with
  the message the library stored for this thread, read right after the call.

ctypes releases the GIL for the duration of each call.
"""

from __future__ import annotations

import ctypes
import json
import os
import threading
from ctypes import (
    byref,
    c_int,
    c_int64,
    c_size_t,
    c_uint64,
    c_void_p,
)
from typing import Any
from pathlib import Path

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
)

from ._abi import (  # noqa: F401 - re-exported: the rest of the package reads them from here
    ABI_VERSION,
    LIBRARY_ENV,
    LIBRARY_NAME,
    OK,
    END_OF_EPOCH,
    TIMEOUT,
    ERR_INVALID_ARGUMENT,
    ERR_INVALID_HANDLE,
    ERR_SAMPLE,
    ERR_CLOSED,
    ERR_FORKED,
    ERR_NO_MEMORY,
    ERR_INTERNAL,
    ERR_STATE,
    STATUS_NAMES,
    FIELD_DATA,
    FIELD_LABELS,
    FIELD_INDICES,
    MAX_NDIM,
    DL_CPU,
    DL_CUDA,
    DL_CUDA_HOST,
    DLDataType,
    DLDevice,
    DLTensor,
    DLManagedTensor,
    DLPackVersion,
    DLManagedTensorVersioned,
    BatchInfo,
    FieldInfo,
    Counters,
    _PROTOTYPES,
)

_PKG_DIR = Path(__file__).resolve().parent

_ERROR_CLASSES = {
    ERR_INVALID_ARGUMENT: InvalidArgumentError,
    ERR_INVALID_HANDLE: ClosedError,
    ERR_SAMPLE: SampleError,
    ERR_CLOSED: ClosedError,
    ERR_FORKED: ForkedError,
    ERR_NO_MEMORY: NoMemoryError,
    ERR_INTERNAL: InternalError,
    ERR_STATE: StateError,
}

_lock = threading.Lock()
_lib: ctypes.CDLL | None = None
_lib_path: str | None = None
_load_pid: int | None = None
_forked = False


def _after_fork_in_child() -> None:
    global _forked
    if _lib is not None:
        _forked = True


os.register_at_fork(after_in_child=_after_fork_in_child)


def forked() -> bool:
    """True in a child process forked after this process loaded the library."""
    return _forked or (_load_pid is not None and os.getpid() != _load_pid)


def _fork_message() -> str:
    return (
        f"minatoloader: this process (pid {os.getpid()}) was created by fork() after its parent "
        f"(pid {_load_pid}) had loaded libminatoloader.so; the Go runtime inside it does not "
        "survive fork(), so this process may not use it (a call would hang). Create worker "
        "processes with the 'spawn' or 'forkserver' start method (multiprocessing.get_context"
        "('spawn'), or multiprocessing_context='spawn' for torch's DataLoader), or fork before "
        "the first use of minatoloader."
    )


def candidate_paths() -> list[Path]:
    """The paths tried, in order: $MINATOLOADER_LIBRARY alone when set, else
    the library shipped in the package, then, when the package is run from a
    source checkout (python/minatoloader), the checkout's build/ directory."""
    env = os.environ.get(LIBRARY_ENV)
    if env:
        return [Path(env)]
    paths = [_PKG_DIR / "_lib" / LIBRARY_NAME]
    checkout = _PKG_DIR.parent.parent
    if _PKG_DIR.parent.name == "python" and (checkout / "go.mod").is_file():
        paths.append(checkout / "build" / LIBRARY_NAME)
    return paths


def library() -> ctypes.CDLL:
    """The loaded library; loads it on first use. Raises ForkedError in a
    forked child and LibraryError when no usable library is found."""
    if forked():
        raise ForkedError(_fork_message())
    lib = _lib
    if lib is None:
        lib = _load()
    return lib


def library_path() -> str | None:
    """Where the loaded library came from (None before the first use)."""
    return _lib_path


def _load() -> ctypes.CDLL:
    global _lib, _lib_path, _load_pid
    with _lock:
        if _lib is not None:
            return _lib
        tried: list[str] = []
        found_any = False
        for path in candidate_paths():
            if not path.is_file():
                tried.append(f"  {path}: not found")
                continue
            found_any = True
            try:
                lib = ctypes.CDLL(str(path))
            except OSError as exc:
                tried.append(f"  {path}: cannot be loaded: {exc}")
                continue
            try:
                version_fn = lib.ml_abi_version
            except AttributeError:
                tried.append(f"  {path}: not a minatoloader library (no ml_abi_version symbol)")
                continue
            version_fn.restype = c_int
            version_fn.argtypes = []
            version = version_fn()
            if version != ABI_VERSION:
                tried.append(
                    f"  {path}: C ABI version {version}, this Python package needs {ABI_VERSION} "
                    "(the library and the package come from different builds)"
                )
                continue
            missing = _declare(lib)
            if missing:
                tried.append(f"  {path}: missing functions {', '.join(missing)} (an incomplete or older build)")
                continue
            _lib, _lib_path, _load_pid = lib, str(path), os.getpid()
            return lib
        if os.environ.get(LIBRARY_ENV):
            cause = (
                f"{LIBRARY_ENV} is set and names a path that is not a usable library; unset it to use the packaged one."
            )
        elif not found_any:
            cause = (
                "the library was not built. Install the package with `pip install ./python` from the "
                "repository root (it builds the Go library), or build it with "
                "`go build -buildmode=c-shared -o build/libminatoloader.so ./capi` and set "
                f"{LIBRARY_ENV}=build/libminatoloader.so."
            )
        else:
            cause = "rebuild and reinstall the package (`pip install ./python`) so that library and package match."
        raise LibraryError(
            "minatoloader: no usable libminatoloader.so. Paths tried:\n" + "\n".join(tried) + "\nLikely cause: " + cause
        )


def _declare(lib: ctypes.CDLL) -> list[str]:
    missing = []
    for name, (restype, argtypes) in _PROTOTYPES.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            missing.append(name)
            continue
        fn.restype = restype
        fn.argtypes = argtypes
    return missing


def _read_last(fn: Any) -> bytes:
    """What fn (ml_last_error or ml_last_error_detail) copies out, whole."""
    buf = ctypes.create_string_buffer(4096)
    needed = c_size_t(0)
    fn(buf, len(buf), byref(needed))
    text = buf.value
    if needed.value >= len(buf):
        bigger = ctypes.create_string_buffer(needed.value + 1)
        fn(bigger, len(bigger), byref(needed))
        if len(bigger.value) > len(text):
            text = bigger.value
    return bytes(text)


def last_error(lib: ctypes.CDLL) -> str:
    """This thread's last error message. Call it right after the failing call."""
    return _read_last(lib.ml_last_error).decode("utf-8", errors="replace")


def last_error_detail(lib: ctypes.CDLL) -> dict[str, Any] | None:
    """This thread's last error as the library describes it
    (ml_last_error_detail: status, kind, message, index, path, step,
    python, worker, pid, init, skipped, max_skipped); None when it is not a
    JSON object. Call it right after the failing call."""
    try:
        detail = json.loads(_read_last(lib.ml_last_error_detail).decode("utf-8", errors="replace"))
    except ValueError:
        return None
    return detail if isinstance(detail, dict) else None


def error_for(lib: ctypes.CDLL, rc: int, call: str) -> Error:
    """The exception for status rc of `call`, with this thread's message
    and its detail (``err.detail``, see last_error_detail)."""
    message = last_error(lib)
    detail = last_error_detail(lib)
    cls = _ERROR_CLASSES.get(rc, InternalError)
    name = STATUS_NAMES.get(rc, f"unknown status {rc}")
    if not message:
        message = f"minatoloader: {call} failed with {name}"
    if rc == ERR_FORKED:
        message = f"{message}\n{_fork_message()}"
    return cls(message, rc, detail=detail)


def _check(lib: ctypes.CDLL, rc: int, call: str) -> int:
    if rc < 0:
        raise error_for(lib, rc, call)
    return rc


# ------------------------------------------------------------------ wrappers


def abi_version() -> int:
    return int(library().ml_abi_version())


def loader_create(config_json: str) -> int:
    lib = library()
    out = c_uint64(0)
    _check(lib, lib.ml_loader_create(config_json.encode("utf-8"), byref(out)), "ml_loader_create")
    return int(out.value)


def loader_len(loader: int) -> tuple[int, int]:
    lib = library()
    batches, samples = c_int64(0), c_int64(0)
    _check(lib, lib.ml_loader_len(loader, byref(batches), byref(samples)), "ml_loader_len")
    return int(batches.value), int(samples.value)


def loader_progress(loader: int) -> tuple[int, int]:
    """This epoch's samples (delivered, skipped)."""
    lib = library()
    delivered, skipped = c_int64(0), c_int64(0)
    _check(lib, lib.ml_loader_progress(loader, byref(delivered), byref(skipped)), "ml_loader_progress")
    return int(delivered.value), int(skipped.value)


def loader_start_epoch(loader: int, epoch: int) -> None:
    lib = library()
    _check(lib, lib.ml_loader_start_epoch(loader, epoch), "ml_loader_start_epoch")


def loader_feed(loader: int, indices: Any, sizes: Any, last: bool) -> None:
    """indices and sizes: C-contiguous int64 numpy arrays (copied by the call)."""
    lib = library()
    _check(
        lib,
        lib.ml_loader_feed(loader, indices.ctypes.data, len(indices), sizes.ctypes.data, len(sizes), 1 if last else 0),
        "ml_loader_feed",
    )


def loader_next_to(loader: int, timeout_ms: int, out: c_uint64) -> int:
    """ml_loader_next writing the handle into `out` from C, so that an
    exception raised as the call returns (Ctrl-C) cannot lose the handle:
    the caller releases out.value when it is set."""
    lib = library()
    return _check(lib, lib.ml_loader_next(loader, timeout_ms, byref(out)), "ml_loader_next")


def loader_next(loader: int, timeout_ms: int) -> tuple[int, int]:
    """Returns (status, batch handle): OK with a new handle, END_OF_EPOCH or
    TIMEOUT with 0. Raises on errors."""
    lib = library()
    out = c_uint64(0)
    rc = _check(lib, lib.ml_loader_next(loader, timeout_ms, byref(out)), "ml_loader_next")
    return rc, int(out.value)


def _read_text(fn, handle: Any, call: str) -> str:  # type: ignore[no-untyped-def]
    lib = library()
    size = 8192
    needed = c_size_t(0)
    while True:
        buf = ctypes.create_string_buffer(size)
        _check(lib, fn(handle, buf, size, byref(needed)), call)
        if needed.value < size:
            return buf.value.decode("utf-8", errors="replace")
        size = needed.value + 1


def dataset_info(dataset_json: str) -> str:
    """ml_dataset_info: validates a dataset description, returns its JSON info."""
    return _read_text(library().ml_dataset_info, dataset_json.encode(), "ml_dataset_info")


def loader_stats(loader: int) -> str:
    return _read_text(library().ml_loader_stats, loader, "ml_loader_stats")


def loader_close(loader: int) -> None:
    lib = library()
    _check(lib, lib.ml_loader_close(loader), "ml_loader_close")


def batch_info(batch: int) -> BatchInfo:
    lib = library()
    info = BatchInfo()
    _check(lib, lib.ml_batch_info(batch, byref(info)), "ml_batch_info")
    return info


def batch_field(batch: int, field: int) -> FieldInfo:
    lib = library()
    info = FieldInfo()
    _check(lib, lib.ml_batch_field(batch, field, byref(info)), "ml_batch_field")
    return info


def batch_export(batch: int, field: int, versioned: bool, stream: int) -> int:
    """Exports a field; returns the DLManagedTensor(Versioned) pointer."""
    lib = library()
    out = c_void_p(None)
    _check(lib, lib.ml_batch_export(batch, field, 1 if versioned else 0, stream, byref(out)), "ml_batch_export")
    if not out.value:
        raise InternalError("minatoloader: ml_batch_export returned ML_OK and a NULL tensor", ERR_INTERNAL)
    return int(out.value)


def batch_release(batch: int) -> None:
    lib = library()
    _check(lib, lib.ml_batch_release(batch), "ml_batch_release")


_destructor_address: int | None = None


def capsule_destructor() -> int:
    """The address of ml_dlpack_capsule_destructor, for PyCapsule_New."""
    global _destructor_address
    if _destructor_address is None:
        lib = library()
        address = ctypes.cast(lib.ml_dlpack_capsule_destructor, c_void_p).value
        if not address:
            raise InternalError("minatoloader: ml_dlpack_capsule_destructor has no address", ERR_INTERNAL)
        _destructor_address = int(address)
    return _destructor_address


def counters() -> dict[str, int]:
    lib = library()
    out = Counters()
    _check(lib, lib.ml_counters(byref(out)), "ml_counters")
    return {field[0]: int(getattr(out, field[0])) for field in Counters._fields_}
