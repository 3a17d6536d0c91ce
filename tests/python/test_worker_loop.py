"""The worker process (minatoloader._worker.worker_main) in real processes,
driven through the protocol of docs/worker-protocol.md."""

from __future__ import annotations

import gc
import multiprocessing as mp
import os
import random
import signal
import struct
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
import torch

from minatoloader._shm import ArenaView, create_arena
from minatoloader._worker import (
    KIND_HELLO,
    KIND_REPLY,
    STATUS_ERROR,
    STATUS_EXHAUSTED,
    STATUS_OK,
    get_worker_info,
    pack_get,
    pack_next,
    pack_reset,
    parse_message,
    worker_main,
)

ARENA = 8 << 20
START_TIMEOUT = 120.0  # a spawned worker imports torch
REPLY_TIMEOUT = 30.0
METHODS = ["fork", "spawn"]


# --- datasets and init functions (module level: spawn pickles them) ----------


class MapDS:
    def __len__(self) -> int:
        return 100

    def __getitem__(self, i: int) -> Any:
        return {"i": i, "t": torch.arange(i, dtype=torch.float32), "a": np.full((2, 3), i, np.int16), "s": f"s{i}"}


class SeededDS:
    def __getitem__(self, i: int) -> Any:
        return (torch.rand(2), random.random(), float(np.random.rand()))


class InfoDS:
    def __getitem__(self, i: int) -> Any:
        ours = get_worker_info()
        theirs = torch.utils.data.get_worker_info()
        return (
            (ours.id, ours.num_workers, ours.seed, ours.dataset is self),
            (theirs.id, theirs.num_workers, theirs.seed, theirs.dataset is self),
            INIT_CALLS,
        )


def _user_function_that_fails(i: int) -> None:
    raise ValueError(f"bad sample {i}")


class FailingDS:
    def __getitem__(self, i: int) -> Any:
        if i == 3:
            _user_function_that_fails(i)
        return i


class HugeDS:
    def __getitem__(self, i: int) -> Any:
        return np.zeros(2 * ARENA, np.uint8)


class RangeIterable:
    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self) -> Iterator[Any]:
        return iter([torch.tensor(i) for i in range(self.n)])


INIT_CALLS: list[int] = []


def record_init(worker_id: int) -> None:
    INIT_CALLS.append(worker_id)


def failing_init(worker_id: int) -> None:
    raise RuntimeError(f"init of worker {worker_id} failed")


# --- the harness --------------------------------------------------------------


class Worker:
    """One worker process, the main end of its pipe and a view of its arena."""

    def __init__(self, method: str, dataset: Any, *, worker_id: int = 0, num_workers: int = 1,
                 base_seed: int = 1000, init_fn: Callable[[int], Any] | None = None, mode: str = "map",
                 seed_per_sample: bool = False, dup_main_end: bool = False) -> None:
        ctx = mp.get_context(method)
        self.conn, child = ctx.Pipe(duplex=True)
        # A dup made before the start: a forked worker inherits it too.
        self.dup = os.dup(self.conn.fileno()) if dup_main_end else -1
        self.fd = create_arena(ARENA)
        self.view = ArenaView(self.fd, ARENA)
        self.proc = ctx.Process(
            target=worker_main,
            args=(child, dataset, worker_id, num_workers, base_seed, init_fn, os.getpid(), self.fd, ARENA,
                  mode, seed_per_sample),
            daemon=True,
        )
        self.proc.start()
        child.close()
        self.seq = 0
        self.hello = self.recv(START_TIMEOUT)

    def recv(self, timeout: float = REPLY_TIMEOUT) -> tuple[int, int, int, int, int, Any]:
        assert self.conn.poll(timeout), "no message from the worker"
        return parse_message(self.conn.recv_bytes())

    def request(self, msg: bytes) -> tuple[int, int, int, int, int, Any]:
        self.conn.send_bytes(msg)
        reply = self.recv()
        assert reply[0] == KIND_REPLY
        return reply

    def get(self, index: int, seed: int = 0) -> Any:
        self.seq += 1
        kind, status, seq, off, length, text = self.request(pack_get(self.seq, 0, index, seed))
        assert seq == self.seq
        assert status == STATUS_OK, text
        return self.view.load(off, length)

    def next(self, count: int, drop_last: bool = False) -> Any:
        self.seq += 1
        kind, status, seq, off, length, text = self.request(pack_next(self.seq, count, drop_last))
        assert seq == self.seq and status != STATUS_ERROR, text
        if status == STATUS_EXHAUSTED:
            return None
        return [int(t) for t in self.view.load(off, length)]

    def stop(self) -> None:
        self.conn.close()  # idempotent; see the fixture for the order
        self.proc.join(10)
        if self.proc.is_alive():
            self.proc.terminate()
            self.proc.join(10)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        gc.collect()
        self.view.close()
        os.close(self.fd)


@pytest.fixture
def workers() -> Iterator[Callable[..., Worker]]:
    started: list[Worker] = []

    def start(*args: Any, **kwargs: Any) -> Worker:
        w = Worker(*args, **kwargs)
        started.append(w)
        return w

    try:
        yield start
    finally:
        # Close every main end first: a forked worker holds inherited copies
        # of the main ends of the workers started before it, so the earlier
        # ones see EOF only once the later ones have exited.
        for w in started:
            w.conn.close()
        for w in started:
            w.stop()


def ok_hello(w: Worker) -> None:
    kind, status, pid, _, _, text = w.hello
    assert (kind, status) == (KIND_HELLO, STATUS_OK), text
    assert pid == w.proc.pid == text


# --- tests --------------------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
def test_get_returns_the_sample(workers: Callable[..., Worker], method: str) -> None:
    w = workers(method, MapDS())
    ok_hello(w)
    ds = MapDS()
    for i in (0, 5, 17, 5):
        got, want = w.get(i), ds[i]
        assert got["i"] == i and got["s"] == want["s"]
        assert torch.equal(got["t"], want["t"]) and np.array_equal(got["a"], want["a"])
        assert got["a"].dtype == np.int16


@pytest.mark.parametrize("method", METHODS)
def test_released_blocks_are_reused(workers: Callable[..., Worker], method: str) -> None:
    w = workers(method, MapDS())
    w.seq += 1
    _, _, _, off1, length, _ = w.request(pack_get(w.seq, 0, 50, 0))
    sample = w.view.load(off1, length)
    w.seq += 1
    _, _, _, off2, _, _ = w.request(pack_get(w.seq, 0, 50, 0))
    assert off2 > off1  # the first block is still viewed
    w.view.release(off2)
    del sample
    gc.collect()
    w.seq += 1
    _, _, _, off3, _, _ = w.request(pack_get(w.seq, 0, 50, 0))
    assert off3 == off1
    w.view.release(off3)


@pytest.mark.parametrize("method", METHODS)
def test_seed_per_sample(workers: Callable[..., Worker], method: str) -> None:
    a = workers(method, SeededDS(), worker_id=0, num_workers=2, seed_per_sample=True)
    b = workers(method, SeededDS(), worker_id=1, num_workers=2, seed_per_sample=True)
    big = (1 << 64) - 5
    for seed in (7, big):
        x1, x2, y = a.get(0, seed), a.get(1, seed), b.get(2, seed)
        for u, v in ((x1, x2), (x1, y)):
            assert torch.equal(u[0], v[0]) and u[1:] == v[1:]
    other = a.get(0, 8)
    assert not torch.equal(other[0], a.get(0, 7)[0]) and other[1] != a.get(0, 7)[1]


@pytest.mark.parametrize("method", METHODS)
def test_worker_seeds_without_per_sample_seeding(workers: Callable[..., Worker], method: str) -> None:
    a = workers(method, SeededDS(), worker_id=0, num_workers=2, base_seed=5)
    b = workers(method, SeededDS(), worker_id=1, num_workers=2, base_seed=5)
    a2 = workers(method, SeededDS(), worker_id=0, num_workers=2, base_seed=5)
    ra, rb, ra2 = a.get(0), b.get(0), a2.get(0)
    assert torch.equal(ra[0], ra2[0]) and ra[1:] == ra2[1:]  # a function of (base seed, id)
    assert not torch.equal(ra[0], rb[0]) and ra[1] != rb[1] and ra[2] != rb[2]
    state = random.getstate()
    with torch.random.fork_rng(devices=[]):
        random.seed(5)
        torch.manual_seed(5)
        assert ra[1] == random.random() and torch.equal(ra[0], torch.rand(2))
    random.setstate(state)


@pytest.mark.parametrize("method", METHODS)
def test_worker_info(workers: Callable[..., Worker], method: str) -> None:
    w = workers(method, InfoDS(), worker_id=2, num_workers=3, base_seed=1234, init_fn=record_init)
    ok_hello(w)
    ours, theirs, init_calls = w.get(0)
    assert ours == (2, 3, 1236, True)
    assert theirs == (2, 3, 1236, True)
    assert init_calls == [2]
    assert get_worker_info() is None  # the main process


@pytest.mark.parametrize("method", METHODS)
def test_exception_in_getitem(workers: Callable[..., Worker], method: str) -> None:
    w = workers(method, FailingDS())
    w.seq += 1
    kind, status, seq, off, length, text = w.request(pack_get(w.seq, 0, 3, 0))
    assert (kind, status, seq, off, length) == (KIND_REPLY, STATUS_ERROR, w.seq, 0, 0)
    first, _, tb = text.partition("\n")
    assert first == "builtins:ValueError"
    assert "_user_function_that_fails" in tb and "bad sample 3" in tb and "Traceback" in tb
    assert w.get(4) == 4  # the worker keeps serving


@pytest.mark.parametrize("method", METHODS)
def test_sample_larger_than_the_arena(workers: Callable[..., Worker], method: str) -> None:
    w = workers(method, HugeDS())
    w.seq += 1
    _, status, _, _, _, text = w.request(pack_get(w.seq, 0, 9, 0))
    assert status == STATUS_ERROR
    assert text.startswith("minatoloader._shm:ArenaFullError\n")
    assert "sample 9" in text and str(ARENA) in text


@pytest.mark.parametrize("method", METHODS)
def test_unexpected_message_is_an_error(workers: Callable[..., Worker], method: str) -> None:
    w = workers(method, MapDS())
    _, status, seq, _, _, text = w.request(struct.pack("<IIQ", 99, 0, 42))
    assert (status, seq) == (STATUS_ERROR, 42) and "99" in text
    _, status, _, _, _, _ = w.request(pack_next(43, 1, False))  # NEXT to a map worker
    assert status == STATUS_ERROR
    assert w.get(1)["i"] == 1


@pytest.mark.parametrize("method", METHODS)
def test_failing_worker_init_fn(workers: Callable[..., Worker], method: str) -> None:
    w = workers(method, MapDS(), worker_id=4, num_workers=5, init_fn=failing_init)
    kind, status, pid, _, _, text = w.hello
    assert (kind, status, pid) == (KIND_HELLO, STATUS_ERROR, w.proc.pid)
    assert text.startswith("builtins:RuntimeError\n") and "init of worker 4 failed" in text
    w.proc.join(30)
    assert w.proc.exitcode == 0


@pytest.mark.parametrize("method", METHODS)
def test_iterable(workers: Callable[..., Worker], method: str) -> None:
    w = workers(method, RangeIterable(7), mode="iterable")
    ok_hello(w)
    assert [w.next(3) for _ in range(5)] == [[0, 1, 2], [3, 4, 5], [6], None, None]
    w.seq += 1
    assert w.request(pack_reset(w.seq, 1))[1:5] == (STATUS_OK, w.seq, 0, 0)
    assert [w.next(3, drop_last=True) for _ in range(4)] == [[0, 1, 2], [3, 4, 5], None, None]
    w.seq += 1
    w.request(pack_reset(w.seq, 2))
    assert w.next(1) == [0]
    assert w.next(10) == [1, 2, 3, 4, 5, 6]
    assert w.next(10) is None


@pytest.mark.parametrize("method", METHODS)
def test_eof_ends_the_worker(workers: Callable[..., Worker], method: str) -> None:
    w = workers(method, MapDS(), dup_main_end=True)
    ok_hello(w)
    os.close(w.dup)  # like the Go side closing its dup of the main end
    w.conn.close()
    w.proc.join(30)
    assert w.proc.exitcode == 0


@pytest.mark.parametrize("method", METHODS)
def test_sigint_is_ignored(workers: Callable[..., Worker], method: str) -> None:
    w = workers(method, MapDS())
    ok_hello(w)
    os.kill(w.proc.pid, signal.SIGINT)
    time.sleep(0.2)
    assert w.proc.is_alive()
    assert w.get(2)["i"] == 2
