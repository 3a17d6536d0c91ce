"""Exceptions raised by minatoloader.

Each status code of the C ABI maps to one class (see ``_native.check``); the
message is the library's own, which names the argument or the sample at
fault. Every class derives from :class:`Error` and from the built-in
exception a Python user would expect (``ValueError`` for a bad argument,
``RuntimeError`` for a failed sample, ...), so existing ``except`` clauses
keep working.

An error raised from a status carries the library's structured account of
it in ``detail`` (the JSON object of ``ml_last_error_detail``, see
include/minatoloader.h): code that needs the failing sample, the worker's
Python exception or the skip budget reads those fields, never the message.
"""

from __future__ import annotations

from typing import Any


class Error(Exception):
    """Base class of every minatoloader exception. ``status`` is the C ABI
    status code behind it (0 when the error was raised on the Python side);
    ``detail`` the library's description of it as a dict (keys "status",
    "kind", "message", "index", "path", "step", "python", "worker", "pid",
    "init", "skipped", "max_skipped"; see ``ml_last_error_detail``), None when
    the error was raised on the Python side."""

    status: int = 0
    detail: dict[str, Any] | None = None

    def __init__(self, message: str, status: int | None = None, *, detail: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        if status is not None:
            self.status = status
        self.detail = detail


class InvalidArgumentError(Error, ValueError):
    """A bad argument or option (ML_ERR_INVALID_ARGUMENT); the message names it."""

    status = -1


class UnsupportedArgumentError(InvalidArgumentError):
    """An argument of torch's DataLoader that minatoloader does not support
    yet; raised rather than silently ignoring the argument."""


class ClosedError(Error, RuntimeError):
    """The loader or batch was closed (ML_ERR_CLOSED), or the handle is not
    known to the library (ML_ERR_INVALID_HANDLE)."""

    status = -4


class SampleError(Error, RuntimeError):
    """A sample failed to load or transform (ML_ERR_SAMPLE); the message
    names its dataset index. The epoch it belonged to is over.

    ``index`` (the dataset index), ``path`` (the sample's file(s), for
    sources with files) and ``step`` (the failing step: "load" for the
    source, "batch" for the batching checks, else a transform's name) come
    from ``detail``; each is None when unknown."""

    status = -3

    def __init__(self, message: str, status: int | None = None, *, detail: dict[str, Any] | None = None) -> None:
        super().__init__(message, status, detail=detail)
        d = detail or {}
        self.index: int | None = d.get("index")
        self.path: str | None = d.get("path")
        self.step: str | None = d.get("step")


class ForkedError(Error, RuntimeError):
    """The library was used in a child process created by fork() after the
    parent had loaded it (ML_ERR_FORKED). The Go runtime does not survive
    fork(); start worker processes with the "spawn" or "forkserver"
    multiprocessing start method, or fork before the first use."""

    status = -5


class NoMemoryError(Error, MemoryError):
    """A batch buffer could not be allocated (ML_ERR_NO_MEMORY)."""

    status = -6


class InternalError(Error, RuntimeError):
    """A bug inside the library (ML_ERR_INTERNAL): a recovered panic. The
    process is unharmed; please report the message."""

    status = -7


class StateError(Error, RuntimeError):
    """A call not valid in the loader's current state (ML_ERR_STATE), such
    as asking for a batch before an epoch was started."""

    status = -8


class LibraryError(Error, ImportError):
    """libminatoloader.so could not be found or loaded, or it was built for
    another version of the C ABI. The message lists every path tried."""


__all__ = [
    "Error",
    "InvalidArgumentError",
    "UnsupportedArgumentError",
    "ClosedError",
    "SampleError",
    "ForkedError",
    "NoMemoryError",
    "InternalError",
    "StateError",
    "LibraryError",
]
