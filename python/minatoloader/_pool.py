"""Worker processes of a Python dataset: their channels and arenas.

A pool is created per epoch, or once with ``persistent_workers``; the Go
core takes over the channels of a map-style dataset (``hand_to_go``), an
IterableDataset's epoch keeps them (``_iter_workers``).
"""

from __future__ import annotations

import atexit
import multiprocessing
import os
import socket
import time
import weakref
from typing import Any, Callable

from . import _shm, _worker

_live_pools: "weakref.WeakSet[WorkerPool]" = weakref.WeakSet()


@atexit.register
def _stop_all_pools() -> None:
    for pool in list(_live_pools):
        pool.stop()


class WorkerPool:
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
            conn.close()  # Go shuts the socket down on close (see shutdown)
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
            shutdown(c)
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

    def dead_worker(self) -> str:
        """How a worker that died on its own (not stopped by us) ended, or
        "" when none did: torch reports such a worker even when it died
        after its last sample. A worker that exits 0 by itself has reported
        why on its channel first (a failed worker_init_fn); the core
        delivers that error, which is the one to raise."""
        if self.stopped:
            return ""
        for p in self.procs:
            code = p.exitcode
            if code:
                how = f"signal {-code}" if code < 0 else f"exit code {code}"
                return f"DataLoader worker (pid(s) {p.pid}) exited unexpectedly (pid {p.pid}: {how})"
        return ""


def shutdown(conn: Any) -> None:
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


def acquire(session: Any, dl: Any, mode: str, base_seed: int, persistent: bool) -> tuple[WorkerPool, bool]:
    """The epoch's worker processes: the persistent pool when there is one,
    else new ones; and whether the epoch owns (and stops) them."""
    if persistent and session.pool is not None:
        return session.pool, False
    opts = dl._ml_options
    nw = dl.num_workers
    spares = 0 if mode == "iterable" else int(
        opts["spare_workers"] if opts["spare_workers"] is not None else max(1, nw // 2)
    )
    pool = WorkerPool(
        dataset=dl.dataset,
        count=nw + spares,
        context=dl.multiprocessing_context,
        base_seed=base_seed,
        worker_init_fn=dl.worker_init_fn,
        mode=mode,
        seed_per_sample=bool(opts["seed_per_sample"]),
        arena_bytes=int(opts["arena_bytes"]),
        num_workers=nw,
    )
    if persistent:
        session.pool = pool
        return pool, False
    return pool, True
