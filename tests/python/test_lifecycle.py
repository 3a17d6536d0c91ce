"""close(), context managers, garbage collection and early exits free everything."""

import gc

import pytest
from conftest import wait_released

import minatoloader
from minatoloader import ClosedError, DataLoader, NativeLoader, SyntheticDataset


def _ds() -> SyntheticDataset:
    return SyntheticDataset(200, shape=(8,), light_cost_us=20)


def test_close_releases_everything() -> None:
    loader = NativeLoader(_ds(), 8, workers=4)
    it = iter(loader)
    next(it)  # the returned batch is dropped at once
    assert minatoloader.counters()["live_loaders"] == 1
    loader.close()
    assert loader.closed
    c = wait_released()
    assert not any(c.values()), c


def test_close_is_idempotent() -> None:
    loader = NativeLoader(_ds(), 8)
    loader.close()
    loader.close()
    assert loader.closed


def test_context_manager() -> None:
    with NativeLoader(_ds(), 8) as loader:
        for _ in loader:
            pass
    assert loader.closed
    with DataLoader(_ds(), batch_size=8, num_workers=2) as dl:
        data, labels = next(iter(dl))
        assert data.shape == (8, 8)
        del data, labels
    assert dl.closed


def test_break_mid_epoch_then_close() -> None:
    with NativeLoader(_ds(), 4, workers=4, prefetch_batches=4) as loader:
        for k, item in enumerate(loader):  # noqa: B007 (item is deleted below)
            if k == 2:
                break
    del item  # the last batch's tensors hold its memory
    c = wait_released()
    assert not any(c.values()), c


def test_break_then_new_epoch_cancels_the_old() -> None:
    with NativeLoader(_ds(), 4, shuffle=True, seed=1, return_indices=True, output="numpy") as loader:
        old = iter(loader)
        next(old)
        new = iter(loader)
        with pytest.raises(RuntimeError, match="cancelled"):
            next(old)
        flat = sorted(i for _, _, idx in new for i in idx.tolist())
        assert flat == list(range(200))


def test_garbage_collected_loader_is_closed() -> None:
    loader = NativeLoader(_ds(), 8)
    next(iter(loader))
    del loader
    gc.collect()
    c = wait_released()
    assert not any(c.values()), c


def test_use_after_close() -> None:
    loader = NativeLoader(_ds(), 8)
    it = iter(loader)
    loader.close()
    with pytest.raises(ClosedError):
        iter(loader)
    with pytest.raises(ClosedError):
        next(it)
    with pytest.raises(ClosedError):
        len(loader)
    with pytest.raises(ClosedError):
        loader.stats()


def test_many_loaders_do_not_accumulate() -> None:
    for _ in range(20):
        with DataLoader(_ds(), batch_size=16, num_workers=2) as loader:
            for item in loader:  # noqa: B007 (item is deleted below)
                pass
        del item  # the last batch's tensors hold its memory
    c = wait_released()
    assert not any(c.values()), c
