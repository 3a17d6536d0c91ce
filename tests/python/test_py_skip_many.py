"""An epoch with more skipped samples than max_inflight ends (issue 9's fault
injection found it): a skipped sample frees its place in flight, and the
shell feeds the core beyond the samples delivered and skipped. Before the
fix the epoch waited for a feed that never came (here: the timeout)."""

from __future__ import annotations

import pytest

from minatoloader import DataLoader


class HalfBad:
    """Every odd index raises."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> int:
        if i % 2:
            raise ValueError(f"sample {i} is bad")
        return i


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("in_order", [True, False])
def test_more_skips_than_in_flight(workers: int, in_order: bool) -> None:
    dl = DataLoader(HalfBad(600), batch_size=4, num_workers=workers, timeout=60, in_order=in_order)
    dl.configure(on_error="skip")
    for epoch in range(2):
        got = sorted(int(i) for b in dl for i in b)
        assert got == list(range(0, 600, 2)), f"epoch {epoch}"
        assert sorted(dl.stats()["epoch_skipped"]) == list(range(1, 600, 2))
