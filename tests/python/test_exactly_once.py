"""Every index of an epoch is delivered exactly once (less what drop_last drops)."""

from collections import Counter

import pytest
from conftest import epoch_indices

from minatoloader import DataLoader, NativeLoader, SyntheticDataset


@pytest.mark.parametrize("workers", [1, 2, 4, 8])
@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("in_order", [True, False])
def test_every_index_once(workers: int, shuffle: bool, in_order: bool) -> None:
    n, bs = 103, 8
    ds = SyntheticDataset(n, shape=(3,), heavy_every=7, heavy_cost_us=200, cost_kind="sleep")
    with NativeLoader(
        ds, bs, shuffle=shuffle, seed=11, workers=workers, in_order=in_order, return_indices=True
    ) as loader:
        assert len(loader) == (n + bs - 1) // bs
        for _ in range(2):  # two epochs
            batches = epoch_indices(loader)
            flat = [i for b in batches for i in b]
            assert sorted(flat) == list(range(n))
            assert len(batches) == len(loader)
            assert all(len(b) == bs for b in batches[:-1])
            assert len(batches[-1]) == n - bs * (len(batches) - 1)


@pytest.mark.parametrize("shuffle", [False, True])
def test_drop_last_true(shuffle: bool) -> None:
    n, bs = 50, 8
    with NativeLoader(SyntheticDataset(n), bs, shuffle=shuffle, seed=5, drop_last=True, return_indices=True) as loader:
        assert len(loader) == n // bs
        assert loader.num_samples() == n // bs * bs
        batches = epoch_indices(loader)
    flat = [i for b in batches for i in b]
    assert len(batches) == n // bs
    assert all(len(b) == bs for b in batches)
    assert len(set(flat)) == len(flat) == n // bs * bs
    assert set(flat) <= set(range(n))


def test_drop_last_false_keeps_tail() -> None:
    n, bs = 50, 8
    with NativeLoader(SyntheticDataset(n), bs, drop_last=False, return_indices=True) as loader:
        batches = epoch_indices(loader)
    assert [len(b) for b in batches] == [8] * 6 + [2]
    assert [i for b in batches for i in b] == list(range(n))


def test_sequential_order_without_shuffle() -> None:
    with NativeLoader(SyntheticDataset(20), 6, shuffle=False, in_order=True, return_indices=True) as loader:
        flat = [i for b in epoch_indices(loader) for i in b]
    assert flat == list(range(20))


def test_world_size_slices_cover_the_dataset() -> None:
    n, world = 37, 3
    seen: Counter = Counter()
    for rank in range(world):
        with NativeLoader(
            SyntheticDataset(n), 4, shuffle=True, seed=2, rank=rank, world_size=world, return_indices=True
        ) as loader:
            seen.update(i for b in epoch_indices(loader) for i in b)
    assert set(seen) == set(range(n))
    # padding to a multiple of world_size repeats at most world_size - 1 samples
    assert sum(seen.values()) - n < world


@pytest.mark.parametrize("num_workers", [0, 1, 3])
def test_dataloader_epoch(num_workers: int) -> None:
    n, bs = 45, 10
    with DataLoader(SyntheticDataset(n, shape=(2,)), batch_size=bs, shuffle=True, num_workers=num_workers) as loader:
        sizes = [len(labels) for _, labels in loader]
    assert sizes == [10, 10, 10, 10, 5]


def test_empty_dataset() -> None:
    with NativeLoader(SyntheticDataset(0), 4) as loader:
        assert len(loader) == 0
        assert list(loader) == []
