"""The reused output memory of collated batches (minatoloader._shm.BatchPool)."""

from __future__ import annotations

import gc

import torch

from minatoloader import _shm


def test_blocks_are_reused_only_after_release_and_never_overlap() -> None:
    pool = _shm.BatchPool(1 << 20)
    a = pool.empty((64, 64), torch.float32)
    b = pool.empty((10, 7), torch.int64)
    assert a is not None and b is not None
    a.fill_(1.5)
    b.fill_(-3)
    c = pool.empty((100,), torch.uint8)
    assert c is not None
    c.fill_(255)
    assert bool((a == 1.5).all()) and bool((b == -3).all())  # no overlap
    pa = a.data_ptr()
    view = a[3]  # a view keeps the block alive
    del a
    gc.collect()
    d = pool.empty((64, 64), torch.float32)
    assert d is not None and d.data_ptr() != pa
    del view, d
    gc.collect()
    e = pool.empty((64, 64), torch.float32)
    assert e is not None and e.data_ptr() == pa


def test_full_pool_and_empty_shapes_fall_back() -> None:
    pool = _shm.BatchPool(1 << 16)
    big = pool.empty((1 << 14,), torch.float32)  # exactly the pool
    assert big is not None
    assert pool.empty((1,), torch.float32) is None
    assert pool.empty((0, 3), torch.float32) is None
    pool.close()
    big.fill_(2.0)  # the mapping lives while tensors view it
    assert float(big.sum()) == 2.0 * (1 << 14)
    assert pool.empty((1,), torch.float32) is None
