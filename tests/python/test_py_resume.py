"""state_dict() / load_state_dict(): stop mid-epoch, resume in a fresh
loader, and the union of what was delivered is the epoch."""

from __future__ import annotations

import pickle
import random
from collections import Counter

import pytest
import torch
from pydatasets import Indexed, RandomAug, Sharded

import minatoloader


def make(in_order: bool, workers: int, ds: object = None) -> minatoloader.DataLoader:
    return minatoloader.DataLoader(ds if ds is not None else Indexed(61, slow=(4, 30), slow_s=0.02), batch_size=4,
                                   shuffle=True, num_workers=workers, in_order=in_order,
                                   generator=torch.Generator().manual_seed(9))


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_resume_in_order_is_exact(workers: int, seed: int) -> None:
    full = make(True, workers)
    expected = [b[0].tolist() for b in full]
    full.close()
    stop = random.Random(seed).randrange(1, len(expected))
    dl = make(True, workers)
    it = iter(dl)
    first = [next(it)[0].tolist() for _ in range(stop)]
    state = pickle.loads(pickle.dumps(dl.state_dict()))  # a checkpoint survives pickling
    del it
    dl.close()
    fresh = make(True, workers)
    fresh.load_state_dict(state)
    rest = [b[0].tolist() for b in fresh]
    fresh.close()
    assert first + rest == expected


@pytest.mark.parametrize("seed", [4, 5, 6])
def test_resume_any_order_loses_and_repeats_nothing(seed: int) -> None:
    dl = make(False, 3)
    it = iter(dl)
    stop = random.Random(seed).randrange(1, 15)
    first = [i for _ in range(stop) for i in next(it)[0].tolist()]
    state = dl.state_dict()
    dl.close()
    fresh = make(False, 3)
    fresh.load_state_dict(state)
    rest = [i for b in fresh for i in b[0].tolist()]
    fresh.close()
    counts = Counter(first + rest)
    assert sorted(counts) == list(range(61)) and set(counts.values()) == {1}


def test_resumed_content_is_the_same() -> None:
    """With per-sample seeds the resumed samples' random augmentation equals
    the uninterrupted run's."""
    full = make(True, 2, RandomAug())
    expected = list(full)
    full.close()
    dl = make(True, 2, RandomAug())
    it = iter(dl)
    for _ in range(3):
        next(it)
    state = dl.state_dict()
    dl.close()
    fresh = make(True, 2, RandomAug())
    fresh.load_state_dict(state)
    rest = list(fresh)
    fresh.close()
    for a, b in zip(expected[3:], rest):
        assert torch.equal(a[1], b[1]) and a[2].tolist() == b[2].tolist()


def test_state_between_epochs_and_errors() -> None:
    dl = make(True, 0)
    s0 = dl.state_dict()
    assert s0["epoch"] == 0 and s0["num_yielded"] == 0
    list(dl)
    assert dl.state_dict()["epoch"] == 1
    with pytest.raises(ValueError):
        dl.load_state_dict({"version": 99})
    it = minatoloader.DataLoader(Sharded(0, 5), batch_size=2)
    with pytest.raises(minatoloader.StateError):
        it.load_state_dict(s0)
