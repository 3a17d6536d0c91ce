"""A batch carries the dataset's named fields, in order, plus the indices."""

import numpy as np
import pytest

from minatoloader import NativeLoader, SyntheticDataset


def test_batch_names_and_fields() -> None:
    with NativeLoader(SyntheticDataset(10, shape=(2, 3), dtype="int16"), 4, output="dlpack", return_indices=True) as loader:
        data, label, indices = next(iter(loader))
        batch = data.batch
        assert batch.names == ("data", "label")
        assert (data.name, label.name, indices.name) == ("data", "label", "indices")
        assert data.shape == (4, 2, 3) and data.dtype == "int16"
        assert label.shape == (4,) and label.dtype == "int64"
        assert list(batch.fields) == ["data", "label"]
        assert np.from_dlpack(indices).tolist() == [0, 1, 2, 3]
        with pytest.raises(IndexError, match="fields 0..1"):
            batch.field(2)
        batch.close()


@pytest.mark.parametrize("output", ["torch", "numpy"])
def test_items_follow_the_fields(output: str) -> None:
    with NativeLoader(SyntheticDataset(6, shape=(5,), num_classes=3), 3, output=output, return_indices=True) as loader:
        items = list(loader)
    assert [len(item) for item in items] == [3, 3]
    data, label, indices = items[0]
    assert tuple(data.shape) == (3, 5)
    assert np.asarray(label).min() >= 0 and np.asarray(label).max() < 3
    assert np.asarray(indices).tolist() == [0, 1, 2]
