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
        pin_memory=True,
        drop_last=True,
        generator=g,
        prefetch_factor=3,
        persistent_workers=True,
        in_order=False,
    ) as loader:
        assert isinstance(loader.native, NativeLoader)
        assert loader.native.config["prefetch_batches"] == 3
        assert loader.native.config["workers"] == 2
        assert loader.native.config["seed"] == 3
        assert sum(len(y) for _, y in loader) == 16


def test_zero_workers_means_one_worker() -> None:
    with DataLoader(SyntheticDataset(4), batch_size=2, num_workers=0) as loader:
        assert loader.native.config["workers"] == 1
        assert loader.native.config["prefetch_batches"] == 2


def test_large_generator_seed_fits_int64() -> None:
    g = torch.Generator()
    g.manual_seed(2**64 - 1)
    with DataLoader(SyntheticDataset(8), batch_size=4, shuffle=True, generator=g) as loader:
        assert loader.native.config["seed"] == -1
        assert sum(len(y) for _, y in loader) == 8


def test_set_epoch_and_stats() -> None:
    with DataLoader(SyntheticDataset(12), batch_size=4, shuffle=True) as loader:
        loader.set_epoch(5)
        assert sum(len(y) for _, y in loader) == 12
        assert loader.native.epoch == 6
        assert loader.stats()["samples"] == 12
