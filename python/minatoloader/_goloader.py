"""The one wrapper of a Go loader handle, and the feeder of its order.

Every path that runs data through the Go core holds a :class:`GoLoader`:
the DataLoader over a native dataset, over a Python map-style dataset
(worker processes the core schedules), and :class:`NativeLoader`. It owns
the handle (closed once, also at garbage collection), waits for batches in
slices so that Ctrl-C, ``timeout`` and a stop request are honoured, and
keeps the batch handle it received where ``close()`` finds it, so an
exception raised as the call returns cannot leak it.

:class:`Feeder` takes the batches of torch's index sampler (any sampler,
batch sampler or DistributedSampler) and feeds them to a loader created
with ``feed=true``, keeping ``max_inflight`` samples ahead of those that
came back.
"""

from __future__ import annotations

import ctypes
import json
import math
import operator
import threading
import time
from collections import deque
from collections.abc import Iterator
from typing import Any, Callable

import numpy as np

from . import _native
from ._handle import NativeHandle
from .errors import InternalError

# The longest single wait in the library: a blocked next() wakes this often
# to honour Ctrl-C (delivered between bytecodes), `timeout` and stop.
POLL_S = 0.1


def timeout_error(timeout: Any) -> RuntimeError:
    """torch's message, with the value as the user gave it ("1 seconds")."""
    err = RuntimeError(f"DataLoader timed out after {timeout} seconds")
    err.batch_timeout = True  # type: ignore[attr-defined]
    return err


class GoLoader(NativeHandle):
    """Owns one ``ml_loader`` handle (see include/minatoloader.h)."""

    _kind = "loader"

    def __init__(self, config: dict[str, Any]) -> None:
        self._out = ctypes.c_uint64(0)  # a batch handle, written by C
        super().__init__(_native.loader_create(json.dumps(config)), _native.loader_close)

    def start_epoch(self, epoch: int) -> None:
        _native.loader_start_epoch(self._live_handle(), epoch)

    def feed(self, indices: list[int], sizes: list[int], last: bool) -> None:
        _native.loader_feed(
            self._live_handle(), np.asarray(indices, dtype=np.int64), np.asarray(sizes, dtype=np.int64), last
        )

    def progress(self) -> tuple[int, int]:
        """This epoch's samples (delivered, skipped)."""
        return _native.loader_progress(self._live_handle())

    def lengths(self) -> tuple[int, int]:
        """(batches, samples) per epoch of a loader that orders itself."""
        return _native.loader_len(self._live_handle())

    def stats(self) -> dict[str, Any]:
        """The library's stats of this loader (a JSON object as a dict)."""
        result: dict[str, Any] = json.loads(_native.loader_stats(self._live_handle()))
        return result

    def next_batch(
        self,
        timeout: Any = 0,
        *,
        stopping: threading.Event | None = None,
        between: Callable[[], None] | None = None,
    ) -> int:
        """Waits for the next batch: its handle, held here until
        :meth:`release_batch` (or the next call, or close); 0 at the end of
        the epoch or once ``stopping`` is set. ``between`` runs before each
        wait slice (feeding, liveness checks). Raises torch's RuntimeError
        after ``timeout`` seconds (0: no limit) and the library's error when
        a sample failed."""
        self.release_batch()
        handle = self._live_handle()
        deadline = time.monotonic() + timeout if timeout else None
        while True:
            if stopping is not None and stopping.is_set():
                return 0
            if between is not None:
                between()
            wait = POLL_S if deadline is None else min(POLL_S, deadline - time.monotonic())
            if wait <= 0:
                raise timeout_error(timeout)
            rc = _native.loader_next_to(handle, max(1, math.ceil(wait * 1000)), self._out)
            if rc == _native.OK:
                return int(self._out.value)
            if rc == _native.END_OF_EPOCH:
                return 0
            if rc != _native.TIMEOUT:
                raise InternalError(f"minatoloader: ml_loader_next returned unknown status {rc}", _native.ERR_INTERNAL)

    def take_batch(self) -> int:
        """Hands the batch handle over to the caller, who releases it."""
        h = int(self._out.value)
        self._out.value = 0
        return h

    def release_batch(self) -> None:
        h = int(self._out.value)
        if h:
            try:
                _native.batch_release(h)
            except Exception:
                pass  # already released (interrupted between release and reset)
            self._out.value = 0

    def close(self) -> None:
        if not self.closed:
            self.release_batch()
        super().close()


class Feeder:
    """The batches of an index sampler, fed to a ``feed=true`` loader.

    ``auto``: the sampler yields lists (a batch sampler) rather than single
    indices. A resumed epoch skips its first ``skip_batches`` batches
    (in-order resume) or the samples in ``skip_samples`` (any-order)."""

    def __init__(
        self,
        sampler_iter: Iterator[Any],
        *,
        auto: bool,
        skip_batches: int = 0,
        skip_samples: set[int] | None = None,
    ) -> None:
        self.it = sampler_iter
        self.auto = auto
        self.skip_batches = skip_batches
        self.skip_samples = skip_samples or set()
        self.lookahead: deque[list[int]] = deque()
        self.go: GoLoader | None = None
        self.max_inflight = 0
        self.max_batch = 1
        self.count_skipped = False
        self.fed = 0
        self.exhausted = False
        self.ints = True  # indices must be ints (the Go core schedules them)
        self.lock = threading.Lock()

    def pull(self) -> list[int] | None:
        """The next batch of the sampler as a list of ints, or None."""
        while True:
            try:
                b = next(self.it)
            except StopIteration:
                return None
            b = list(b) if self.auto else [b]
            if self.skip_batches > 0:
                self.skip_batches -= 1
                continue
            try:
                if self.ints:
                    b = [operator.index(i) for i in b]
            except TypeError:
                bad = next(i for i in b if not hasattr(i, "__index__"))
                raise TypeError(
                    f"minatoloader.DataLoader: the sampler yielded the index {bad!r} ({type(bad).__name__}); "
                    "the Go core schedules integer indices (map a custom key to an int in the dataset)"
                ) from None
            if self.skip_samples:
                b = [i for i in b if i not in self.skip_samples]
                if not b:
                    continue
            return b

    def peek(self) -> list[int] | None:
        if not self.lookahead:
            b = self.pull()
            if b is None:
                return None
            self.lookahead.append(b)
        return self.lookahead[0]

    def attach(self, go: GoLoader, *, max_inflight: int, max_batch: int, count_skipped: bool) -> None:
        self.go, self.max_inflight, self.max_batch, self.count_skipped = go, max_inflight, max_batch, count_skipped

    def top_up(self, received: int) -> None:
        """Feeds until max_inflight samples (plus a batch) are fed beyond
        the ``received`` ones, or the sampler ends."""
        with self.lock:
            if self.exhausted or self.go is None:
                return
            settled = received
            if self.count_skipped:
                # A skipped sample frees its place in flight without
                # reaching a batch: count it, or an epoch with more skips
                # than max_inflight waits for a feed that never comes.
                settled += self.go.progress()[1]
            want = settled + self.max_inflight + self.max_batch
            idx: list[int] = []
            sizes: list[int] = []
            while self.fed + len(idx) < want:
                b = self.lookahead.popleft() if self.lookahead else self.pull()
                if b is None:
                    self.exhausted = True
                    break
                if len(b) > self.max_inflight:
                    raise ValueError(
                        f"DataLoader: the batch sampler gave a batch of {len(b)} samples, more than this loader's "
                        f"bound of {self.max_inflight} samples in flight (raise prefetch_factor)"
                    )
                idx.extend(b)
                sizes.append(len(b))
            if idx or self.exhausted:
                self.go.feed(idx, sizes, self.exhausted)
                self.fed += len(idx)
