"""Loaders used from several threads; close() from another thread ends a wait."""

import threading

import pytest

from minatoloader import ClosedError, NativeLoader, SyntheticDataset


def test_close_from_another_thread_ends_the_wait() -> None:
    # Every sample sleeps 0.5 s, so the consumer is waiting when close() runs.
    ds = SyntheticDataset(4, heavy_every=1, heavy_cost_us=5e5, cost_kind="sleep")
    loader = NativeLoader(ds, 4, workers=1)
    it = iter(loader)
    started = threading.Event()
    timer = threading.Thread(target=lambda: (started.wait(), loader.close()))
    timer.start()
    started.set()
    try:
        with pytest.raises(ClosedError):
            for _ in it:
                pass
    finally:
        timer.join(timeout=60)
    assert not timer.is_alive()


def test_loaders_in_parallel_threads() -> None:
    results: dict = {}

    def run(name: int) -> None:
        with NativeLoader(
            SyntheticDataset(300, shape=(4,)), 7, shuffle=True, seed=name, return_indices=True, output="numpy"
        ) as loader:
            results[name] = sorted(i for _, _, idx in loader for i in idx.tolist())

    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert all(results[k] == list(range(300)) for k in range(4))
