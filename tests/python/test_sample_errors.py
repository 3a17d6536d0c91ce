"""A failing sample raises SampleError naming its index; the loader stays usable."""

import re

import pytest

from minatoloader import NativeLoader, SampleError, SyntheticDataset


@pytest.mark.parametrize("workers", [1, 4])
def test_failing_sample_is_named(workers: int) -> None:
    ds = SyntheticDataset(40, fail_indices=[17])
    with NativeLoader(ds, 4, workers=workers) as loader:
        with pytest.raises(SampleError) as info:
            for _ in loader:
                pass
        assert re.search(r"\b17\b", str(info.value)), str(info.value)
        assert info.value.status == -3


def test_iterator_ends_after_sample_error() -> None:
    with NativeLoader(SyntheticDataset(12, fail_indices=[0]), 4) as loader:
        it = iter(loader)
        with pytest.raises(SampleError):
            next(it)
        with pytest.raises(StopIteration):
            next(it)


def test_next_epoch_after_sample_error() -> None:
    # The failing index fails again, every epoch: the error is reported again.
    with NativeLoader(SyntheticDataset(12, fail_indices=[11]), 4) as loader:
        for _ in range(2):
            with pytest.raises(SampleError, match="11"):
                list(loader)
