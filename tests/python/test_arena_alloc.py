"""The worker arena's allocator: its work per sample does not grow with the
number of live blocks (a batch of 40,960 small samples holds 40,960 blocks
at once), and its blocks never overlap."""

from __future__ import annotations

import gc
import os
import random
import struct
import types
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import torch
from torch.utils.data import Dataset

import minatoloader
from minatoloader import _shm
from minatoloader._shm import ALIGN, HEADER, ArenaView, WorkerArena, create_arena


@pytest.fixture
def ends() -> Iterator[tuple[WorkerArena, ArenaView]]:
    size = 64 << 20
    fd = create_arena(size)
    w, v = WorkerArena(os.getpid(), fd, size), ArenaView(fd, size)
    os.close(fd)
    yield w, v
    v.close()
    w.close()


def _counting_struct(counter: list[int]) -> Any:
    """A stand-in for the struct module in _shm that counts reads of a
    block's state word (the allocator's probe of a header)."""

    def unpack_from(fmt: Any, buf: Any, offset: int = 0) -> Any:
        if fmt == "<I":
            counter[0] += 1
        return struct.unpack_from(fmt, buf, offset)

    fake = types.SimpleNamespace(**{k: getattr(struct, k) for k in dir(struct) if not k.startswith("__")})
    fake.unpack_from = unpack_from
    return fake


def _block(length: int) -> int:
    return (HEADER + length + ALIGN - 1) // ALIGN * ALIGN


@pytest.mark.parametrize("n", [4096, 40960])
def test_header_reads_per_sample_are_bounded(
    ends: tuple[WorkerArena, ArenaView], monkeypatch: pytest.MonkeyPatch, n: int
) -> None:
    """n samples put while none is released (one batch of n samples): the
    allocator reads a bounded number of headers per sample, not one per
    live block (which is n*(n-1)/2 reads in all)."""
    w, _ = ends
    reads = [0]
    monkeypatch.setattr(_shm, "struct", _counting_struct(reads))
    placed = [w.put(i, f"sample {i}", tag=i) for i in range(n)]
    monkeypatch.undo()
    assert reads[0] <= 16 * n, f"{reads[0]} header reads for {n} samples"
    # Packed from the lowest offset, in order.
    at = 0
    for off, length in placed:
        assert off == at
        at += _block(length)


def test_released_blocks_are_reused_and_never_overlap(ends: tuple[WorkerArena, ArenaView]) -> None:
    """Random sizes, random release order, thousands of live blocks: every
    live block is intact (its own bytes), none overlaps another, and the
    touched extent stays near the live set."""
    w, v = ends
    v.copy_limit = v.size  # every sample stays a view of its block
    rng = random.Random(5)
    live: dict[int, tuple[int, Any]] = {}  # offset -> (block bytes, sample)
    peak_live = 0
    extent = 0
    for i in range(12000):
        n = rng.choice([1, 8, 100, 3000, 20000])
        off, length = w.put(np.full(n, i % 251, np.uint8), tag=i)
        assert off not in live
        live[off] = (_block(length), v.load(off, length, tag=i))
        peak_live = max(peak_live, sum(b for b, _ in live.values()))
        extent = max(extent, off + _block(length))
        if rng.random() < (0.3 if i < 6000 else 0.7):  # grow, then shrink, the live set
            for victim in rng.sample(sorted(live), min(len(live), rng.choice([1, 2]))):
                del live[victim]
    spans = sorted((off, off + b) for off, (b, _) in live.items())
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(spans, spans[1:]))
    for off, (_, s) in live.items():
        assert int(s.min()) == int(s.max()), off
    assert extent <= 2 * peak_live + (1 << 20), (extent, peak_live)
    assert sorted(o for o, _ in w.live_blocks()) == sorted(live)
    del s
    live.clear()
    gc.collect()
    assert w.live_blocks() == []


def test_failed_put_gives_its_space_back(ends: tuple[WorkerArena, ArenaView]) -> None:
    w, v = ends
    first = w.put(np.zeros(1000, np.uint8))
    with pytest.raises(TypeError):
        w.put([np.zeros(5000, np.uint8), torch.eye(3).to_sparse()])
    second = w.put(np.zeros(1000, np.uint8))
    assert second[0] == first[0] + _block(first[1])
    v.release(first[0])
    v.release(second[0])
    assert w.live_blocks() == []


class Ints(Dataset):  # type: ignore[type-arg]
    def __len__(self) -> int:
        return 40960

    def __getitem__(self, i: int) -> int:
        return i * 3 - 7


def test_batch_of_40960_small_samples_equals_torch() -> None:
    want = next(iter(torch.utils.data.DataLoader(Ints(), batch_size=40960, num_workers=0)))
    gc.collect()
    dl = minatoloader.DataLoader(Ints(), batch_size=40960, num_workers=1)
    batches = list(dl)
    assert len(batches) == 1
    assert batches[0].dtype == want.dtype and torch.equal(batches[0], want)
    dl.close()
