"""Epochs the Go core schedules, fed from torch's index sampler.

Both a native dataset (decoding and transforms in Go) and a Python
map-style dataset with workers (processes the core sends one index at a
time: fast and slow lanes, spare processes) run here. This thread feeds the
sampler's batches (:class:`Feeder`), so any sampler, batch sampler or
DistributedSampler orders the epoch, exactly as with torch.

- :class:`NativeIter`: batches arrive as tensors (DLPack, no copy) and are
  handed to ``collate_fn`` only when it is not the default one.
- :class:`PyMapIter`: batches arrive as tickets into the workers' shared
  memory arenas; a collator thread loads and collates them (torch's main
  process likewise receives batches its workers collated).
"""

from __future__ import annotations

import ctypes
import queue
import threading
import traceback
import weakref
from typing import Any

import numpy as np

from . import _limits, _native
from ._collate import background_collate
from ._errmap import user_exception
from ._goloader import POLL_S, GoLoader, timeout_error
from ._iters import BaseIter
from ._pool import acquire
from ._session import Session
from .errors import Error
from .loader import converter, export_fields


def _has_torch() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


class FedIter(BaseIter):
    """An epoch of a GoLoader created with ``feed=true``."""

    own_go = False

    def __init__(self, session: Session, dl: Any) -> None:
        super().__init__(session, dl)
        feeder = self.feeder
        assert feeder is not None
        self.received = 0
        nw = max(1, dl.num_workers)
        pf = min(max(1, int(dl.prefetch_factor or 2)), _limits.MAX_PREFETCH_BATCHES)
        # The largest batch the core must hold: the batch size (torch's
        # BatchSampler never yields more than the sampler has, so a
        # batch_size of 2**40 is one batch of them all), or for a custom
        # batch_sampler a generous bound from its first batch.
        first = feeder.peek()
        if not self.auto:
            bmax = 1
        elif dl.batch_size is not None:
            bmax = dl.batch_size
            try:
                bmax = min(bmax, max(1, len(dl.sampler)))
            except TypeError:
                pass
        else:
            bmax = max(64, 2 * len(first or [1]))
        bmax = min(bmax, _limits.MAX_BATCH_SIZE)
        # Samples in flight beyond an epoch's length buy nothing; every size
        # the core allocates from stays under its bound (docs/failure-modes.md).
        want = max(pf * nw * bmax, bmax * (pf + 1) + nw)
        try:
            want = min(want, max(len(dl._index_sampler) * bmax, bmax + nw))
        except TypeError:
            pass
        self.max_inflight = min(want + nw, _limits.MAX_INFLIGHT)
        self.go = self.acquire_go(bmax, pf)
        self.go.start_epoch(self.epoch)
        feeder.attach(
            self.go, max_inflight=self.max_inflight, max_batch=bmax,
            count_skipped=True,  # skipped samples and failed batches free their slots
        )
        feeder.top_up(0)

    def common_config(self, bmax: int, pf: int) -> dict[str, Any]:
        opts = self.dl._ml_options
        cfg: dict[str, Any] = {
            "batch_size": bmax,
            "feed": True,
            "in_order": bool(self.dl.in_order),
            "max_inflight": self.max_inflight,
            "prefetch_batches": pf,
            "seed": self.base_seed,
            # torch's behaviour for "raise": the failed batch's error comes
            # in its place and the epoch goes on (core's on_error=batch).
            "on_error": "batch" if opts["on_error"] == "raise" else opts["on_error"],
            "max_skipped": self.budget(),
        }
        for opt in ("timeout_ms", "warmup_samples", "quantile"):
            if opts.get(opt) is not None:
                cfg[opt] = opts[opt]
        return cfg

    def acquire_go(self, bmax: int, pf: int) -> GoLoader:
        raise NotImplementedError

    def budget(self) -> int:
        b = self.dl._ml_options["max_skipped"]
        if b is None:
            return -1
        if isinstance(b, float):
            try:
                n = len(self.dl._index_sampler) * (self.dl.batch_size or 1)
            except TypeError:
                raise ValueError("max_skipped as a fraction needs a sampler with len()") from None
            return int(b * n)
        return int(b)

    def top_up(self) -> None:
        assert self.feeder is not None
        self.feeder.top_up(self.received)

    def release_go(self) -> None:
        go, self.go = self.go, None
        if go is None:
            return
        go.release_batch()
        if self.own_go:
            go.close()
        elif self.session.go is go:
            self.session.go_busy = False


def goes_on(err: Error) -> bool:
    """Whether the epoch goes on after err (a sample's own failure under
    the core's on_error=batch), as torch's iterator does after a worker's
    exception; a dead worker, a failed worker_init_fn or a spent skip
    budget end it."""
    d = err.detail or {}
    return d.get("kind") in ("sample", "python_exception") and not d.get("init") and d.get("max_skipped") is None


class Failed:
    """A batch's failure, handed from the collator thread in its place."""

    def __init__(self, exc: BaseException, goes_on: bool) -> None:
        self.exc, self.goes_on = exc, goes_on


def _item(x: Any) -> Any:
    """A 0-d integer tensor as the int a Python dataset returns (a label)."""
    if getattr(x, "ndim", 1) == 0 and "int" in str(getattr(x, "dtype", "")):
        return int(x)
    return x


def is_default_collate(fn: Any) -> bool:
    try:
        from torch.utils.data._utils.collate import default_collate
    except ImportError:
        return fn is None
    return fn is default_collate or fn is None


class NativeIter(FedIter):
    """A native dataset: decoding and transforms in the Go core."""

    def __init__(self, session: Session, dl: Any) -> None:
        self.output = "torch" if _has_torch() else "numpy"
        self.convert = converter(self.output)
        super().__init__(session, dl)

    def acquire_go(self, bmax: int, pf: int) -> GoLoader:
        s, dl = self.session, self.dl
        key = (bmax, pf, bool(dl.in_order), tuple(sorted((k, repr(v)) for k, v in dl._ml_options.items())))
        if s.go is not None and not s.go_busy and s.go_key == key and not s.go.closed:
            s.go_busy = True
            shared: GoLoader = s.go
            return shared
        cfg = self.common_config(bmax, pf)
        cfg["workers"] = max(1, dl.num_workers)
        cfg["dataset"] = dl._native_dataset.config()
        go = GoLoader(cfg)
        if s.go is None or s.go.closed:
            s.go, s.go_key, s.go_busy = go, key, True
        else:
            self.own_go = True  # another iterator runs on the shared one
        return go

    def next_data(self) -> Any:
        go = self.go
        if go is None:
            self.finish()
        assert go is not None
        try:
            h = go.next_batch(self.timeout, between=self.top_up)
        except Error as e:
            if not goes_on(e):
                self.close()
            raise
        if not h:
            self.finish()
        try:
            info = _native.batch_info(h)
            n = int(info.num_samples)
            indices = np.ctypeslib.as_array(info.indices, shape=(n,)).tolist() if n else []
            fields = export_fields(h, tuple(range(int(info.num_fields))), self.output, self.convert)
        finally:
            go.release_batch()
        self.received += n
        self.delivered.extend(indices)
        return self.collate(fields, n)

    def collate(self, fields: tuple[Any, ...], n: int) -> Any:
        """What torch's collate_fn would return over the dataset's samples:
        the default one gives the fields as a list (as default_collate does
        for tuple samples) with no copy; any other one gets the samples."""
        collate_fn = self.dl.collate_fn
        if self.auto and is_default_collate(collate_fn):
            return list(fields)
        samples = [tuple(_item(f[i]) if k else f[i] for k, f in enumerate(fields)) for i in range(n)]
        if not self.auto:
            return collate_fn(samples[0])
        return collate_fn(samples)

    def close(self) -> None:
        self.done = True
        self.release_go()


class PyMapIter(FedIter):
    """A Python map-style dataset in worker processes the core schedules."""

    def __init__(self, session: Session, dl: Any) -> None:
        self.pool: Any = None
        self.own_pool = False
        self.collator: threading.Thread | None = None
        self.stopping = threading.Event()
        self.ready: queue.Queue[Any] = queue.Queue(maxsize=max(1, int(dl.prefetch_factor or 2)))
        if session.batch_pool is None:
            from ._shm import BatchPool

            session.batch_pool = BatchPool(int(dl._ml_options.get("batch_pool_bytes") or 1 << 30))
        self.collate = background_collate(dl.collate_fn, session.batch_pool)
        super().__init__(session, dl)

    def acquire_go(self, bmax: int, pf: int) -> GoLoader:
        s, dl = self.session, self.dl
        opts = dl._ml_options
        key = (bmax, bool(dl.in_order), tuple(sorted((k, repr(v)) for k, v in opts.items())))
        if self.persistent and s.go is not None and s.go_key == key:
            self.pool = s.pool
            shared: GoLoader = s.go
            return shared
        if self.persistent:
            s.close_persistent()
        self.pool, self.own_pool = acquire(s, dl, "map" if self.auto else "map-single", self.base_seed, self.persistent)
        try:
            length = len(dl.dataset)
        except TypeError:
            length = 0
        nw = dl.num_workers
        cfg = self.common_config(bmax, pf)
        cfg.update({
            "workers": nw,
            "max_workers": nw,
            "adaptive": False,
            "slow_workers": max(1, len(self.pool.procs) - nw),
            "dataset": {"kind": "python", "length": int(length), "cpu_slots": nw, "procs": self.pool.hand_to_go()},
        })
        try:
            go = GoLoader(cfg)
        except BaseException:
            self.pool.stop()
            raise
        if self.persistent:
            s.go, s.go_key = go, key
        else:
            self.own_go = True
        return go

    def next_data(self) -> Any:
        if self.collator is None:
            self.collator = threading.Thread(
                target=PyMapIter._collate_loop, args=(weakref.ref(self), self.ready, self.stopping),
                name="minatoloader-collate", daemon=True,
            )
            self.collator.start()
        limit = self.timeout
        waited = 0.0
        while True:
            self.top_up()
            dead = self.pool.dead_worker() if self.pool is not None else ""
            if dead:
                self.close()
                raise RuntimeError(dead)
            if limit and waited >= limit:
                raise timeout_error(limit)
            wait = POLL_S if not limit else min(POLL_S, limit - waited)
            try:
                item = self.ready.get(timeout=wait)
            except queue.Empty:
                waited += wait
                continue
            if item is None:
                self.finish()
            if isinstance(item, Failed):
                if not item.goes_on:
                    self.close()
                raise item.exc
            if isinstance(item, BaseException):
                self.close()
                raise item
            indices, data = item
            self.delivered.extend(indices)
            return data

    @staticmethod
    def _collate_loop(ref: Any, ready: queue.Queue[Any], stopping: threading.Event) -> None:
        """The collator thread: keeps at most prefetch_factor batches ready;
        errors are handed over in order. It holds the iterator only weakly
        while it waits, so a `break` out of the loop still frees it."""
        while not stopping.is_set():
            it = ref()
            if it is None:
                return
            item = it._produce()
            del it
            while not stopping.is_set():
                try:
                    ready.put(item, timeout=POLL_S)
                    break
                except queue.Full:
                    if ref() is None:
                        return
            if item is None or isinstance(item, BaseException) or (isinstance(item, Failed) and not item.goes_on):
                return

    def _produce(self) -> Any:
        """One batch (indices, collated data); None at the end of the epoch;
        the exception to raise in the main thread on failure."""
        go = self.go
        try:
            if go is None:
                return None
            try:
                h = go.next_batch(stopping=self.stopping)
            except Error as e:
                exc = user_exception(e, self.pool.exit_report if self.pool is not None else None)
                return Failed(exc.with_traceback(None), goes_on(e))
            if not h:
                return None
            try:
                info = _native.batch_info(h)
                n = int(info.num_samples)
                indices = [int(info.indices[k]) for k in range(n)]
                f = _native.batch_field(h, 0)
                raw = (ctypes.c_int64 * (int(f.bytes) // 8)).from_address(int(f.data))
                tickets = np.ctypeslib.as_array(raw).reshape(n, 4).copy()
            finally:
                go.release_batch()
            self.received += n
            pool = self.pool
            assert pool is not None
            samples = [pool.views[int(w)].load(int(off), int(ln), int(seq)) for w, off, ln, seq in tickets]
            if self.auto:
                return indices, self.collate(samples)
            return indices, self.collate(samples[0])
        except BaseException as e:  # noqa: BLE001 - handed to the main thread
            # Without its traceback (whose frames hold this iterator), with
            # the traceback's text kept as a note.
            text = "".join(traceback.format_exception(type(e), e, e.__traceback__))
            if hasattr(e, "add_note"):  # Python >= 3.11
                e.add_note("in the minatoloader collate thread:\n" + text)
            return e.with_traceback(None)

    def close(self) -> None:
        """Stops this epoch: its own Go loader and workers (persistent ones
        stay with the DataLoader)."""
        self.done = True
        self.stopping.set()
        t = self.collator
        if t is not None and t is not threading.current_thread():
            t.join()
            self.collator = None
        if t is None or t is not threading.current_thread():
            self.release_go()
        if self.own_pool and self.pool is not None:
            self.pool.stop()
        self.pool = None
