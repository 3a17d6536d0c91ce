"""Python datasets: worker processes scheduled by the Go core.

A map-style dataset runs in worker processes. The Go core (``core/remote``
under ``core/sched``) sends them one sample index at a time: it keeps the
fast lane at ``num_workers`` processes, moves a sample that passes the
learned threshold to the slow lane and hands the next sample to a spare
process, and composes batches (exactly the sampler's batches with
``in_order=True``; any ready samples, with the sampler's batch sizes,
with ``in_order=False``). Samples come back through each worker's shared
memory arena (docs/worker-protocol.md); this module unpickles them,
collates in the main process and yields.

The sampler, batch sampler, generator, worker seeds and collate function
behave as torch's DataLoader's (``torch/utils/data/dataloader.py``). An
IterableDataset runs in the same worker processes, each iterating its own
replica, and its batches are taken round-robin as torch does (there are no
indices for the core to schedule). ``num_workers=0`` loads in the main
process, as torch does.
"""

from __future__ import annotations

import atexit
import ctypes
import importlib
import json
import logging
import multiprocessing
import operator
import os
import queue
import re
import socket
import threading
import time
import weakref
from collections import deque
from typing import Any, Callable

import numpy as np

from . import _limits, _native, _shm, _worker
from .errors import ClosedError, SampleError, StateError

_log = logging.getLogger("minatoloader")

# How often a blocked __next__ wakes to honour Ctrl-C, `timeout` and worker
# deaths (Go reports a dead worker at once; this bounds everything else).
_POLL_S = 0.1

_live_pools: "weakref.WeakSet[_WorkerPool]" = weakref.WeakSet()


@atexit.register
def _stop_all_pools() -> None:
    for pool in list(_live_pools):
        pool.stop()


class _WorkerPool:
    """Worker processes, their channels and arenas."""

    def __init__(
        self,
        *,
        dataset: Any,
        count: int,
        context: Any,
        base_seed: int,
        worker_init_fn: Callable[[int], None] | None,
        mode: str,
        seed_per_sample: bool,
        arena_bytes: int,
        num_workers: int,
    ) -> None:
        self.procs: list[Any] = []
        self.conns: list[Any] = []  # main ends (iterable mode keeps them)
        self.arena_fds: list[int] = []
        self.views: list[_shm.ArenaView] = []
        self.arena_bytes = arena_bytes
        self.stopped = False
        ctx = context if context is not None else multiprocessing.get_context()
        parent = os.getpid()
        try:
            for wid in range(count):
                fd = _shm.create_arena(arena_bytes)
                self.arena_fds.append(fd)
                self.views.append(_shm.ArenaView(fd, arena_bytes))
                main_end, child_end = ctx.Pipe(duplex=True)
                # Spare processes (wid >= num_workers) get ids past the
                # fast lane's, so worker_info.id stays in [0, count).
                p = ctx.Process(
                    target=_worker.worker_main,
                    args=(
                        child_end, dataset, wid, count, base_seed, worker_init_fn,
                        parent, fd, arena_bytes, mode, seed_per_sample,
                    ),
                    daemon=True,
                    name=f"minatoloader-worker-{wid}",
                )
                p.start()
                child_end.close()
                self.procs.append(p)
                self.conns.append(main_end)
        except BaseException:
            self.stop()
            raise
        _live_pools.add(self)

    def hand_to_go(self) -> list[dict[str, int]]:
        """The procs of the Go config; Go owns dups of the channels, and ours
        are closed (so a worker sees EOF when Go closes)."""
        out = []
        for wid, (p, conn) in enumerate(zip(self.procs, self.conns)):
            fd = os.dup(conn.fileno())
            conn.close()  # Go shuts the socket down on close (see _shutdown)
            out.append({"fd": fd, "pid": p.pid, "arena_fd": self.arena_fds[wid], "arena_size": self.arena_bytes})
        self.conns = []
        return out

    def exit_report(self, pid: int | None = None) -> str:
        """How the dead workers ended (waits up to 1 s for `pid` to be reaped)."""
        dead = []
        for p in self.procs:
            if p.pid == pid:
                p.join(timeout=1.0)
            code = p.exitcode
            if code is not None:
                how = f"signal {-code}" if code < 0 else f"exit code {code}"
                dead.append(f"pid {p.pid}: {how}")
        return ", ".join(dead)

    def stop(self) -> None:
        if self.stopped:
            return
        self.stopped = True
        for c in self.conns:
            _shutdown(c)
        self.conns = []
        # A worker busy in __getitem__ sees EOF only when the sample ends:
        # give them a second, then SIGTERM, then SIGKILL.
        deadline = time.monotonic() + 1.0
        for p in self.procs:
            p.join(timeout=max(0.0, deadline - time.monotonic()))
        for p in self.procs:
            if p.is_alive():
                p.terminate()
                p.join(timeout=2.0)
            if p.is_alive():
                p.kill()
                p.join()
            try:
                p.close()
            except ValueError:
                pass
        for v in self.views:
            v.close()
        for fd in self.arena_fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self.arena_fds = []
        _live_pools.discard(self)


def _shutdown(conn: Any) -> None:
    """Closes a worker channel so that the worker sees EOF even when a
    worker forked later holds a copy of this end (close alone would not)."""
    try:
        s = socket.socket(fileno=os.dup(conn.fileno()))
        try:
            s.shutdown(socket.SHUT_RDWR)
        finally:
            s.close()
    except OSError:
        pass
    try:
        conn.close()
    except OSError:
        pass


def _background_collate(collate_fn: Any, pool: Any) -> Any:
    """The collate function for the collator thread. torch's default_collate
    stacks tensors with torch.stack, whose intra-op threads would compete
    with the training thread's; the same result is built with one numpy
    copy per sample instead (C-contiguous CPU tensors of one shape and a
    numpy dtype; anything else goes to torch's own function). Other
    collate functions run as they are."""
    from torch.utils.data import _utils

    if collate_fn is not _utils.collate.default_collate:
        return collate_fn
    import torch
    from torch.utils.data._utils.collate import collate, collate_tensor_fn, default_collate_fn_map

    def stack(batch: Any, *, collate_fn_map: Any = None) -> Any:
        elem = batch[0]
        shape, dtype = elem.shape, elem.dtype
        if dtype in (torch.bfloat16,) or dtype.is_complex or not all(
            type(t) is torch.Tensor and t.layout == torch.strided and t.device.type == "cpu" and t.shape == shape
            and t.dtype == dtype and not t.requires_grad for t in batch
        ):
            return collate_tensor_fn(batch, collate_fn_map=collate_fn_map)
        try:
            full = (len(batch), *shape)
            out = pool.empty(full, dtype) if pool is not None else None
            if out is None:
                out = torch.empty(full, dtype=dtype)
            np.stack([t.numpy() for t in batch], out=out.numpy())
        except (TypeError, RuntimeError, ValueError):
            return collate_tensor_fn(batch, collate_fn_map=collate_fn_map)
        return out

    fn_map = dict(default_collate_fn_map)
    fn_map[torch.Tensor] = stack

    def default_collate_numpy(batch: Any) -> Any:
        return collate(batch, collate_fn_map=fn_map)

    return default_collate_numpy


class _one_thread:
    """Runs the main process's collation with one torch intra-op thread.
    The worker processes keep every core busy; torch's default pool of
    intra-op threads then stalls in each parallel region (torch.stack of a
    19 MB batch: 200 ms with 2 threads against 9 ms with 1 on a loaded
    2-core machine). torch's own DataLoader collates in single-threaded
    workers. The previous count is restored after each batch (0.2 µs)."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self.n = 1

    def __enter__(self) -> None:
        self.n = self.torch.get_num_threads()
        if self.n != 1:
            self.torch.set_num_threads(1)

    def __exit__(self, *exc: Any) -> None:
        if self.n != 1:
            self.torch.set_num_threads(self.n)


# ----------------------------------------------------------------- errors

_PYEXC = re.compile(
    r'sample (-?\d+): step "load": (?:(worker_init_fn or setup) failed in DataLoader worker process \d+ '
    r'\(pid \d+\): )?python exception ([\w.]+):([\w.<>]+) in worker (\d+) \(pid (\d+)\)\n(.*)',
    re.S,
)
_DIED = re.compile(r"DataLoader worker (\d+) \(pid (\d+)\) exited unexpectedly")


def _resolve(module: str, qualname: str) -> type[BaseException] | None:
    try:
        obj: Any = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except Exception:
        return None
    return obj if isinstance(obj, type) and issubclass(obj, Exception) else None


def _reraise(err: BaseException, pool: _WorkerPool | None) -> BaseException:
    """The exception to raise in the main process for a core error: the
    user's exception type with the worker's traceback (as torch's
    ExceptionWrapper), a RuntimeError for a dead worker, else err."""
    text = str(err)
    m = _PYEXC.search(text)
    if m:
        index, init, module, qualname, wid, pid, tb = m.groups()
        prefix = text[: m.start()]
        budget = " (" + prefix.strip().rstrip(":") + ")" if "max_skipped" in prefix else ""
        where = "in worker_init_fn" if init else f"while loading sample {index}{budget}"
        msg = (
            f"Caught {qualname.rsplit('.', 1)[-1]} in DataLoader worker process {wid} (pid {pid}) "
            f"{where}.\nOriginal {tb.rstrip()}"
        )
        cls = _resolve(module, qualname)
        if cls is not None:
            try:
                exc = cls(msg)
                exc.sample_index = int(index)  # type: ignore[attr-defined]
                return exc
            except Exception:
                pass
        return RuntimeError(msg)
    m = _DIED.search(text)
    if m:
        report = pool.exit_report(int(m.group(2))) if pool is not None else ""
        return RuntimeError(
            f"DataLoader worker (pid(s) {m.group(2)}) exited unexpectedly" + (f" ({report})" if report else "")
        )
    return err


# ------------------------------------------------------------------ loader


def _draw_base_seed(generator: Any) -> int:
    import torch

    return int(torch.empty((), dtype=torch.int64).random_(generator=generator).item())


def _rng_state(generator: Any) -> Any:
    import torch

    return generator.get_state() if generator is not None else torch.get_rng_state()


def _set_rng_state(generator: Any, state: Any) -> None:
    import torch

    if generator is not None:
        generator.set_state(state)
    else:
        torch.set_rng_state(state)


class PythonLoading:
    """The state of a DataLoader over a Python dataset across its epochs
    (persistent workers, the resume point). ``dl`` is the DataLoader."""

    def __init__(self, dl: Any) -> None:
        # A weak reference: `del loader` must free the workers at once, not
        # wait for the cycle collector (an iterator holds the loader itself).
        self._dl = weakref.ref(dl)
        self.epochs = 0  # iterators created
        self.pool: _WorkerPool | None = None  # persistent workers
        self.go: int | None = None  # persistent Go loader
        self.go_key: Any = None  # the options the persistent Go loader was made with
        self.base_seed: int | None = None  # persistent workers' seed
        self.resume: dict[str, Any] | None = None
        self._current: Any = None  # weakref to the running _EpochIter
        self._batch_pool: Any = None
        self.last_stats: dict[str, Any] = {}
        self.closed = False

    def batch_pool(self) -> "_shm.BatchPool":
        """The reused output memory of collated batches (address space; pages
        are used as batches need them), shared by this loader's epochs."""
        if self._batch_pool is None:
            self._batch_pool = _shm.BatchPool(int(self.opts.get("batch_pool_bytes") or 1 << 30))
        return self._batch_pool

    @property
    def current(self) -> "_EpochIter | None":
        return self._current() if self._current is not None else None

    @current.setter
    def current(self, it: "_EpochIter | None") -> None:
        self._current = weakref.ref(it) if it is not None else None

    @property
    def dl(self) -> Any:
        dl = self._dl()
        if dl is None:
            raise ClosedError("the DataLoader is gone")
        return dl

    # -- options (DataLoader.configure)
    @property
    def opts(self) -> dict[str, Any]:
        return self.dl._ml_options

    def iterator(self, dl: Any) -> "_EpochIter":
        if self.closed:
            raise ClosedError("this DataLoader is closed")
        if self.current is not None:
            self.current.close()
        it = _EpochIter(self, dl)
        self.current = it
        return it

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.current is not None:
            self.current.close()
            self.current = None
        self._close_persistent()

    def _close_persistent(self) -> None:
        if self.go is not None:
            try:
                _native.loader_close(self.go)
            except Exception:
                pass
            self.go = None
        if self.pool is not None:
            self.pool.stop()
            self.pool = None


class _EpochIter:
    """One epoch of a DataLoader over a Python dataset."""

    def __init__(self, st: PythonLoading, dl: Any) -> None:
        self.st = st
        self.dl = dl
        self.iterable = dl._dataset_kind == "iterable"
        self.auto = dl.batch_sampler is not None
        self.collate = dl.collate_fn
        self.timeout = float(dl.timeout)
        self.num_yielded = 0
        self.delivered: list[int] = []  # sample indices (map-style, for state_dict)
        self.done = False
        self.go: int | None = None
        self.pool: _WorkerPool | None = None
        self.own_pool = False
        self.own_go = False
        self._out = ctypes.c_uint64(0)  # a batch handle, written by C
        self.collator: threading.Thread | None = None
        self.stopping = threading.Event()
        self.ready: queue.Queue[Any] = queue.Queue(maxsize=max(1, int(dl.prefetch_factor or 2)))
        self.collate_bg = _background_collate(dl.collate_fn, st.batch_pool())
        import torch

        resume, st.resume = st.resume, None
        self.epoch = st.epochs if resume is None else int(resume["epoch"])
        st.epochs = self.epoch + 1
        # torch: iter(index sampler), then the base seed from the generator;
        # the sampler's own draws happen at its first next(). Snapshot the
        # RNG first so state_dict() can replay this epoch's order.
        if resume is not None:
            _set_rng_state(dl.generator, resume["rng"])
        self.rng = _rng_state(dl.generator)
        self.sampler_iter = None if self.iterable else iter(dl._index_sampler)
        persistent = dl.persistent_workers and dl.num_workers > 0
        if persistent and st.base_seed is not None:
            self.base_seed = st.base_seed
        else:
            self.base_seed = _draw_base_seed(dl.generator)
            if persistent:
                st.base_seed = self.base_seed
        self.skip_batches = 0
        self.skip_samples: set[int] = set()
        if resume is not None:
            if resume["in_order"]:
                self.skip_batches = int(resume["num_yielded"])
            else:
                self.skip_samples = set(int(i) for i in resume["delivered"])
            self.num_yielded = int(resume["num_yielded"])
            self.delivered = list(int(i) for i in resume["delivered"])
        self.pin = bool(dl.pin_memory) and torch.cuda.is_available()
        self.torch = torch
        if dl.num_workers == 0:
            self._start_inline()
        elif self.iterable:
            self._start_iterable(persistent)
        else:
            self._start_map(persistent)

    # ----------------------------------------------------------- start-up
    def _pool(self, mode: str, persistent: bool) -> _WorkerPool:
        st, dl = self.st, self.dl
        if persistent and st.pool is not None:
            return st.pool
        nw = dl.num_workers
        spares = 0 if mode == "iterable" else int(st.opts["spare_workers"] if st.opts["spare_workers"] is not None else max(1, nw // 2))
        pool = _WorkerPool(
            dataset=dl.dataset,
            count=nw + spares,
            context=dl.multiprocessing_context,
            base_seed=self.base_seed,
            worker_init_fn=dl.worker_init_fn,
            mode=mode,
            seed_per_sample=bool(st.opts["seed_per_sample"]),
            arena_bytes=int(st.opts["arena_bytes"]),
            num_workers=nw,
        )
        if persistent:
            st.pool = pool
        else:
            self.own_pool = True
        return pool

    def _start_inline(self) -> None:
        if self.iterable:
            self.data_iter = iter(self.dl.dataset)

    def _start_iterable(self, persistent: bool) -> None:
        reused = persistent and self.st.pool is not None
        self.pool = self._pool("iterable", persistent)
        nw = len(self.pool.procs)
        self.active = [True] * nw
        self.seq = 0
        self.pending: deque[tuple[int, int]] = deque()  # (worker, seq) in task order
        self.rr = 0
        count = self.dl.batch_size if self.auto else 1
        self.next_msg = lambda seq: _worker.pack_next(seq, count, bool(self.dl.drop_last))
        if reused:
            for wid, conn in enumerate(self.pool.conns):
                self._send(wid, _worker.pack_reset(self._seq(), self.epoch))
                self._recv(wid)  # the reset's reply
        # torch puts prefetch_factor * num_workers requests in flight; past
        # a few per worker they only fill the pipes.
        for _ in range(min(int(self.dl.prefetch_factor or 2), _limits.MAX_ITERABLE_PREFETCH) * nw):
            self._put()

    def _start_map(self, persistent: bool) -> None:
        st, dl = self.st, self.dl
        nw = dl.num_workers
        pf = int(dl.prefetch_factor or 2)
        # The largest batch the core must hold: the batch size, or for a
        # custom batch_sampler a generous bound from its first batch.
        self.lookahead: deque[list[int]] = deque()
        first = self._pull_batch()
        if first is not None:
            self.lookahead.append(first)
        if not self.auto:
            bmax = 1
        elif dl.batch_size is not None:
            # torch's BatchSampler never yields more than the sampler has:
            # a batch_size beyond it (even 2**40) is one batch of them all.
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
        want = max(pf * nw * bmax, bmax + nw)
        try:
            want = min(want, max(len(dl._index_sampler) * bmax, bmax + nw))
        except TypeError:
            pass
        self.max_inflight = min(want + nw, _limits.MAX_INFLIGHT)
        key = (bmax, bool(dl.in_order), st.opts["on_error"], st.opts["max_skipped"], st.opts["timeout_ms"],
               st.opts["spare_workers"], st.opts["seed_per_sample"], st.opts["arena_bytes"])
        if persistent and st.go is not None and st.go_key == key:
            self.go = st.go
            self.pool = st.pool
        else:
            if persistent:
                st._close_persistent()
            self.pool = self._pool("map", persistent)
            try:
                length = len(dl.dataset)
            except TypeError:
                length = 0
            spares = len(self.pool.procs) - nw
            cfg = {
                "batch_size": bmax,
                "feed": True,
                "in_order": bool(dl.in_order),
                "workers": nw,
                "max_workers": nw,
                "adaptive": False,
                "slow_workers": max(1, spares),
                "max_inflight": self.max_inflight,
                "prefetch_batches": min(max(1, pf), _limits.MAX_PREFETCH_BATCHES),
                "seed": self.base_seed,
                "on_error": st.opts["on_error"],
                "max_skipped": self._budget(),
                "dataset": {
                    "kind": "python",
                    "length": int(length),
                    "cpu_slots": nw,
                    "procs": self.pool.hand_to_go(),
                },
            }
            for opt in ("timeout_ms", "warmup_samples", "quantile"):
                if st.opts.get(opt) is not None:
                    cfg[opt] = st.opts[opt]
            try:
                self.go = _native.loader_create(json.dumps(cfg))
            except BaseException:
                self.pool.stop()
                raise
            if persistent:
                st.go, st.go_key = self.go, key
            else:
                self.own_go = True
        _native.loader_start_epoch(self.go, self.epoch)
        self.fed = 0
        self.received = 0
        self.exhausted = False
        self.max_batch = bmax
        self._top_up()

    def _budget(self) -> int:
        b = self.st.opts["max_skipped"]
        if b is None:
            return -1
        if isinstance(b, float):
            try:
                n = len(self.dl._index_sampler) * (self.dl.batch_size or 1)
            except TypeError:
                raise ValueError("max_skipped as a fraction needs a sampler with len()") from None
            return int(b * n)
        return int(b)

    # ------------------------------------------------------------ feeding
    def _pull_batch(self) -> list[int] | None:
        """The next batch of the index sampler (a list; [i] without
        auto-collation), skipping what a resume already delivered."""
        assert self.sampler_iter is not None
        while True:
            try:
                b = next(self.sampler_iter)
            except StopIteration:
                return None
            b = list(b) if self.auto else [b]
            if self.skip_batches > 0:
                self.skip_batches -= 1
                continue
            try:
                b = [operator.index(i) for i in b]
            except TypeError:
                bad = next(i for i in b if not hasattr(i, "__index__"))
                raise TypeError(
                    f"minatoloader.DataLoader: the sampler yielded the index {bad!r} ({type(bad).__name__}); "
                    "worker processes take integer indices (map a custom key to an int in the dataset)"
                ) from None
            if self.skip_samples:
                b = [i for i in b if i not in self.skip_samples]
                if not b:
                    continue
            return b

    def _top_up(self) -> None:
        """Feeds the core until max_inflight samples (plus a batch) are fed
        beyond those received, or the sampler ends."""
        if self.exhausted:
            return
        settled = self.received
        if self.st.opts["on_error"] == "skip":
            # A skipped sample frees its place in flight without reaching a
            # batch: count it, or an epoch with more skips than max_inflight
            # waits for a feed that never comes.
            settled += _native.loader_progress(self.go)[1]
        want = settled + self.max_inflight + self.max_batch
        idx: list[int] = []
        sizes: list[int] = []
        while self.fed + len(idx) < want:
            b = self.lookahead.popleft() if self.lookahead else self._pull_batch()
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
            _native.loader_feed(
                self.go, np.asarray(idx, dtype=np.int64), np.asarray(sizes, dtype=np.int64), self.exhausted
            )
            self.fed += len(idx)

    # ----------------------------------------------------------- iterating
    def __iter__(self) -> "_EpochIter":
        return self

    def __len__(self) -> int:
        return len(self.dl)

    def __next__(self) -> Any:
        if self.done:
            raise StopIteration
        if self.dl.num_workers == 0:
            data = self._next_inline()
        elif self.iterable:
            data = self._next_iterable()
        else:
            data = self._next_map()
        self.num_yielded += 1
        if self.pin:
            from torch.utils.data._utils.pin_memory import pin_memory

            data = pin_memory(data)
        return data

    def _finish(self) -> None:
        self.done = True
        if self.go is not None:
            try:
                self.st.last_stats = json.loads(_native.loader_stats(self.go))
            except Exception:
                pass
        self.close()
        raise StopIteration

    def _next_inline(self) -> Any:
        dl = self.dl
        if self.iterable:
            if self.auto:
                data = []
                for _ in range(dl.batch_size):
                    try:
                        data.append(next(self.data_iter))
                    except StopIteration:
                        break
                if not data or (dl.drop_last and len(data) < dl.batch_size):
                    self._finish()
                return self.collate(data)
            try:
                return self.collate(next(self.data_iter))
            except StopIteration:
                self._finish()
        b = self._pull_batch()
        if b is None:
            self._finish()
        assert b is not None
        self.delivered.extend(b)
        if self.auto:
            return self.collate([dl.dataset[i] for i in b])
        return self.collate(dl.dataset[b[0]])

    def _next_map(self) -> Any:
        """The next batch, collated by the collator thread: this thread only
        feeds the core and hands over what is ready (torch's main process
        likewise receives batches its workers collated)."""
        if self.collator is None:
            self.collator = threading.Thread(
                target=_EpochIter._collate_loop,
                args=(weakref.ref(self), self.ready, self.stopping),
                name="minatoloader-collate",
                daemon=True,
            )
            self.collator.start()
        deadline = time.monotonic() + self.timeout if self.timeout > 0 else None
        while True:
            self._top_up()
            wait = _POLL_S if deadline is None else min(_POLL_S, deadline - time.monotonic())
            if wait <= 0:
                raise RuntimeError(f"DataLoader timed out after {self.timeout} seconds")
            try:
                item = self.ready.get(timeout=wait)
            except queue.Empty:
                continue
            if item is None:
                self._finish()
            if isinstance(item, BaseException):
                self.close()
                raise item
            indices, data = item
            self.delivered.extend(indices)
            return data

    @staticmethod
    def _collate_loop(ref: Any, ready: queue.Queue[Any], stopping: threading.Event) -> None:
        """The collator thread: takes built batches from the core, loads
        their samples from the arenas and collates, keeping at most
        prefetch_factor batches ready; errors are handed over in order. It
        holds the iterator only weakly while it waits, so a `break` out of
        the loop still frees the iterator (and stops its workers)."""
        while not stopping.is_set():
            it = ref()
            if it is None:
                return
            item = it._produce()
            del it
            while not stopping.is_set():
                try:
                    ready.put(item, timeout=_POLL_S)
                    break
                except queue.Full:
                    if ref() is None:
                        return
            if item is None or isinstance(item, BaseException):
                return

    def _produce(self) -> Any:
        """One batch (indices, collated data); None at the end of the epoch;
        the exception to raise in the main thread on failure."""
        try:
            while True:
                if self.stopping.is_set():
                    return None
                try:
                    rc = _native.loader_next_to(self.go, int(_POLL_S * 1000), self._out)
                except SampleError as e:
                    return _reraise(e, self.pool)
                if rc == _native.OK:
                    break
                if rc == _native.END_OF_EPOCH:
                    return None
            h = int(self._out.value)
            try:
                info = _native.batch_info(h)
                n = int(info.num_samples)
                indices = [int(info.indices[k]) for k in range(n)]
                f = _native.batch_field(h, 0)
                tickets = np.frombuffer((ctypes.c_char * int(f.bytes)).from_address(int(f.data)), dtype=np.int64)
                tickets = tickets.reshape(n, 4).copy()
            finally:
                self._release_handle()
            self.received += n
            pool = self.pool
            assert pool is not None
            samples = [pool.views[int(w)].load(int(off), int(ln), int(seq)) for w, off, ln, seq in tickets]
            if self.auto:
                return indices, self.collate_bg(samples)
            return indices, self.collate_bg(samples[0])
        except BaseException as e:  # noqa: BLE001 - handed to the main thread
            # Without its traceback (whose frames hold this iterator), with
            # the traceback's text kept as a note.
            import traceback

            text = "".join(traceback.format_exception(type(e), e, e.__traceback__))
            if hasattr(e, "add_note"):
                e.add_note("in the minatoloader collate thread:\n" + text)
            return e.with_traceback(None)

    # -- iterable, round-robin as torch
    def _seq(self) -> int:
        self.seq += 1
        return self.seq

    def _send(self, wid: int, msg: bytes) -> None:
        assert self.pool is not None
        self.pool.conns[wid].send_bytes(msg)

    def _recv(self, wid: int) -> tuple[int, int, int, int, int, Any]:
        assert self.pool is not None
        conn = self.pool.conns[wid]
        deadline = time.monotonic() + self.timeout if self.timeout > 0 else None
        while True:
            wait = _POLL_S if deadline is None else min(_POLL_S, deadline - time.monotonic())
            if wait <= 0:
                raise RuntimeError(f"DataLoader timed out after {self.timeout} seconds")
            try:
                if conn.poll(wait):
                    msg = _worker.parse_message(conn.recv_bytes())
                    if msg[0] == 2:  # HELLO
                        if msg[1] != 0:
                            raise self._worker_error(wid, msg[5], init=True)
                        continue
                    return msg
            except (EOFError, OSError):
                pass
            else:
                continue
            p = self.pool.procs[wid]
            raise RuntimeError(
                f"DataLoader worker (pid(s) {p.pid}) exited unexpectedly ({self.pool.exit_report() or 'channel closed'})"
            )

    def _worker_error(self, wid: int, text: Any, init: bool = False) -> BaseException:
        text = text if isinstance(text, str) else bytes(text).decode("utf-8", "replace")
        head, _, tb = text.partition("\n")
        module, _, qualname = head.partition(":")
        where = "worker_init_fn or setup" if init else "the iterator"
        msg = f"Caught {qualname.rsplit('.', 1)[-1]} in DataLoader worker process {wid} ({where}).\nOriginal {tb.rstrip()}"
        cls = _resolve(module, qualname)
        if cls is not None:
            try:
                return cls(msg)
            except Exception:
                pass
        return RuntimeError(msg)

    def _put(self) -> None:
        nw = len(self.active)
        for _ in range(nw):
            wid = self.rr
            self.rr = (self.rr + 1) % nw
            if self.active[wid]:
                seq = self._seq()
                self._send(wid, self.next_msg(seq))
                self.pending.append((wid, seq))
                return

    def _next_iterable(self) -> Any:
        assert self.pool is not None
        while self.pending:
            wid, seq = self.pending.popleft()
            kind, status, rseq, off, ln, text = self._recv(wid)
            if status == 2 or not self.active[wid]:
                self.active[wid] = False
                continue
            if status == 1:
                err = self._worker_error(wid, text)  # before close(), which drops the pool
                self.close()
                raise err
            self._put()
            with _one_thread(self.torch):
                items = self.pool.views[wid].load(off, ln, rseq)
                if self.auto:
                    return self.collate_bg(items)
                return self.collate_bg(items[0])
        self._finish()

    # ---------------------------------------------------------------- stop
    def _release_handle(self) -> None:
        h = int(self._out.value)
        if h:
            try:
                _native.batch_release(h)
            except Exception:
                pass  # already released (interrupted between release and reset)
            self._out.value = 0

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
            self._release_handle()
        if self.go is not None:
            if self.own_go:
                try:
                    _native.loader_close(self.go)
                except Exception:
                    pass
            self.go = None
        if self.own_pool and self.pool is not None:
            self.pool.stop()
        elif self.pool is not None and self.iterable and not self.pool.stopped:
            # Persistent iterable workers: collect the replies of requests
            # still out so the next epoch starts from a clean channel.
            while self.pending:
                wid, _ = self.pending.popleft()
                try:
                    msg = self._recv(wid)
                    if msg[1] == 0 and msg[4] > 0:
                        self.pool.views[wid].release(msg[3])
                except Exception:
                    self.st._close_persistent()
                    break
        self.pool = None
        if self.st.current is self:
            self.st.current = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def state(self) -> dict[str, Any]:
        if self.iterable:
            raise StateError("state_dict() needs a map-style dataset: an IterableDataset has no indices to resume at")
        return {
            "version": 1,
            "epoch": self.epoch,
            "num_yielded": self.num_yielded,
            "in_order": bool(self.dl.in_order) or self.dl.num_workers == 0,
            "delivered": list(self.delivered),
            "rng": self.rng,
        }

