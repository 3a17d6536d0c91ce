"""Content and order are functions of (seed, epoch), not of timing."""

import numpy as np
import pytest

from minatoloader import DataLoader, NativeLoader, SyntheticDataset


def _epoch(workers: int, seed: int, epoch: int, in_order: bool = True) -> list:
    ds = SyntheticDataset(64, shape=(5,), heavy_every=5, heavy_cost_us=300, cost_kind="sleep")
    with NativeLoader(
        ds, 8, shuffle=True, seed=seed, workers=workers, in_order=in_order, output="numpy", return_indices=True
    ) as loader:
        loader.set_epoch(epoch)
        return [(d.copy(), y.copy(), i.copy()) for d, y, i in loader]


@pytest.mark.parametrize("workers", [1, 3, 8])
def test_same_seed_and_epoch_same_batches(workers: int) -> None:
    reference = _epoch(1, seed=7, epoch=3)
    again = _epoch(workers, seed=7, epoch=3)
    assert len(reference) == len(again)
    for (d1, y1, i1), (d2, y2, i2) in zip(reference, again):
        np.testing.assert_array_equal(i1, i2)
        np.testing.assert_array_equal(y1, y2)
        np.testing.assert_array_equal(d1, d2)


def test_sample_content_does_not_depend_on_batch_composition() -> None:
    ordered = _epoch(4, seed=9, epoch=1, in_order=True)
    free = _epoch(4, seed=9, epoch=1, in_order=False)
    by_index_a = {int(i): (d[k].tobytes(), int(y[k])) for d, y, ii in ordered for k, i in enumerate(ii)}
    by_index_b = {int(i): (d[k].tobytes(), int(y[k])) for d, y, ii in free for k, i in enumerate(ii)}
    assert by_index_a == by_index_b


def test_epochs_shuffle_differently() -> None:
    order0 = np.concatenate([i for _, _, i in _epoch(2, seed=1, epoch=0)])
    order1 = np.concatenate([i for _, _, i in _epoch(2, seed=1, epoch=1)])
    assert sorted(order0.tolist()) == sorted(order1.tolist())
    assert order0.tolist() != order1.tolist()


def test_seeds_shuffle_differently() -> None:
    a = np.concatenate([i for _, _, i in _epoch(2, seed=1, epoch=0)])
    b = np.concatenate([i for _, _, i in _epoch(2, seed=2, epoch=0)])
    assert a.tolist() != b.tolist()


def test_iterations_advance_the_epoch() -> None:
    with NativeLoader(SyntheticDataset(32), 8, shuffle=True, seed=4, output="numpy", return_indices=True) as loader:
        first = [i.tolist() for _, _, i in loader]
        second = [i.tolist() for _, _, i in loader]
        assert loader.epoch == 2
        loader.set_epoch(0)
        replay = [i.tolist() for _, _, i in loader]
    assert first != second
    assert first == replay


def test_labels_in_range() -> None:
    with NativeLoader(SyntheticDataset(40, num_classes=3), 8, output="numpy") as loader:
        labels = np.concatenate([y for _, y in loader])
    assert labels.min() >= 0 and labels.max() < 3


def test_dataloader_generator_fixes_the_order() -> None:
    import torch

    def order(seed: int) -> list:
        g = torch.Generator()
        g.manual_seed(seed)
        with DataLoader(SyntheticDataset(30, shape=(1,)), batch_size=5, shuffle=True, generator=g) as loader:
            return [x[:, 0].tolist() for x, _ in loader]

    assert order(123) == order(123)
    assert order(123) != order(124)


def test_dataloader_follows_torch_manual_seed() -> None:
    import torch

    def order() -> list:
        with DataLoader(SyntheticDataset(30, shape=(1,)), batch_size=5, shuffle=True) as loader:
            return [y.tolist() + x[:, 0].tolist() for x, y in loader]

    torch.manual_seed(5)
    a = order()
    torch.manual_seed(5)
    b = order()
    assert a == b
