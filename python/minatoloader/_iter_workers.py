"""An IterableDataset in worker processes.

Each worker iterates its own replica of the dataset (``get_worker_info``
tells it which); batches are taken round-robin as torch does. There are no
indices, so the Go core has nothing to schedule: the channels stay here.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

from . import _limits, _worker
from ._collate import background_collate, one_thread
from ._errmap import build_user_exception
from ._goloader import POLL_S, timeout_error
from ._iters import BaseIter
from ._pool import WorkerPool, acquire
from ._session import Session


class IterableWorkersIter(BaseIter):
    def __init__(self, session: Session, dl: Any) -> None:
        super().__init__(session, dl)
        import torch

        self.torch = torch
        self.collate = background_collate(dl.collate_fn, None)
        reused = self.persistent and session.pool is not None
        self.pool: WorkerPool | None
        self.pool, self.own_pool = acquire(session, dl, "iterable", self.base_seed, self.persistent)
        nw = len(self.pool.procs)
        self.active = [True] * nw
        self.seq = 0
        self.pending: deque[tuple[int, int]] = deque()  # (worker, seq) in task order
        self.rr = 0
        count = dl.batch_size if self.auto else 1
        drop_last = bool(dl.drop_last)
        self.next_msg = lambda seq: _worker.pack_next(seq, count, drop_last)
        if reused:
            for wid in range(nw):
                self._send(wid, _worker.pack_reset(self._seq(), self.epoch))
                self._recv(wid)  # the reset's reply
        # torch puts prefetch_factor * num_workers requests in flight; past
        # a few per worker they only fill the pipes.
        for _ in range(min(int(dl.prefetch_factor or 2), _limits.MAX_ITERABLE_PREFETCH) * nw):
            self._put()

    def _seq(self) -> int:
        self.seq += 1
        return self.seq

    def _send(self, wid: int, msg: bytes) -> None:
        assert self.pool is not None
        self.pool.conns[wid].send_bytes(msg)

    def _recv(self, wid: int) -> tuple[int, int, int, int, int, Any]:
        assert self.pool is not None
        conn = self.pool.conns[wid]
        deadline = time.monotonic() + self.timeout if self.timeout else None
        while True:
            wait = POLL_S if deadline is None else min(POLL_S, deadline - time.monotonic())
            if wait <= 0:
                raise timeout_error(self.timeout)
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
        """The worker reports "module:qualname\\ntraceback" (its protocol,
        docs/worker-protocol.md)."""
        text = text if isinstance(text, str) else bytes(text).decode("utf-8", "replace")
        head, _, tb = text.partition("\n")
        module, _, qualname = head.partition(":")
        assert self.pool is not None
        pid = self.pool.procs[wid].pid
        where = "in worker_init_fn" if init else "while iterating the dataset"
        err: BaseException = build_user_exception(module, qualname, tb, worker=wid, pid=pid, where=where)
        return err

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

    def next_data(self) -> Any:
        while self.pending:
            wid, _ = self.pending.popleft()
            kind, status, rseq, off, ln, text = self._recv(wid)
            if status == 2 or not self.active[wid]:
                self.active[wid] = False
                continue
            if status == 1:
                # torch: the exception is raised here and the iterator goes
                # on (the worker keeps its iterator: a generator that raised
                # is over, a class iterator may go on).
                self._put()
                raise self._worker_error(wid, text)
            self._put()
            assert self.pool is not None
            with one_thread(self.torch):
                items = self.pool.views[wid].load(off, ln, rseq)
                if self.auto:
                    return self.collate(items)
                return self.collate(items[0])
        self.finish()

    def close(self) -> None:
        self.done = True
        pool, self.pool = self.pool, None
        if pool is None:
            return
        if self.own_pool:
            pool.stop()
            return
        # Persistent workers: collect the replies of requests still out so
        # that the next epoch starts from a clean channel.
        self.pool = pool
        try:
            while self.pending and not pool.stopped:
                wid, _ = self.pending.popleft()
                msg = self._recv(wid)
                if msg[1] == 0 and msg[4] > 0:
                    pool.views[wid].release(msg[3])
        except Exception:
            self.session.close_persistent()
        finally:
            self.pool = None
