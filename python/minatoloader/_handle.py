"""The one ownership base of objects that hold a library handle."""

from __future__ import annotations

import weakref
from typing import Any, Callable, TypeVar

from . import _native
from .errors import ClosedError

_Self = TypeVar("_Self", bound="NativeHandle")


def _finalize(release: Callable[[int], None], handle: int) -> None:
    # Runs at garbage collection or interpreter exit. In a forked child the
    # handle belongs to the parent's library state and must not be touched.
    if _native.forked():
        return
    release(handle)


class NativeHandle:
    """Owns one library handle: ``close()`` releases it exactly once
    (idempotent), the object is a context manager, and a finalizer releases
    the handle when the object is garbage collected or at interpreter exit.

    In a child process forked after the library was loaded, ``close()`` and
    the finalizer do nothing: the handle is the parent's.
    """

    _kind = "handle"

    def __init__(self, handle: int, release: Callable[[int], None]) -> None:
        self._handle = handle
        self._release = release
        self._finalizer = weakref.finalize(self, _finalize, release, handle)

    @property
    def closed(self) -> bool:
        """True once ``close()`` ran (or the handle was finalized)."""
        return not self._finalizer.alive

    def _live_handle(self) -> int:
        """The handle, or ClosedError when this object was closed."""
        if not self._finalizer.alive:
            raise ClosedError(f"minatoloader: the {self._kind} is closed")
        return self._handle

    def close(self) -> None:
        """Releases the handle. Safe to call more than once."""
        if self._finalizer.detach() is None:
            return
        if _native.forked():
            return
        self._release(self._handle)

    def __enter__(self: _Self) -> _Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        self.close()
