"""stats() reports the library's JSON; counts follow from what was delivered."""

import minatoloader
from minatoloader import NativeLoader, SyntheticDataset


def test_stats_counts_one_epoch() -> None:
    with NativeLoader(SyntheticDataset(50), 8, workers=2, prefetch_epoch=False) as loader:
        for _ in loader:
            pass
        stats = loader.stats()
    assert isinstance(stats, dict)
    assert stats["samples"] == 50
    assert stats["batches"] == 7
    assert stats["fast_samples"] + stats["slow_samples"] == 50
    assert stats["failed"] == 0


def test_stats_with_the_next_epoch_prefetched() -> None:
    # "samples" and "batches" count what the consumer got; the lanes' counts
    # include the work already done for the next epoch.
    with NativeLoader(SyntheticDataset(50), 8, workers=2) as loader:
        for _ in loader:
            pass
        stats = loader.stats()
    assert stats["samples"] == 50 and stats["batches"] == 7
    assert stats["fast_samples"] + stats["slow_samples"] >= 50


def test_stats_before_first_epoch() -> None:
    with NativeLoader(SyntheticDataset(10), 2) as loader:
        stats = loader.stats()
    assert stats["samples"] == 0


def test_counters_keys() -> None:
    c = minatoloader.counters()
    assert set(c) == {
        "live_loaders",
        "live_batches",
        "live_buffers",
        "live_buffer_bytes",
        "live_goroutines",
        "total_buffers",
    }
