"""Behaviours torch's own DataLoader tests check, on every path of ours.

Each test runs torch's DataLoader and ours side by side where the outcome
is data, and checks torch's message or warning where it is an error.
"""

from __future__ import annotations

import os
import warnings

import pytest
import torch
from torch.utils.data import DistributedSampler, IterableDataset

import minatoloader
from minatoloader import DataLoader, SyntheticDataset

from pydatasets import Indexed


def _rows(batches: list) -> list:
    return [b.tolist() if isinstance(b, torch.Tensor) else b for b in batches]


def test_is_a_torch_dataloader_on_every_path() -> None:
    for ds in (SyntheticDataset(8), list(range(8))):
        loader = DataLoader(ds, batch_size=4)
        assert isinstance(loader, torch.utils.data.DataLoader)
        loader.close()
    assert DataLoader[int] is not None  # generic, as torch's


@pytest.mark.parametrize("make", [lambda: SyntheticDataset(10), lambda: list(range(10))], ids=["native", "python"])
def test_attributes_are_torchs(make) -> None:
    ds = make()
    g = torch.Generator()
    ours = DataLoader(ds, batch_size=3, shuffle=True, drop_last=True, generator=g)
    theirs = torch.utils.data.DataLoader(ds, batch_size=3, shuffle=True, drop_last=True, generator=g)
    assert ours.dataset is ds
    for name in ("batch_size", "drop_last", "num_workers", "pin_memory", "timeout", "generator", "prefetch_factor",
                 "persistent_workers", "in_order", "collate_fn", "worker_init_fn", "multiprocessing_context"):
        assert getattr(ours, name) == getattr(theirs, name), name
    assert type(ours.sampler) is type(theirs.sampler)
    assert type(ours.batch_sampler) is type(theirs.batch_sampler)
    assert len(ours) == len(theirs) == 3
    ours.close()


def test_frozen_attributes_raise_after_construction() -> None:
    loader = DataLoader(SyntheticDataset(4), batch_size=2)
    with pytest.raises(ValueError, match="batch_size attribute should not be set after DataLoader is initialized"):
        loader.batch_size = 3
    loader.close()


@pytest.mark.parametrize("workers", [0, 2])
def test_two_iterators_are_independent(workers: int) -> None:
    """zip(loader, loader): both iterators yield the whole epoch."""
    ds = list(range(10))
    loader = DataLoader(ds, batch_size=3, num_workers=workers)
    pairs = [(a.tolist(), b.tolist()) for a, b in zip(loader, loader)]
    assert pairs == [(x, x) for x in ([0, 1, 2], [3, 4, 5], [6, 7, 8], [9])]
    native = DataLoader(SyntheticDataset(10), batch_size=3)
    assert len([1 for _ in zip(native, native)]) == 4
    native.close()


def test_timeout_message_keeps_the_value_as_given() -> None:
    loader = DataLoader(Indexed(4, slow=(0,), slow_s=3.0), batch_size=1, num_workers=1, timeout=1)
    with pytest.raises(RuntimeError, match=r"^DataLoader timed out after 1 seconds$"):
        next(iter(loader))
    loader.close()


class WithGetitems(torch.utils.data.Dataset):
    def __init__(self) -> None:
        self.calls: list[list[int]] = []

    def __len__(self) -> int:
        return 6

    def __getitem__(self, i: int) -> int:
        raise AssertionError("__getitems__ should have been used")

    def __getitems__(self, indices: list[int]) -> list[int]:
        self.calls.append(list(indices))
        return [10 * i for i in indices]


def test_getitems_is_used_without_workers() -> None:
    ds = WithGetitems()
    assert _rows(list(DataLoader(ds, batch_size=4))) == [[0, 10, 20, 30], [40, 50]]
    assert ds.calls == [[0, 1, 2, 3], [4, 5]]


def test_too_many_workers_warns_as_torch() -> None:
    n = len(os.sched_getaffinity(0)) + 3
    with pytest.warns(UserWarning, match="This DataLoader will create"):
        DataLoader(list(range(4)), num_workers=n).close()


class Counted(IterableDataset):
    def __init__(self, n: int, claimed: int) -> None:
        self.n, self.claimed = n, claimed

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self) -> int:
        return self.claimed


def test_iterable_longer_than_its_len_warns() -> None:
    loader = DataLoader(Counted(5, 3), batch_size=None)
    assert len(loader) == 3
    with pytest.warns(UserWarning, match="was reported to be 3"):
        assert list(loader) == [0, 1, 2, 3, 4]


def test_iterdatapipe_shuffle_is_applied() -> None:
    dp = pytest.importorskip("torch.utils.data.datapipes.iter")
    pipe = dp.IterableWrapper(list(range(20))).shuffle()
    torch.manual_seed(0)
    ours = [int(x) for x in DataLoader(pipe, batch_size=None, shuffle=True)]
    assert sorted(ours) == list(range(20))


@pytest.mark.parametrize("make", [lambda: SyntheticDataset(21), lambda: list(range(21))], ids=["native", "python"])
def test_distributed_sampler_splits_the_epoch(make) -> None:
    ds = make()
    seen: list[list[int]] = []
    for rank in range(2):
        sampler = DistributedSampler(ds, num_replicas=2, rank=rank, shuffle=True, seed=3)
        sampler.set_epoch(1)
        loader = DataLoader(ds, batch_size=4, sampler=sampler)
        got: list[int] = []
        for _ in loader:
            got = loader.state_dict()["delivered"]
        seen.append(got)
        assert got == list(sampler)  # torch's order for this rank
        loader.close()
    assert set(seen[0]) | set(seen[1]) == set(range(21))


@pytest.mark.parametrize("in_order", [True, False])
def test_native_state_dict_resumes_exactly(in_order: bool) -> None:
    """A fresh loader given the state of one stopped after 5 batches yields
    exactly the rest (in order), or every sample not yet delivered once."""
    ds = SyntheticDataset(50, shape=(2,))
    torch.manual_seed(7)
    full = DataLoader(ds, batch_size=4, shuffle=True, num_workers=2, in_order=in_order)
    full_batches = _native_batches(full)
    torch.manual_seed(7)
    first = DataLoader(ds, batch_size=4, shuffle=True, num_workers=2, in_order=in_order)
    it = iter(first)
    for _ in range(5):
        next(it)
    state = first.state_dict()
    first.close()
    fresh = DataLoader(ds, batch_size=4, shuffle=True, num_workers=2, in_order=in_order)
    fresh.load_state_dict(state)
    rest: list[list[int]] = []
    for _ in fresh:
        delivered = fresh.state_dict()["delivered"]
        rest.append(delivered[len(state["delivered"]) + sum(map(len, rest)):])
    if in_order:
        assert rest == full_batches[5:]
    assert sorted(state["delivered"] + sum(rest, [])) == list(range(50))
    full.close()
    fresh.close()


def test_worker_killed_after_its_last_sample_is_reported() -> None:
    """torch reports a worker that died even when it had nothing left to do."""
    loader = DataLoader(list(range(40)), batch_size=2, num_workers=2)
    it = iter(loader)
    next(it)
    pool = loader._session.current.pool
    victim = pool.procs[0]
    os.kill(victim.pid, 9)
    victim.join(5)
    with pytest.raises(RuntimeError, match=rf"DataLoader worker \(pid\(s\) {victim.pid}\) exited unexpectedly"):
        for _ in it:
            pass
    loader.close()


def test_pin_memory_warns_without_an_accelerator() -> None:
    if torch.accelerator.is_available():
        pytest.skip("an accelerator is present")
    for ds in (SyntheticDataset(4), list(range(4))):
        loader = DataLoader(ds, batch_size=2, pin_memory=True)
        with pytest.warns(UserWarning, match="'pin_memory' argument is set as true but no accelerator is found"):
            assert len(list(loader)) == 2
        loader.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DataLoader(SyntheticDataset(4), batch_size=2).close()


def test_library_is_unchanged_by_import() -> None:
    assert minatoloader.DataLoader is DataLoader


def _drain(loader) -> list:
    """Every batch's indices, or the exception's type and sample, going on
    after each exception as a training loop that catches them would."""
    out: list = []
    it = iter(loader)
    while True:
        try:
            batch = next(it)
        except StopIteration:
            return out
        except ValueError as e:
            out.append(("ValueError", "sample 5 is broken on purpose" in str(e)))
            continue
        out.append(batch[0].tolist())


@pytest.mark.parametrize("workers", [0, 2])
def test_iteration_goes_on_after_a_worker_exception(workers: int) -> None:
    ds = Indexed(12, fail=(5,))
    theirs = _drain(torch.utils.data.DataLoader(ds, batch_size=2, num_workers=workers))
    ours = _drain(DataLoader(ds, batch_size=2, num_workers=workers))
    assert theirs == [[0, 1], [2, 3], ("ValueError", True), [6, 7], [8, 9], [10, 11]]
    assert ours == theirs


def test_native_sample_error_goes_on() -> None:
    loader = DataLoader(SyntheticDataset(12, fail_indices=(5,)), batch_size=2)
    got = []
    it = iter(loader)
    while True:
        try:
            _, y = next(it)
            got.append(len(y))
        except minatoloader.SampleError as e:
            assert e.index == 5
            got.append("error")
        except StopIteration:
            break
    assert got == [2, 2, "error", 2, 2, 2]
    loader.close()


class RaisesInWorker0(IterableDataset):
    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        wid = info.id if info is not None else 0
        for i in range(6):
            if wid == 0 and i == 3:
                raise ValueError("boom at 3")
            yield wid * 100 + i


@pytest.mark.parametrize("workers", [0, 2])
def test_iterable_error_is_raised_and_iteration_goes_on(workers: int) -> None:
    """The user's exception type and message, then the other workers' data."""
    def drain(loader) -> list:
        out: list = []
        it = iter(loader)
        while True:
            try:
                out.append(next(it).tolist())
            except StopIteration:
                return out
            except ValueError as e:
                out.append(("ValueError", "boom at 3" in str(e)))

    theirs = drain(torch.utils.data.DataLoader(RaisesInWorker0(), batch_size=2, num_workers=workers))
    assert drain(DataLoader(RaisesInWorker0(), batch_size=2, num_workers=workers)) == theirs


def _native_batches(loader) -> list[list[int]]:
    """The indices of each batch a native DataLoader yields (from its state)."""
    out: list[list[int]] = []
    for _ in loader:
        delivered = loader.state_dict()["delivered"]
        out.append(delivered[sum(map(len, out)):])
    return out


@pytest.mark.parametrize("in_order", [True, False])
@pytest.mark.parametrize(
    "kwargs",
    [
        {"batch_size": 4},
        {"batch_size": 4, "shuffle": True},
        {"batch_size": 4, "shuffle": True, "drop_last": True},
        {"batch_size": 3, "sampler": [5, 1, 1, 7, 22, 0]},
        {"batch_sampler": [[3, 2], [9], [0, 1, 2, 4, 8]]},
        {"batch_size": 5, "sampler": "distributed"},
        {"batch_size": 4, "num_workers": 2, "prefetch_factor": 3, "shuffle": True},
    ],
    ids=["plain", "shuffle", "drop_last", "sampler", "batch_sampler", "distributed", "workers"],
)
def test_native_batches_are_torchs(kwargs: dict, in_order: bool) -> None:
    """The native path yields the batches of torch's samplers, argument by
    argument (in any order with in_order=False: the same samples)."""
    n = 23
    kw = dict(kwargs)
    if kw.get("sampler") == "distributed":
        kw["sampler"] = DistributedSampler(range(n), num_replicas=3, rank=1, shuffle=True, seed=5)
    g = torch.Generator()
    g.manual_seed(11)
    theirs = [b.tolist() for b in torch.utils.data.DataLoader(list(range(n)), generator=g, **kw)]
    g.manual_seed(11)
    with DataLoader(SyntheticDataset(n), generator=g, in_order=in_order, **kw) as loader:
        ours = _native_batches(loader)
    if in_order:
        assert ours == theirs
    else:
        assert sorted(sum(ours, [])) == sorted(sum(theirs, []))


def test_getitems_is_used_by_workers() -> None:
    """torch's workers call __getitems__ when the dataset has it; ours call it
    with one index at a time: the data is torch's."""
    theirs = _rows(list(torch.utils.data.DataLoader(WithGetitems(), batch_size=4, num_workers=2)))
    assert _rows(list(DataLoader(WithGetitems(), batch_size=4, num_workers=2))) == theirs == [[0, 10, 20, 30], [40, 50]]
