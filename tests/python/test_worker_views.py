"""Tensors that share a storage, nested tensors and __getitems__ through the
Python workers, each against what torch's own DataLoader (num_workers=2)
does with the same dataset."""

from __future__ import annotations

import os
import warnings

import pytest
import torch

from minatoloader import DataLoader
from minatoloader._shm import ArenaView, WorkerArena, create_arena

warnings.filterwarnings("ignore", message=".*nested tensors is in prototype.*")


class Views(torch.utils.data.Dataset):  # type: ignore[type-arg]
    """Views of one storage, of two dtypes, with offsets and strides."""

    def __len__(self) -> int:
        return 4

    def __getitem__(self, i: int) -> dict:
        t = torch.arange(12, dtype=torch.float32) + 100 * i
        other = torch.full((3,), float(i))
        return {
            "a": t,
            "b": t.view(3, 4),
            "c": t[1:],
            "d": t[::2],
            "e": t.view(3, 4).t(),
            "f": t.view(torch.int32)[5:7],
            "g": t[4:8].view(2, 2),
            "other": other,
            "other_again": other,
            "label": i,
        }


def _describe(s: dict) -> dict:
    """Each tensor's values, offset, strides and which storage it shares
    (the key of the first tensor on that storage)."""
    first: dict[int, str] = {}
    out = {}
    for k, v in s.items():
        if not isinstance(v, torch.Tensor):
            out[k] = v
            continue
        ptr = v.untyped_storage().data_ptr()
        owner = first.setdefault(ptr, k)
        # Offsets relative to the first tensor's: the region written may
        # start later in the storage than torch's whole storage does.
        out[k] = (v.tolist(), v.shape, v.stride(), owner, v.dtype)
    return out


def _loaders(ds: torch.utils.data.Dataset, **kw) -> tuple[list, list]:
    theirs = list(torch.utils.data.DataLoader(ds, num_workers=2, **kw))
    ours = list(DataLoader(ds, num_workers=2, **kw))
    return ours, theirs


def test_views_of_one_storage_stay_views_like_torch() -> None:
    ours, theirs = _loaders(Views(), batch_size=None)
    assert [_describe(s) for s in ours] == [_describe(s) for s in theirs]
    for s in ours + theirs:
        a = s["a"]
        base = a.storage_offset()
        assert s["c"].storage_offset() - base == 1 and s["g"].storage_offset() - base == 4
        assert s["other"] is s["other_again"]
        s["a"][2] = -1.0  # writing one shows in the others
        assert s["c"][1].item() == -1.0 and s["b"][0, 2].item() == -1.0 and s["d"][1].item() == -1.0
        assert s["e"][2, 0].item() == -1.0


def test_batched_views_collate_like_torch() -> None:
    ours, theirs = _loaders(Views(), batch_size=2)
    assert len(ours) == len(theirs) == 2
    for o, t in zip(ours, theirs):
        assert list(o) == list(t)
        for k in t:
            if isinstance(t[k], torch.Tensor):
                assert o[k].dtype == t[k].dtype and torch.equal(o[k], t[k]), k
            else:
                assert torch.equal(o[k], t[k])


def test_storage_views_in_the_codec_and_when_copied_out() -> None:
    """Both ways a block is loaded (viewed in place, copied out past half
    the arena) keep the views of one storage on one storage."""
    size = 1 << 20
    fd = create_arena(size)
    w, v = WorkerArena(os.getpid(), fd, size), ArenaView(fd, size)
    try:
        big = torch.arange(1000, dtype=torch.int64)
        sample = (big[10:20], big[15:30].view(3, 5), big[500:501].expand(4), torch.ones(2))
        kept = []
        for copy_limit in (size, 0):
            v.copy_limit = copy_limit
            out = v.load(*w.put(sample, tag=1), tag=1)
            assert [x.tolist() for x in out] == [x.tolist() for x in sample]
            assert out[0].untyped_storage().data_ptr() == out[1].untyped_storage().data_ptr() == out[2].untyped_storage().data_ptr()
            assert out[1].storage_offset() - out[0].storage_offset() == 5 and out[2].stride() == (0,)
            # Only the part of the storage the views cover travels.
            assert out[0].untyped_storage().nbytes() <= 8 * 500 + 16
            out[0][5] = -7
            assert out[1][0, 0].item() == -7
            kept.append(out)
    finally:
        del kept
        v.close()
        w.close()
        os.close(fd)


class Nested(torch.utils.data.Dataset):  # type: ignore[type-arg]
    def __init__(self, layout: torch.layout) -> None:
        self.layout = layout

    def __len__(self) -> int:
        return 3

    def __getitem__(self, i: int) -> tuple:
        parts = [torch.arange(2.0) + i, torch.full((i + 1,), float(i))]
        return torch.nested.nested_tensor(parts, layout=self.layout), torch.tensor(i)


@pytest.mark.parametrize("layout", [torch.strided, torch.jagged], ids=str)
def test_nested_tensors_travel_like_torch(layout: torch.layout) -> None:
    ours, theirs = _loaders(Nested(layout), batch_size=None)
    assert len(ours) == len(theirs) == 3
    for (on, oi), (tn, ti) in zip(ours, theirs):
        assert type(on) is type(tn) and on.is_nested and on.layout == tn.layout == layout
        assert [c.tolist() for c in on.unbind()] == [c.tolist() for c in tn.unbind()]
        assert torch.equal(oi, ti)


def test_nested_tensors_fail_to_collate_like_torch() -> None:
    with pytest.raises(RuntimeError) as theirs:
        list(torch.utils.data.DataLoader(Nested(torch.strided), batch_size=2, num_workers=2))
    with pytest.raises(RuntimeError) as ours:
        list(DataLoader(Nested(torch.strided), batch_size=2, num_workers=2))
    # torch collates in its worker, ours in the main process: the same
    # collate error (torch.stack of nested tensors) either way.
    last = str(theirs.value).strip().splitlines()[-1]
    assert last.split(":", 1)[1].strip() in str(ours.value)


class OnlyGetitems(torch.utils.data.Dataset):  # type: ignore[type-arg]
    def __len__(self) -> int:
        return 5

    def __getitem__(self, i: int) -> torch.Tensor:
        return torch.tensor([-1.0])  # torch's batched fetcher never calls this

    def __getitems__(self, indices: list[int]) -> list:
        return [torch.tensor([float(i), 2.0 * i]) for i in indices]


def test_getitems_like_torch() -> None:
    ours, theirs = _loaders(OnlyGetitems(), batch_size=2)
    assert [b.tolist() for b in ours] == [b.tolist() for b in theirs] == [
        [[0.0, 0.0], [1.0, 2.0]], [[2.0, 4.0], [3.0, 6.0]], [[4.0, 8.0]]
    ]
