"""The torch and numpy outputs view the batch memory: no copy is made, and the
memory lives exactly as long as the tensors do."""

import gc

import numpy as np
import pytest
import torch
from conftest import live_counters

from minatoloader import NativeLoader, SyntheticDataset


def _reference(n: int, bs: int) -> list:
    """The same epoch through the raw DLPack output, copied out."""
    with NativeLoader(SyntheticDataset(n, shape=(3, 2)), bs, seed=4, output="dlpack") as loader:
        return [np.array(np.from_dlpack(data)) for data, _ in loader]


@pytest.mark.parametrize("output", ["torch", "numpy"])
def test_outputs_hold_library_memory(output: str) -> None:
    n, bs = 24, 8
    want = _reference(n, bs)
    with NativeLoader(SyntheticDataset(n, shape=(3, 2)), bs, seed=4, output=output) as loader:
        got = list(loader)
    # The loader is closed and every batch handle released: only the
    # tensors keep the three batch blocks alive.
    assert live_counters()["live_buffers"] == 3
    kind = torch.Tensor if output == "torch" else np.ndarray
    for (data, labels), ref in zip(got, want):
        assert isinstance(data, kind) and isinstance(labels, kind)
        assert tuple(data.shape) == (bs, 3, 2)
        np.testing.assert_array_equal(np.asarray(data), ref)
    del got, data, labels
    gc.collect()
    assert live_counters()["live_buffers"] == 0
