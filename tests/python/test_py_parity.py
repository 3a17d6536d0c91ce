"""A Python Dataset through torch's DataLoader and through ours, the same
arguments, compared batch by batch."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
import torch.utils.data as tud
from pydatasets import Indexed, Nested, RandomAug, Sharded, WorkerInfoDS, collate_list

import minatoloader


def same(a: Any, b: Any, path: str = "") -> None:
    assert type(a) is type(b), f"{path}: {type(a)} vs {type(b)}"
    if isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b), f"{path}: {a} vs {b}"
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and np.array_equal(a, b), path
    elif isinstance(a, dict):
        assert list(a) == list(b), path
        for k in a:
            same(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for k, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{path}[{k}]")
    else:
        assert a == b, f"{path}: {a!r} vs {b!r}"


def both(dataset: Any, seed: int | None = None, **kw: Any) -> tuple[list[Any], list[Any]]:
    out = []
    for cls in (tud.DataLoader, minatoloader.DataLoader):
        g = torch.Generator().manual_seed(seed) if seed is not None else None
        dl = cls(dataset, generator=g, **kw)
        out.append(list(dl))
        if isinstance(dl, minatoloader.DataLoader):
            dl.close()
    return out[0], out[1]


@pytest.mark.parametrize("workers", [0, 1, 3])
@pytest.mark.parametrize("shuffle", [False, True])
def test_in_order_batches_equal_torch(workers: int, shuffle: bool) -> None:
    ds = Indexed(50, slow=(3, 20), slow_s=0.03)
    t, m = both(ds, seed=7, batch_size=4, shuffle=shuffle, num_workers=workers)
    same(t, m)


@pytest.mark.parametrize("workers", [0, 2])
def test_nested_default_collate(workers: int) -> None:
    t, m = both(Nested(), batch_size=5, num_workers=workers)
    same(t, m)


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("n,bs,drop", [(23, 5, False), (23, 5, True), (20, 5, True), (3, 5, True), (0, 4, False)])
def test_drop_last_and_len(workers: int, n: int, bs: int, drop: bool) -> None:
    ds = Indexed(n)
    t, m = both(ds, batch_size=bs, drop_last=drop, num_workers=workers)
    same(t, m)
    assert len(minatoloader.DataLoader(ds, batch_size=bs, drop_last=drop)) == len(tud.DataLoader(ds, batch_size=bs, drop_last=drop))


@pytest.mark.parametrize("workers", [0, 2])
def test_batch_size_none(workers: int) -> None:
    t, m = both(Indexed(9), batch_size=None, num_workers=workers)
    same(t, m)
    t, m = both(Sharded(0, 9), batch_size=None, num_workers=workers)
    same(t, m)


@pytest.mark.parametrize("workers", [0, 1, 3])
@pytest.mark.parametrize("drop", [False, True])
def test_iterable_sharding(workers: int, drop: bool) -> None:
    t, m = both(Sharded(0, 29), batch_size=4, drop_last=drop, num_workers=workers)
    same(t, m)
    assert len(minatoloader.DataLoader(Sharded(0, 29), batch_size=4, drop_last=drop)) == len(
        tud.DataLoader(Sharded(0, 29), batch_size=4, drop_last=drop)
    )


def test_custom_sampler_batch_sampler_and_collate() -> None:
    ds = Indexed(30)
    sampler = [5, 3, 9, 1, 0, 22, 7]
    t, m = both(ds, batch_size=3, sampler=sampler, num_workers=2)
    same(t, m)
    batches = [[1, 2, 3], [7], [0, 29, 4, 8, 9, 10, 11], [5, 6]]
    t, m = both(ds, batch_sampler=batches, num_workers=2)
    same(t, m)
    t, m = both(ds, batch_size=4, collate_fn=collate_list, num_workers=2)
    same(t, m)


@pytest.mark.parametrize("workers", [2, 3])
def test_worker_info_and_seeds(workers: int) -> None:
    """Every sample sees torch's worker_info; the workers' seeds are torch's
    (base_seed + id, base_seed drawn from the same generator)."""
    t, m = both(WorkerInfoDS(), seed=11, batch_size=2, num_workers=workers)

    def rows(batches: list[Any]) -> list[tuple[int, ...]]:
        return [tuple(int(x[k]) for x in b) for b in batches for k in range(len(b[0]))]

    tr, mr = rows(t), rows(m)
    assert [r[0] for r in tr] == [r[0] for r in mr] == list(range(16))
    base_t = {r[4] for r in tr}
    base_m = {r[4] for r in mr}
    assert base_t == base_m and len(base_m) == 1, (base_t, base_m)
    for _, wid, nw, seed, base in mr:
        assert 0 <= wid < nw and nw >= workers and seed == base + wid


def test_generator_makes_content_reproducible() -> None:
    """Random augmentation depends on (generator seed, epoch, index) only:
    two loaders with the same seed and different worker counts agree."""
    runs = []
    for workers in (1, 3):
        dl = minatoloader.DataLoader(RandomAug(), batch_size=4, shuffle=True, num_workers=workers,
                                     generator=torch.Generator().manual_seed(5))
        runs.append([list(dl), list(dl)])  # two epochs
        dl.close()
    same(runs[0], runs[1])
    e0, e1 = runs[0]
    assert not torch.equal(e0[0][1], e1[0][1]), "epochs must differ"


@pytest.mark.parametrize("in_order", [True, False])
def test_persistent_workers_across_epochs(in_order: bool) -> None:
    ds = Indexed(21)
    g_t, g_m = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    t = tud.DataLoader(ds, batch_size=4, shuffle=True, num_workers=2, persistent_workers=True, generator=g_t)
    m = minatoloader.DataLoader(ds, batch_size=4, shuffle=True, num_workers=2, persistent_workers=True, generator=g_m,
                                in_order=in_order)
    try:
        pids = set()
        for _ in range(3):
            tb, mb = list(t), list(m)
            if in_order:
                same(tb, mb)
            else:
                got = sorted(int(i) for b in mb for i in b[0])
                assert got == list(range(21))
            pids.add(tuple(p.pid for p in m._session.pool.procs))
        assert len(pids) == 1, "persistent workers must be the same processes every epoch"
    finally:
        m.close()


def test_iterable_persistent_workers() -> None:
    ds = Sharded(0, 13)
    t = tud.DataLoader(ds, batch_size=3, num_workers=2, persistent_workers=True)
    m = minatoloader.DataLoader(ds, batch_size=3, num_workers=2, persistent_workers=True)
    try:
        for _ in range(2):
            same(list(t), list(m))
    finally:
        m.close()


def test_distributed_sampler_two_ranks() -> None:
    ds = Indexed(37)
    seen = []
    for rank in (0, 1):
        outs = []
        for cls in (tud.DataLoader, minatoloader.DataLoader):
            s = tud.DistributedSampler(ds, num_replicas=2, rank=rank, shuffle=True, seed=4)
            dl = cls(ds, batch_size=4, sampler=s, num_workers=2)
            epochs = []
            for epoch in (0, 1):
                s.set_epoch(epoch)
                epochs.append(list(dl))
            outs.append(epochs)
        same(outs[0], outs[1])
        seen += [int(i) for b in outs[1][0] for i in b[0]]
    assert set(seen) == set(range(37)) and len(seen) == 38  # padded to a multiple of 2


def test_invalid_combinations_raise_like_torch() -> None:
    ds, it = Indexed(4), Sharded(0, 4)
    cases = [
        dict(dataset=ds, sampler=[0, 1], shuffle=True),
        dict(dataset=ds, batch_sampler=[[0]], batch_size=2),
        dict(dataset=ds, batch_size=None, drop_last=True),
        dict(dataset=it, shuffle=True),
        dict(dataset=it, sampler=[0]),
        dict(dataset=ds, num_workers=0, prefetch_factor=2),
        dict(dataset=ds, persistent_workers=True),
        dict(dataset=ds, num_workers=-1),
        dict(dataset=ds, timeout=-1),
        dict(dataset=ds, num_workers=0, multiprocessing_context="spawn"),
        dict(dataset=ds, num_workers=1, multiprocessing_context="nope"),
        dict(dataset=ds, num_workers=1, multiprocessing_context=3),
    ]
    for kw in cases:
        with pytest.raises(Exception) as te:
            tud.DataLoader(**kw)
        with pytest.raises(type(te.value)) as me:
            minatoloader.DataLoader(**kw)
        assert str(me.value) == str(te.value), kw
