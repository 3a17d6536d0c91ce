"""DataLoader(timeout=...) raises torch's RuntimeError when a batch is late."""

import pytest

from minatoloader import DataLoader, NativeLoader, SyntheticDataset


def _slow() -> SyntheticDataset:
    # Every sample sleeps 1 s: no batch can be ready within 0.1 s.
    return SyntheticDataset(2, heavy_every=1, heavy_cost_us=1e6, cost_kind="sleep")


def test_dataloader_timeout() -> None:
    with DataLoader(_slow(), batch_size=2, timeout=0.1) as loader:
        with pytest.raises(RuntimeError, match=r"DataLoader timed out after 0\.1 seconds"):
            next(iter(loader))


def test_batch_timeout_must_be_non_negative() -> None:
    with pytest.raises(ValueError, match="batch_timeout"):
        NativeLoader(SyntheticDataset(2), 1, batch_timeout=-1)
