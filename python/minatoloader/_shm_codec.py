"""The sample codec of the worker arenas (docs/worker-protocol.md, "Arena
blocks"): the worker side pickles a sample with every numpy array and torch
tensor replaced by a persistent id (:func:`encode`, :func:`write_payload`);
the main process unpickles a block's payload with arrays and tensors built
over the shared memory, or copied out of it (:func:`decode`). The arena
allocator and the views live in _shm.

Tensors that view one storage (``(t, t[1:])``, ``{"a": t, "b": t.view(-1)}``)
arrive as views of one storage, as with torch's DataLoader: the part of the
storage they cover is written once and each of them is rebuilt with its own
offset, shape and strides. Nested tensors travel as their components (their
own pickling, with the components out of band).

This module must never load the Go library (a forked worker imports it).
numpy is required; torch is imported only when a tensor is met.
"""

from __future__ import annotations

import ctypes
import io
import pickle
import struct
import sys
from typing import Any

import numpy as np

HEADER = 64
ALIGN = 64
PICKLE_AT = 8  # the pickle follows its u64 length in the payload
LEN_FMT = "<Q"

KIND_NUMPY = "nd"  # (kind, dtype str, shape, data offset, nbytes): a C-contiguous array
KIND_TORCH = "pt"  # (kind, dtype name, shape, data offset, nbytes): a C-contiguous tensor
# (kind, dtype name, shape, data offset, nbytes, storage offset, strides): a
# view of the storage region written at data offset (nbytes bytes), shared by
# every "ps" id with the same data offset; storage offset and strides in
# elements, the offset from that region's start.
KIND_STORAGE_VIEW = "ps"


def align(n: int) -> int:
    return (n + ALIGN - 1) & ~(ALIGN - 1)


def torch_dtype_name(dtype: Any) -> str:
    name = str(dtype)
    return name[6:] if name.startswith("torch.") else name


# Types pickled as they are, checked first (the isinstance test for tensors
# is slow and persistent_id sees every object).
_PLAIN = frozenset({str, int, float, bool, bytes, type(None), tuple, list, dict, complex})

# torch dtypes whose bytes are written through numpy (cheaper for small
# tensors than torch views); the others (bfloat16, float8...) through torch.
_NUMPY_TORCH_DTYPES = frozenset(
    {"bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64", "complex64", "complex128"}
)


class _ArenaPickler(pickle.Pickler):
    """Pickles a sample with arrays and tensors out of band: each becomes a
    persistent id whose data offset is ``base`` plus the array's place in the
    array region. Conversions are shared between passes (``state``) so a
    second pass with another base sees the same arrays in the same places."""

    def __init__(self, file: io.BytesIO, base: int, state: EncodeState) -> None:
        super().__init__(file, protocol=5)
        self._base = base
        self._state = state

    def persistent_id(self, obj: Any) -> Any:  # noqa: D102 - pickle hook
        t = type(obj)
        if t in _PLAIN:
            return None
        if t is np.ndarray or t is np.memmap:
            dtype = obj.dtype
            if dtype.hasobject or dtype.fields is not None:
                return None  # pickled in band
            e = self._state.entry(obj, KIND_NUMPY)
        else:
            torch = self._state.torch
            if torch is None or not isinstance(obj, torch.Tensor):
                return None
            if obj.is_nested:
                return None  # its own reduction, with its component tensors out of band
            e = self._state.entry(obj, KIND_TORCH)
        return (e[0], e[1], e[2], self._base + e[3]) + e[4:]


def _span(t: Any) -> tuple[int, int]:
    """The bytes [lo, hi) of its storage that tensor ``t`` (numel > 0) covers."""
    el = t.element_size()
    last = t.storage_offset()
    for n, s in zip(t.shape, t.stride()):
        last += (n - 1) * s
    return t.storage_offset() * el, (last + 1) * el


class EncodeState:
    """The arrays of one sample being encoded: their descriptions, sources
    and places (relative to the start of the array region).

    A first pass writes each tensor densely and notes the storages met; when
    two tensors share one (``shared``), :meth:`plan_shared` lays those
    storages out and the caller pickles again: the tensors of a shared
    storage then become views ("ps") of one region covering them all."""

    __slots__ = ("by_id", "items", "end", "torch", "storages", "shared", "plan", "regions")

    def __init__(self) -> None:
        self.by_id: dict[int, tuple[Any, ...]] = {}
        # (relative offset, nbytes, kind, source), in layout order; the
        # sources keep every id in by_id valid. kind "raw": source is
        # (storage, lo) and nbytes bytes of it from lo are written.
        self.items: list[tuple[int, int, str, Any]] = []
        self.end = 0
        self.torch = sys.modules.get("torch")
        self.storages: dict[int, list[Any]] = {}  # storage data_ptr -> the tensors (detached, cpu) met on it
        self.shared = False
        self.plan: dict[int, tuple[int, int]] | None = None  # storage data_ptr -> (lo, hi) bytes
        self.regions: dict[int, int] = {}  # storage data_ptr -> relative offset of its region

    def reset(self) -> None:
        self.by_id.clear()
        self.items.clear()
        self.end = 0

    def plan_shared(self) -> None:
        """Lays out the storages that more than one tensor views."""
        plan = {}
        for key, ts in self.storages.items():
            if len(ts) > 1:
                spans = [_span(t) for t in ts]
                plan[key] = (min(lo for lo, _ in spans) & ~15, max(hi for _, hi in spans))
        self.plan = plan
        self.storages = {}
        self.reset()

    def entry(self, obj: Any, kind: str) -> tuple[Any, ...]:
        e = self.by_id.get(id(obj))
        if e is not None:
            return e
        if kind == KIND_NUMPY:
            src = obj
            dtype_name = obj.dtype.str
            shape = tuple(int(d) for d in obj.shape)
            nbytes = int(obj.nbytes)
        else:
            src = self._check_tensor(obj)
            dtype_name = torch_dtype_name(src.dtype)
            shape = tuple(int(d) for d in src.shape)
            nbytes = int(src.numel()) * int(src.element_size())
            if nbytes and not (src.is_conj() or src.is_neg()):
                e = self._storage_entry(src, dtype_name, shape)
        if e is None:
            rel = self.end
            self.end = align(rel + nbytes)
            e = (kind, dtype_name, shape, rel, nbytes)
            self.items.append((rel, nbytes, kind, src))
        self.by_id[id(obj)] = e
        self.items.append((0, 0, "", obj))  # keeps id(obj) valid
        if src is not obj:
            self.items.append((0, 0, "", src))
        return e

    def _storage_entry(self, t: Any, dtype_name: str, shape: tuple[int, ...]) -> tuple[Any, ...] | None:
        st = t.untyped_storage()
        key = st.data_ptr()
        plan = self.plan
        if plan is None:  # first pass: note the storage
            ts = self.storages.get(key)
            if ts is None:
                self.storages[key] = [t]
            elif all(u is not t for u in ts):
                ts.append(t)
                self.shared = True
            return None
        span = plan.get(key)
        if span is None:
            return None
        lo, hi = span
        t_lo, t_hi = _span(t)
        el = t.element_size()
        if t_lo < lo or t_hi > hi or (t_lo - lo) % el:  # not met in the first pass: dense
            return None
        rel = self.regions.get(key)
        if rel is None:
            rel = self.regions[key] = self.end
            self.end = align(rel + hi - lo)
            self.items.append((rel, hi - lo, "raw", (st, lo)))
        strides = tuple(int(s) for s in t.stride())
        return (KIND_STORAGE_VIEW, dtype_name, shape, rel, hi - lo, (t_lo - lo) // el, strides)

    def _check_tensor(self, t: Any) -> Any:
        torch = self.torch
        kind = f"{type(t).__module__}.{type(t).__qualname__}"
        if t.layout != torch.strided:
            raise TypeError(
                f"a worker cannot send a {kind} with layout {t.layout} (only strided, dense and nested "
                "tensors travel through the worker arena); convert it in the dataset, e.g. with .to_dense()"
            )
        if t.is_quantized:
            raise TypeError(f"a worker cannot send a quantized tensor ({kind}, {t.dtype}); dequantize it first")
        t = t.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        return t


def encode(obj: Any, hint: int) -> tuple[io.BytesIO, int, EncodeState, int]:
    """Pickles ``obj`` for a block: (pickle, its length, the arrays, the
    offset of the array region in the payload). ``hint`` is the first guess
    of that offset."""
    state = EncodeState()
    base = hint
    while True:
        buf = io.BytesIO()
        _ArenaPickler(buf, base, state).dump(obj)
        plen = buf.tell()
        if state.shared and state.plan is None:
            state.plan_shared()
            continue
        if not state.items or PICKLE_AT + plen <= base:
            return buf, plen, state, base
        # A larger base can lengthen the offsets' encodings (at most 8 bytes
        # each) and add frame headers (9 bytes per 64 KiB).
        n = len(state.by_id)
        base = align(PICKLE_AT + plen + 8 * n + 9 * (plen // 65536 + 2))


def write_payload(
    arena: Any, p: int, buf: io.BytesIO, plen: int, state: EncodeState, base: int
) -> None:
    """Writes the pickle and the arrays at payload offset ``p`` of ``arena``
    (a WorkerArena: its _mm, _mv, _np and lazily _tb)."""
    struct.pack_into(LEN_FMT, arena._mm, p, plen)
    with buf.getbuffer() as data:
        arena._mv[p + PICKLE_AT : p + PICKLE_AT + plen] = data
    for rel, nbytes, kind, src in state.items:
        if nbytes:
            _write_array(arena, p + base + rel, nbytes, kind, src)


def _write_array(arena: Any, at: int, nbytes: int, kind: str, src: Any) -> None:
    if kind == KIND_NUMPY:
        dst = arena._np[at : at + nbytes].view(src.dtype).reshape(src.shape)
        np.copyto(dst, src, casting="no")
        return
    torch = sys.modules["torch"]
    if kind == "raw":
        st, lo = src
        b = torch.empty(0, dtype=torch.uint8).set_(st, lo, (nbytes,), (1,))
        np.copyto(arena._np[at : at + nbytes], b.numpy(), casting="no")
        return
    if torch_dtype_name(src.dtype) in _NUMPY_TORCH_DTYPES and not (src.is_conj() or src.is_neg()):
        a = src.numpy()
        dst = arena._np[at : at + nbytes].view(a.dtype).reshape(a.shape)
        np.copyto(dst, a, casting="no")
        return
    if arena._tb is None:
        arena._tb = torch.frombuffer(arena._mm, dtype=torch.uint8)
    dst = arena._tb[at : at + nbytes].view(src.dtype).view(src.shape)
    with torch.no_grad():
        dst.copy_(src)


class _Decoder:
    """The persistent_load of one block; arrays and tensors view ``owner``
    (a ctypes array over the payload, made on the first array: numpy and
    torch keep the exporting object itself alive, not a memoryview slice), or with ``copy``
    are copies of their bytes (the block is then not referenced). Not the
    unpickler itself: a method of the unpickler would hold it in a cycle,
    and the block would then be given back only at a cyclic collection."""

    __slots__ = ("mm", "mv", "p", "length", "copy", "owner", "made", "storages")

    def __init__(self, mm: Any, mv: memoryview, p: int, length: int, copy: bool) -> None:
        self.mm = mm
        self.mv = mv
        self.p = p
        self.length = length
        self.copy = copy
        self.owner: Any = None
        self.made: dict[tuple[Any, ...], Any] = {}
        self.storages: dict[int, Any] = {}

    def _owner(self) -> Any:
        if self.owner is None:
            self.owner = (ctypes.c_char * self.length).from_buffer(self.mm, self.p)
        return self.owner

    def __call__(self, pid: Any) -> Any:
        try:
            kind, dtype_name, shape, data_off, nbytes = pid[:5]
            key = tuple(pid)
        except (TypeError, ValueError):
            raise pickle.UnpicklingError(f"unknown persistent id {pid!r}") from None
        made = self.made.get(key)
        if made is not None:
            return made
        if data_off < 0 or nbytes < 0 or data_off + nbytes > self.length:
            raise pickle.UnpicklingError(f"array at {data_off}+{nbytes} outside the payload of {self.length} bytes")
        if kind == KIND_NUMPY:
            dtype = np.dtype(dtype_name)
            if nbytes == 0:
                made = np.empty(shape, dtype)
            elif self.copy:
                made = np.empty(shape, dtype)
                self._copy_into(made.reshape(-1).view(np.uint8), data_off, nbytes)
            else:
                made = np.frombuffer(self._owner(), dtype, nbytes // dtype.itemsize, data_off).reshape(shape)
        elif kind == KIND_TORCH or kind == KIND_STORAGE_VIEW:
            import torch

            dtype = getattr(torch, dtype_name, None)
            if not isinstance(dtype, torch.dtype):
                raise pickle.UnpicklingError(f"unknown torch dtype {dtype_name!r}")
            if kind == KIND_STORAGE_VIEW:
                made = self._storage_view(torch, dtype, shape, data_off, nbytes, pid[5], pid[6])
            elif nbytes == 0:
                made = torch.empty(shape, dtype=dtype)
            elif self.copy:
                made = torch.empty(shape, dtype=dtype)
                self._copy_into(made.reshape(-1).view(torch.uint8).numpy(), data_off, nbytes)
            else:
                made = torch.frombuffer(
                    self._owner(), dtype=dtype, count=nbytes // dtype.itemsize, offset=data_off
                ).view(shape)
        else:
            raise pickle.UnpicklingError(f"unknown persistent id kind {kind!r}")
        self.made[key] = made
        return made

    def _storage_view(self, torch: Any, dtype: Any, shape: Any, data_off: int, nbytes: int, off: int, strides: Any) -> Any:
        st = self.storages.get(data_off)
        if st is None:
            if self.copy:
                b = torch.empty(nbytes, dtype=torch.uint8)
                self._copy_into(b.numpy(), data_off, nbytes)
            else:
                b = torch.frombuffer(self._owner(), dtype=torch.uint8, count=nbytes, offset=data_off)
            st = self.storages[data_off] = b.untyped_storage()
        el = torch.empty((), dtype=dtype).element_size()
        last = off
        for n, s in zip(shape, strides):
            if n == 0:
                last = -1
                break
            last += (n - 1) * s
        if off < 0 or (last + 1) * el > st.nbytes() or any(s < 0 for s in strides):
            raise pickle.UnpicklingError(f"a view at {off} {tuple(shape)} {tuple(strides)} outside its storage")
        return torch.empty(0, dtype=dtype).set_(st, off, tuple(shape), tuple(strides))

    def _copy_into(self, dst: Any, data_off: int, nbytes: int) -> None:
        if dst.nbytes != nbytes:
            raise pickle.UnpicklingError(f"array of {dst.nbytes} bytes described as {nbytes}")
        src = np.frombuffer(self.mv, np.uint8, nbytes, self.p + data_off)
        np.copyto(dst, src)
        del src


def decode(mm: Any, mv: memoryview, p: int, length: int, plen: int, copy: bool) -> tuple[Any, Any]:
    """Unpickles the payload at ``p`` of the mapping ``mm`` (``mv`` a
    memoryview of it; ``length`` bytes, a pickle of ``plen``): (the sample,
    the object its arrays view, None if none does)."""
    d = _Decoder(mm, mv, p, length, copy)
    u = pickle.Unpickler(io.BytesIO(mv[p + PICKLE_AT : p + PICKLE_AT + plen]))
    u.persistent_load = d
    try:
        obj = u.load()
    finally:
        owner, d.owner = d.owner, None
        d.made.clear()
        d.storages.clear()
        del u
    return obj, owner
