"""The worker arena codec (minatoloader._shm), both sides in one process."""

from __future__ import annotations

import dataclasses
import gc
import io
import mmap
import os
import pickle
import struct
from collections import namedtuple
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import torch

from minatoloader._shm import (
    ALIGN,
    DEFAULT_ARENA_BYTES,
    HEADER,
    ArenaFullError,
    ArenaView,
    WorkerArena,
    create_arena,
)

Point = namedtuple("Point", ["x", "y"])


@dataclasses.dataclass
class Record:
    name: str
    image: torch.Tensor
    extra: dict


class Arena:
    """Both ends of one arena plus a raw mapping to read headers."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.fd = create_arena(size)
        self.worker = WorkerArena(os.getpid(), self.fd, size)
        self.view = ArenaView(self.fd, size)
        self.raw = mmap.mmap(self.fd, size)

    def roundtrip(self, obj: Any) -> Any:
        return self.view.load(*self.worker.put(obj))

    def state(self, offset: int) -> int:
        return struct.unpack_from("<I", self.raw, offset)[0]

    def close(self) -> None:
        self.view.close()
        self.worker.close()
        self.raw.close()
        os.close(self.fd)


@pytest.fixture
def arena() -> Iterator[Arena]:
    a = Arena(16 << 20)
    try:
        yield a
    finally:
        gc.collect()
        a.close()


def assert_same(a: Any, b: Any) -> None:
    """Exact equality: types, dtypes, shapes, bytes."""
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()
    elif isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert not b.requires_grad
        x, y = a.detach().contiguous().reshape(-1), b.contiguous().reshape(-1)
        if x.numel():
            assert torch.equal(x.view(torch.uint8), y.view(torch.uint8))
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            assert_same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert_same(x, y)
    elif dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            assert_same(getattr(a, f.name), getattr(b, f.name))
    else:
        assert a == b


NUMPY_DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
                "float16", "float32", "float64", "complex64", "complex128", ">i4", "<U3", "S5", "M8[ns]"]


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
def test_numpy_dtypes(arena: Arena, dtype: str) -> None:
    rng = np.random.default_rng(0)
    base = rng.integers(0, 100, size=(3, 5))
    a = base.astype(dtype)
    out = arena.roundtrip({"a": a, "scalar": a[1, 2], "zero_d": np.array(a[0, 0]), "empty": a[:0]})
    assert_same({"a": a, "scalar": a[1, 2], "zero_d": np.array(a[0, 0]), "empty": a[:0]}, out)
    assert out["a"].flags.c_contiguous and out["a"].flags.writeable
    assert out["zero_d"].shape == ()


def test_numpy_layouts(arena: Arena) -> None:
    a = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    sample = [a[:, ::2, 1:], np.asfortranarray(a), a.T, a[::-1], np.zeros((0, 7), np.int64)]
    out = arena.roundtrip(sample)
    assert_same(sample, out)
    for x in out:
        assert x.flags.c_contiguous


TORCH_DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
                torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.uint16, torch.float8_e4m3fn]


@pytest.mark.parametrize("dtype", TORCH_DTYPES, ids=str)
def test_torch_dtypes(arena: Arena, dtype: torch.dtype) -> None:
    t = torch.randint(0, 3, (4, 6)).to(dtype)
    sample = (t, t.t(), t[:, 1::2], t[0, 0].clone(), t[:0])
    out = arena.roundtrip(sample)
    assert_same(sample, out)
    assert out[3].shape == ()


def test_torch_special_tensors(arena: Arena) -> None:
    g = torch.randn(3, 4, requires_grad=True)
    nonleaf = g * 2
    c = torch.randn(5, dtype=torch.complex64).conj()
    sample = {"leaf": g, "nonleaf": nonleaf, "conj": c, "param": torch.nn.Parameter(torch.ones(2))}
    out = arena.roundtrip(sample)
    assert torch.equal(out["leaf"], g.detach()) and not out["leaf"].requires_grad
    assert torch.equal(out["nonleaf"], nonleaf.detach())
    assert torch.equal(out["conj"], c.resolve_conj()) and not out["conj"].is_conj()
    assert type(out["param"]) is torch.Tensor and torch.equal(out["param"], torch.ones(2))


def test_nested_structures(arena: Arena) -> None:
    img = torch.arange(12, dtype=torch.uint8).reshape(3, 4)
    sample = {
        "str": "héllo",
        "bytes": b"\x00\x01",
        "int": 1 << 70,
        "float": 1.5,
        "none": None,
        "point": Point(np.float32(2.5), torch.tensor([1.0, 2.0])),
        "list": [np.arange(3), (torch.zeros(2, 2), {"deep": np.ones((2, 2), np.float16)})],
        "record": Record("r", img, {"mask": img > 5}),
    }
    out = arena.roundtrip(sample)
    assert_same(sample, out)
    assert isinstance(out["point"], Point)


def test_same_array_twice_is_one_object(arena: Arena) -> None:
    a = np.arange(4)
    t = torch.arange(3)
    out = arena.roundtrip([a, a, t, t])
    assert out[0] is out[1] and out[2] is out[3]


def test_block_layout_follows_the_protocol(arena: Arena) -> None:
    """Header and payload exactly as docs/worker-protocol.md describes, and
    every array 64-aligned in memory."""
    sample = {"name": "x" * 5000, "a": np.arange(10, dtype=np.int16), "t": torch.ones(3, dtype=torch.bfloat16)}
    off, length = arena.worker.put(sample)
    assert off % ALIGN == 0
    state, zero, block_size, payload_len = struct.unpack_from("<IIQQ", arena.raw, off)
    assert (state, zero, payload_len) == (1, 0, length)
    assert block_size == (HEADER + length + ALIGN - 1) // ALIGN * ALIGN
    p = off + HEADER
    (plen,) = struct.unpack_from("<Q", arena.raw, p)
    ids = []

    class Reader(pickle.Unpickler):
        def persistent_load(self, pid: Any) -> Any:
            ids.append(pid)
            return None

    Reader(io.BytesIO(arena.raw[p + 8 : p + 8 + plen])).load()
    assert sorted(i[0] for i in ids) == ["nd", "pt"]
    for kind, dtype, shape, data_off, nbytes in ids:
        assert data_off % ALIGN == 0 and data_off >= 8 + plen and data_off + nbytes <= length
        assert isinstance(dtype, str) and isinstance(shape, tuple)
    nd = next(i for i in ids if i[0] == "nd")
    pt = next(i for i in ids if i[0] == "pt")
    assert nd[1:3] == ("<i2", (10,)) and nd[4] == 20
    assert pt[1:3] == ("bfloat16", (3,)) and pt[4] == 6
    out = arena.view.load(off, length)
    assert out["a"].ctypes.data % ALIGN == 0 and out["t"].data_ptr() % ALIGN == 0


def test_release_after_last_view(arena: Arena) -> None:
    off, length = arena.worker.put({"t": torch.arange(10), "a": np.arange(5)})
    out = arena.view.load(off, length)
    assert arena.state(off) == 1 and arena.view.live_blocks() == 1
    t, a = out["t"], out["a"]
    del out
    gc.collect()
    assert arena.state(off) == 1
    del t
    gc.collect()
    assert arena.state(off) == 1
    del a
    gc.collect()
    assert arena.state(off) == 0 and arena.view.live_blocks() == 0


def test_view_of_a_view_keeps_the_block(arena: Arena) -> None:
    off, length = arena.worker.put((torch.arange(10), np.arange(8)))
    t, a = arena.view.load(off, length)
    v = t[2:][::2].view(1, -1)
    n = torch.from_numpy(a.reshape(2, 4)[:, 1:])
    del t, a
    gc.collect()
    assert arena.state(off) == 1
    assert v.tolist() == [[2, 4, 6, 8]] and n.tolist() == [[1, 2, 3], [5, 6, 7]]
    del v
    gc.collect()
    assert arena.state(off) == 1
    del n
    gc.collect()
    assert arena.state(off) == 0


def test_sample_without_arrays_is_released_at_once(arena: Arena) -> None:
    for sample in ({"label": 3, "text": "abc"}, [np.zeros(0), torch.empty(0, 3)]):
        off, length = arena.worker.put(sample)
        out = arena.view.load(off, length)
        assert_same(sample, out)
        assert arena.state(off) == 0 and arena.view.live_blocks() == 0


def test_explicit_release(arena: Arena) -> None:
    off, _ = arena.worker.put(np.arange(100))
    assert arena.state(off) == 1
    arena.view.release(off)  # never loaded
    assert arena.state(off) == 0
    off2, length = arena.worker.put(np.arange(100))
    assert off2 == off
    out = arena.view.load(off2, length)
    arena.view.release(off2)
    assert arena.state(off2) == 0 and arena.view.live_blocks() == 0
    off3, _ = arena.worker.put(np.arange(3))  # reuses the block
    assert off3 == off2
    del out  # the detached finalizer must not free the reused block
    gc.collect()
    assert arena.state(off3) == 1


def test_close_with_live_arrays(arena: Arena) -> None:
    off, length = arena.worker.put(torch.arange(10))
    t = arena.view.load(off, length)
    arena.view.close()  # must not raise although t views the mapping
    assert t.sum().item() == 45
    with pytest.raises(ValueError):
        arena.view.load(off, length)
    del t
    gc.collect()  # the finalizer runs after close without raising
    assert arena.state(off) == 0


def test_first_fit_reuses_low_offsets(arena: Arena) -> None:
    blocks = [arena.worker.put(np.zeros(1000 * (i + 1), np.uint8)) for i in range(4)]
    assert [b[0] for b in blocks] == sorted(b[0] for b in blocks)
    arena.view.release(blocks[0][0])
    arena.view.release(blocks[2][0])
    off, _ = arena.worker.put(np.zeros(500, np.uint8))
    assert off == blocks[0][0] == 0
    off, _ = arena.worker.put(np.zeros(2500, np.uint8))
    assert off == blocks[2][0]


def test_touched_extent_stays_bounded(arena: Arena) -> None:
    rng = np.random.default_rng(1)
    live: list[Any] = []
    extent = 0
    biggest = 0
    for i in range(1000):
        n = int(rng.integers(1, 20000))
        off, length = arena.worker.put({"i": i, "x": torch.full((n,), i % 7, dtype=torch.uint8), "s": "s" * (i % 300)})
        biggest = max(biggest, HEADER + length)
        extent = max(extent, off + HEADER + length)
        live.append(arena.view.load(off, length))
        if len(live) > 4:
            old = live.pop(int(rng.integers(0, len(live))))
            assert int(old["x"][0]) == old["i"] % 7
            del old
    assert extent <= 12 * biggest, (extent, biggest)
    del live
    gc.collect()
    assert arena.view.live_blocks() == 0 and arena.worker.live_blocks() == []


def test_arena_full_error() -> None:
    a = Arena(1 << 20)
    try:
        with pytest.raises(ArenaFullError) as info:
            a.worker.put(np.zeros(2 << 20, np.uint8), "sample 7")
        assert isinstance(info.value, MemoryError)
        msg = str(info.value)
        assert "sample 7" in msg and "larger than the arena" in msg and str(1 << 20) in msg
        held = [a.worker.put(np.zeros(300_000, np.uint8)) for _ in range(3)]
        with pytest.raises(ArenaFullError) as info:
            a.worker.put(np.zeros(300_000, np.uint8))
        held_bytes = sum(((HEADER + n + ALIGN - 1) // ALIGN * ALIGN) for _, n in held)
        assert f"{held_bytes} of them in 3 blocks" in str(info.value)
        a.view.release(held[1][0])
        assert a.worker.put(np.zeros(300_000, np.uint8))[0] == held[1][0]
    finally:
        a.close()


def test_sparse_tensor_is_a_type_error(arena: Arena) -> None:
    with pytest.raises(TypeError, match="sparse"):
        arena.worker.put({"x": torch.eye(3).to_sparse()})
    assert arena.worker.live_blocks() == []


def test_unpicklable_sample_leaves_no_block(arena: Arena) -> None:
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        arena.worker.put([np.arange(3), lambda: 0])
    assert arena.worker.live_blocks() == []


def test_default_size_is_address_space_only() -> None:
    fd = create_arena()
    try:
        assert os.fstat(fd).st_size == DEFAULT_ARENA_BYTES
        assert os.fstat(fd).st_blocks == 0
    finally:
        os.close(fd)
