"""Every index of an epoch exactly once, with slow and failing samples,
across worker counts and start methods (Python Dataset)."""

from __future__ import annotations

from collections import Counter

import pytest
import torch
from pydatasets import Indexed

import minatoloader

SLOW = tuple(range(3, 120, 11))
FAIL = (5, 50, 51, 99)


@pytest.mark.parametrize("context", ["fork", "spawn", "forkserver"])
@pytest.mark.parametrize("workers", [1, 2, 4])
@pytest.mark.parametrize("in_order", [True, False])
def test_exactly_once_with_slow_and_failing_samples(context: str, workers: int, in_order: bool) -> None:
    n, bs = 120, 7
    ds = Indexed(n, slow=SLOW, slow_s=0.04, fail=FAIL)
    dl = minatoloader.DataLoader(ds, batch_size=bs, shuffle=True, num_workers=workers, in_order=in_order,
                                 multiprocessing_context=context, persistent_workers=True,
                                 generator=torch.Generator().manual_seed(workers))
    dl.configure(on_error="skip", max_skipped=len(FAIL), timeout_ms=5.0)
    try:
        for epoch in range(2):
            batches = list(dl)
            got = Counter(int(i) for b in batches for i in b[0])
            assert set(got.values()) == {1}, f"epoch {epoch}: duplicates {[i for i, c in got.items() if c > 1]}"
            assert sorted(got) == [i for i in range(n) if i not in FAIL]
            for b in batches:  # content matches the index
                assert torch.equal(b[1][:, 0], b[0].float())
            st = dl.stats()
            assert sorted(st["epoch_skipped"]) == list(FAIL)
            if in_order:
                assert st["moved_to_slow"] >= 1  # the slow samples took the slow lane
    finally:
        dl.close()


def test_slow_samples_do_not_hold_batches_any_order() -> None:
    """in_order=False: with one very slow sample early in the epoch, batches
    keep coming; the slow sample arrives in a later batch."""
    ds = Indexed(64, slow=(1,), slow_s=1.0)
    dl = minatoloader.DataLoader(ds, batch_size=4, num_workers=2, in_order=False)
    dl.configure(timeout_ms=20.0)
    order = [int(i) for b in dl for i in b[0]]
    dl.close()
    assert sorted(order) == list(range(64))
    assert order.index(1) >= 8, f"the slow sample came at position {order.index(1)}: it held a batch"
