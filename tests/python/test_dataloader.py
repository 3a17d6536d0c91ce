"""DataLoader behaves as torch's does for the arguments it supports."""

import torch

from minatoloader import DataLoader, NativeLoader, SyntheticDataset


def test_yields_torch_pairs() -> None:
    with DataLoader(SyntheticDataset(20, shape=(3, 2)), batch_size=8) as loader:
        assert len(loader) == 3
        batches = [(x.clone(), y.clone()) for x, y in loader]
    assert [tuple(x.shape) for x, _ in batches] == [(8, 3, 2), (8, 3, 2), (4, 3, 2)]
    assert all(x.dtype == torch.float32 and y.dtype == torch.int64 for x, y in batches)


def test_accepted_arguments() -> None:
    g = torch.Generator()
    g.manual_seed(3)
    with DataLoader(
        SyntheticDataset(16),
        batch_size=4,
        shuffle=True,
        num_workers=2,
        drop_last=True,
        generator=g,
        prefetch_factor=3,
        persistent_workers=True,
        in_order=False,
    ) as loader:
        assert isinstance(loader, torch.utils.data.DataLoader)
        assert sum(len(y) for _, y in loader) == 16
        stats = loader.stats()
        assert stats["prefetch_batches"] == 3
        assert stats["workers"] == 2


def test_zero_workers_means_one_worker() -> None:
    with DataLoader(SyntheticDataset(4), batch_size=2, num_workers=0) as loader:
        assert len(list(loader)) == 2
        assert loader.stats()["workers"] == 1
        assert loader.stats()["prefetch_batches"] == 2


def test_order_is_torchs_for_the_same_generator() -> None:
    """The native path takes its order from torch's RandomSampler: the same
    generator (even a seed of 2**64 - 1) gives torch's batches."""
    g = torch.Generator()
    g.manual_seed(2**64 - 1)
    ours: list[list[int]] = []
    with DataLoader(SyntheticDataset(10), batch_size=4, shuffle=True, generator=g) as loader:
        for _ in loader:
            delivered = loader.state_dict()["delivered"]
            ours.append(delivered[sum(map(len, ours)):])
    g.manual_seed(2**64 - 1)
    theirs = [b.tolist() for b in torch.utils.data.DataLoader(list(range(10)), batch_size=4, shuffle=True, generator=g)]
    assert ours == theirs


def test_set_epoch_and_stats() -> None:
    with DataLoader(SyntheticDataset(12), batch_size=4, shuffle=True) as loader:
        loader.set_epoch(5)
        assert sum(len(y) for _, y in loader) == 12
        assert loader.stats()["epoch"] == 5
        assert loader.stats()["samples"] == 12
