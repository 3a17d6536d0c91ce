"""Samples the consumer keeps do not fill the worker arenas: past half an
arena of viewed blocks, the main process copies samples out of the arena
(ArenaView.copy_limit) and gives their blocks back at once."""

from __future__ import annotations

import gc
import mmap
import os
import struct
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import torch
from torch.utils.data import Dataset

import minatoloader
from minatoloader._shm import HEADER, ArenaView, WorkerArena, create_arena


class Arena:
    """Both ends of one arena in this process."""

    def __init__(self, size: int) -> None:
        self.fd = create_arena(size)
        self.worker = WorkerArena(os.getpid(), self.fd, size)
        self.view = ArenaView(self.fd, size)
        self.raw = mmap.mmap(self.fd, size)

    def state(self, offset: int) -> int:
        return struct.unpack_from("<I", self.raw, offset)[0]

    def close(self) -> None:
        self.view.close()
        self.worker.close()
        self.raw.close()
        os.close(self.fd)


@pytest.fixture
def arena() -> Iterator[Arena]:
    a = Arena(1 << 20)
    yield a
    a.close()


def test_past_the_limit_samples_are_copies_and_blocks_return(arena: Arena) -> None:
    kept: list[Any] = []
    blocks = []
    for i in range(40):  # 40 x 50 KB: twice the 1 MiB arena
        sample = {"i": i, "a": np.full(25_000, i, np.int16), "t": torch.full((25_000,), i, dtype=torch.int8)}
        off, length = arena.worker.put(sample, f"sample {i}", tag=i)
        kept.append(arena.view.load(off, length, tag=i))
        blocks.append(off)
    assert arena.view.copied > 0
    viewed = 40 - arena.view.copied
    assert arena.view.live_blocks() == viewed
    assert arena.view.viewed_bytes() <= arena.view.copy_limit
    # The copies' blocks are free again: the worker has only the viewed ones.
    assert len(arena.worker.live_blocks()) == viewed
    for i, s in enumerate(kept):
        assert s["i"] == i and s["a"].dtype == np.int16 and s["t"].dtype == torch.int8
        assert (s["a"] == i).all() and (s["t"] == i).all()
    # A copy does not change when the worker reuses its block.
    last = kept[-1]
    assert arena.state(blocks[-1]) == 0
    reused, _ = arena.worker.put(np.full(25_000, 99, np.int16))
    assert (last["a"] == 39).all() and (last["t"] == 39).all()
    arena.view.release(reused)
    del kept, s, last
    gc.collect()
    assert arena.view.live_blocks() == 0 and arena.view.viewed_bytes() == 0
    assert arena.worker.live_blocks() == []


def test_copies_keep_dtypes_shapes_and_sharing(arena: Arena) -> None:
    big = np.zeros(600_000, np.uint8)  # more than half the arena: later samples are copies
    first = arena.view.load(*arena.worker.put(big))
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    t = torch.arange(6, dtype=torch.bfloat16).reshape(2, 3)
    z = torch.zeros((), dtype=torch.float32)
    out = arena.view.load(*arena.worker.put([a, a, t, t[1:], z, np.arange(0)]))
    assert arena.view.copied == 1 and arena.view.live_blocks() == 1
    assert out[0] is out[1] and np.array_equal(out[0], a) and out[0].shape == (3, 4)
    assert out[2].dtype == torch.bfloat16 and torch.equal(out[2], t) and torch.equal(out[3], t[1:])
    assert out[4].shape == () and out[5].shape == (0,)
    out[0][0, 0] = 42.0  # copies are writable, like the views
    del first
    gc.collect()
    assert arena.view.live_blocks() == 0


def test_a_training_loop_never_copies(arena: Arena) -> None:
    for i in range(200):  # 200 x 100 KB through a 1 MiB arena, one at a time
        s = arena.view.load(*arena.worker.put(np.full(100_000, i % 256, np.uint8)))
        assert int(s[0]) == i % 256
        del s
    assert arena.view.copied == 0


def test_released_views_are_counted_once(arena: Arena) -> None:
    off, length = arena.worker.put(np.zeros(1000, np.uint8))
    s = arena.view.load(off, length)
    assert arena.view.viewed_bytes() == (HEADER + length + 63) // 64 * 64
    arena.view.release(off)
    assert arena.view.viewed_bytes() == 0
    del s
    gc.collect()  # the detached finalizer does not count it again
    assert arena.view.viewed_bytes() == 0


class Big(Dataset):  # type: ignore[type-arg]
    """Sample i: 1 MiB filled with i (numpy or torch)."""

    def __init__(self, n: int, kind: str) -> None:
        self.n, self.kind = n, kind

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> Any:
        if self.kind == "torch":
            return torch.full((1 << 18,), float(i), dtype=torch.float32)
        return {"i": i, "x": np.full(1 << 20, i % 256, np.uint8)}


@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_consumer_that_keeps_every_sample(kind: str) -> None:
    """400 samples of 1 MiB kept through arenas of 32 MiB (each worker
    would need over 130 MiB to hold its share): torch delivers them all."""
    dl = minatoloader.DataLoader(Big(400, kind), batch_size=None, num_workers=2)
    dl.configure(arena_bytes=32 << 20)
    kept = [s for s in dl]
    assert len(kept) == 400
    for i, s in enumerate(kept):
        if kind == "torch":
            assert s.shape == (1 << 18,) and float(s.min()) == float(s.max()) == float(i)
        else:
            assert s["i"] == i and s["x"].shape == (1 << 20,)
            assert int(s["x"].min()) == int(s["x"].max()) == i % 256
    del kept
    dl.close()


def test_kept_batches_with_a_list_collate() -> None:
    """A collate function that keeps the samples (views) as they are: 400
    MiB through two arenas of 128 MiB. Up to 52 samples are in flight or
    queued (prefetch_factor * num_workers * batch_size + num_workers, and a
    batch): the half of an arena that views cannot take holds them."""
    dl = minatoloader.DataLoader(Big(400, "numpy"), batch_size=10, num_workers=2, collate_fn=lambda b: b)
    dl.configure(arena_bytes=128 << 20)
    kept = list(dl)
    got = [s["i"] for b in kept for s in b]
    assert got == list(range(400))
    assert all(int(s["x"][0]) == s["i"] % 256 and int(s["x"][-1]) == s["i"] % 256 for b in kept for s in b)
    del kept
    dl.close()
