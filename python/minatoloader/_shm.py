"""The worker arenas: shared-memory blocks that carry samples from Python
worker processes to the main process without copying array data through a
pipe. The format is docs/worker-protocol.md ("Arena blocks").

A worker (:class:`WorkerArena`) pickles a sample with every numpy array and
torch tensor replaced by a persistent id, and writes the pickle and the
arrays' bytes into a block of its arena. The main process
(:class:`ArenaView`) unpickles the block with arrays and tensors built over
the shared memory itself; the block goes back to the worker when the last of
them is garbage.

This module must never load the Go library (a forked worker imports it).
numpy is required; torch is imported only when a tensor is met.
"""

from __future__ import annotations

import ctypes
import fcntl
import io
import mmap
import os
import pickle
import struct
import sys
import weakref
from bisect import insort
from collections import deque
from typing import Any

import numpy as np

__all__ = [
    "ALIGN",
    "DEFAULT_ARENA_BYTES",
    "HEADER",
    "ArenaFullError",
    "ArenaView",
    "WorkerArena",
    "create_arena",
]

HEADER = 64
ALIGN = 64
DEFAULT_ARENA_BYTES = 1 << 30

# Block header: state (1 in use, 0 free), 0, block size (header included),
# payload length.
_HEADER_FMT = "<IIQQ"
_STATE_FMT = "<I"
_LEN_FMT = "<Q"
_PICKLE_AT = 8  # the pickle follows its u64 length in the payload

_KIND_NUMPY = "nd"
_KIND_TORCH = "pt"


class ArenaFullError(MemoryError):
    """A sample does not fit in its worker's arena (larger than the arena, or
    the arena is held by samples the main process has not released)."""


def _align(n: int) -> int:
    return (n + ALIGN - 1) & ~(ALIGN - 1)


# Seals of an arena: it can never shrink (a mapping's pages past the new end
# would raise SIGBUS in the main process and in Go on the next touch), and
# no further seal can be added (one that forbids writing would make Go's
# mapping fail).
_SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL


def create_arena(size: int = DEFAULT_ARENA_BYTES) -> int:
    """Creates a memfd of ``size`` bytes (address space only: pages cost
    memory once touched), sealed against shrinking, and returns its fd.
    Close-on-exec: a worker opens it as ``/proc/<parent pid>/fd/<fd>``; an
    ``ftruncate`` to a smaller size fails with EPERM there too."""
    if size < HEADER + ALIGN:
        raise ValueError(f"arena size {size} is below the minimum of {HEADER + ALIGN} bytes")
    fd = os.memfd_create("minatoloader-arena", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        os.ftruncate(fd, size)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, _SEALS)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _torch_dtype_name(dtype: Any) -> str:
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
    array region. Conversions are shared between passes (``entries``) so a
    second pass with another base sees the same arrays in the same places."""

    def __init__(self, file: io.BytesIO, base: int, state: _EncodeState) -> None:
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
            entry = self._state.entry(obj, _KIND_NUMPY)
        else:
            torch = self._state.torch
            if torch is None or not isinstance(obj, torch.Tensor):
                return None
            entry = self._state.entry(obj, _KIND_TORCH)
        kind, dtype_name, shape, rel, nbytes = entry
        return (kind, dtype_name, shape, self._base + rel, nbytes)


class _EncodeState:
    """The arrays of one sample being encoded: their descriptions, sources
    and places (relative to the start of the array region)."""

    __slots__ = ("by_id", "items", "end", "torch")

    def __init__(self) -> None:
        self.by_id: dict[int, tuple[str, str, tuple[int, ...], int, int]] = {}
        # (relative offset, nbytes, kind, source), in layout order; the
        # sources keep every id in by_id valid.
        self.items: list[tuple[int, int, str, Any]] = []
        self.end = 0
        self.torch = sys.modules.get("torch")

    def entry(self, obj: Any, kind: str) -> tuple[str, str, tuple[int, ...], int, int]:
        e = self.by_id.get(id(obj))
        if e is not None:
            return e
        if kind == _KIND_NUMPY:
            src = obj
            dtype_name = obj.dtype.str
            shape = tuple(int(d) for d in obj.shape)
            nbytes = int(obj.nbytes)
        else:
            src = self._check_tensor(obj)
            dtype_name = _torch_dtype_name(src.dtype)
            shape = tuple(int(d) for d in src.shape)
            nbytes = int(src.numel()) * int(src.element_size())
        rel = self.end
        self.end = _align(rel + nbytes)
        e = (kind, dtype_name, shape, rel, nbytes)
        self.by_id[id(obj)] = e
        self.items.append((rel, nbytes, kind, src))
        if src is not obj:
            self.items.append((0, 0, "", obj))  # keeps id(obj) valid
        return e

    def _check_tensor(self, t: Any) -> Any:
        torch = self.torch
        kind = f"{type(t).__module__}.{type(t).__qualname__}"
        if t.layout != torch.strided:
            raise TypeError(
                f"a worker cannot send a {kind} with layout {t.layout} (only strided, dense tensors "
                "travel through the worker arena); convert it in the dataset, e.g. with .to_dense()"
            )
        if t.is_nested:
            raise TypeError(f"a worker cannot send a nested tensor ({kind}); return its components instead")
        if t.is_quantized:
            raise TypeError(f"a worker cannot send a quantized tensor ({kind}, {t.dtype}); dequantize it first")
        t = t.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        return t


class WorkerArena:
    """A worker's side of its arena: allocates blocks and writes samples."""

    def __init__(self, parent_pid: int, fd: int, size: int) -> None:
        path = f"/proc/{parent_pid}/fd/{fd}"
        f = os.open(path, os.O_RDWR | os.O_CLOEXEC)
        try:
            self._mm: mmap.mmap | None = mmap.mmap(f, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        finally:
            os.close(f)
        self.size = size
        self._mv = memoryview(self._mm)
        self._np = np.frombuffer(self._mm, np.uint8)
        self._tb: Any = None  # torch.uint8 view of the arena, made on the first tensor
        self._blocks: list[tuple[int, int]] = []  # live (offset, size), sorted
        self._hint = _align(_PICKLE_AT + 256)  # where the arrays start, guessed from the last sample

    # --- allocation ---------------------------------------------------------

    def _reclaim(self) -> None:
        mm = self._mm
        unpack = struct.unpack_from
        self._blocks = [b for b in self._blocks if unpack(_STATE_FMT, mm, b[0])[0] != 0]

    def held_bytes(self) -> int:
        """Bytes held by blocks the main process has not released (after
        reclaiming the released ones)."""
        self._reclaim()
        return sum(s for _, s in self._blocks)

    def live_blocks(self) -> list[tuple[int, int]]:
        """The (offset, size) of the blocks not yet released, lowest first."""
        self._reclaim()
        return list(self._blocks)

    def _allocate(self, need: int, what: str) -> int:
        self._reclaim()
        prev_end = 0
        for off, sz in self._blocks:
            if off - prev_end >= need:
                break
            prev_end = off + sz
        else:
            if self.size - prev_end < need:
                held = sum(s for _, s in self._blocks)
                if need > self.size:
                    why = "larger than the arena"
                else:
                    why = "does not fit next to the samples the main process still holds"
                raise ArenaFullError(
                    f"{what} needs {need} bytes of the worker arena and {why}: the arena holds "
                    f"{self.size} bytes, {held} of them in {len(self._blocks)} blocks not yet released"
                )
        insort(self._blocks, (prev_end, need))
        return prev_end

    # --- writing ------------------------------------------------------------

    def put(self, obj: Any, what: str = "the sample", tag: int = 0) -> tuple[int, int]:
        """Writes ``obj`` into a new block; returns (block offset, payload
        length). Raises ArenaFullError when it does not fit, TypeError for a
        tensor that cannot travel (sparse, nested, quantized), and whatever
        pickling raises."""
        if self._mm is None:
            raise ValueError("the arena is closed")
        state = _EncodeState()
        base = self._hint
        while True:
            buf = io.BytesIO()
            _ArenaPickler(buf, base, state).dump(obj)
            plen = buf.tell()
            if not state.items or _PICKLE_AT + plen <= base:
                break
            # A larger base can lengthen the offsets' encodings (at most
            # 8 bytes each) and add frame headers (9 bytes per 64 KiB).
            n = len(state.by_id)
            base = _align(_PICKLE_AT + plen + 8 * n + 9 * (plen // 65536 + 2))
        if state.items:
            payload = base + state.end
            self._hint = _align(_PICKLE_AT + plen + 16 * len(state.by_id) + 256)
        else:
            payload = _PICKLE_AT + plen
        need = _align(HEADER + payload)
        off = self._allocate(need, what)
        try:
            p = off + HEADER
            mm = self._mm
            struct.pack_into(_LEN_FMT, mm, p, plen)
            with buf.getbuffer() as data:
                self._mv[p + _PICKLE_AT : p + _PICKLE_AT + plen] = data
            for rel, nbytes, kind, src in state.items:
                if nbytes:
                    self._write_array(p + base + rel, nbytes, kind, src)
            struct.pack_into(_HEADER_FMT, mm, off, 1, tag & 0xFFFFFFFF, need, payload)
        except BaseException:
            self._blocks.remove((off, need))
            raise
        return off, payload

    def _write_array(self, at: int, nbytes: int, kind: str, src: Any) -> None:
        if kind == _KIND_NUMPY:
            dst = self._np[at : at + nbytes].view(src.dtype).reshape(src.shape)
            np.copyto(dst, src, casting="no")
            return
        if _torch_dtype_name(src.dtype) in _NUMPY_TORCH_DTYPES and not (src.is_conj() or src.is_neg()):
            a = src.numpy()
            dst = self._np[at : at + nbytes].view(a.dtype).reshape(a.shape)
            np.copyto(dst, a, casting="no")
            return
        torch = sys.modules["torch"]
        if self._tb is None:
            self._tb = torch.frombuffer(self._mm, dtype=torch.uint8)
        dst = self._tb[at : at + nbytes].view(src.dtype).view(src.shape)
        with torch.no_grad():
            dst.copy_(src)

    def close(self) -> None:
        """Unmaps the arena (the blocks stay valid for the main process)."""
        mm, self._mm = self._mm, None
        self._mv.release()
        self._np = self._tb = None
        if mm is not None:
            try:
                mm.close()
            except BufferError:
                pass


# Frees that found their block already given back and reused (counted; a
# free only ever clears the block it was made for).
stale_frees = 0


def _free_block(mm: mmap.mmap, offset: int, live: dict[int, Any], pid: int, tag: int | None, fin: Any) -> None:
    """Marks a block free (the finalizer of its owner); never raises. Only in
    the process that loaded it: a forked child (a worker started while this
    process held samples) inherits the owners, and its garbage collector
    must not free the parent's blocks through the shared mapping. Only if the
    header still carries the tag it was loaded with: a free that comes after
    the block was given back and reused must not release the new sample."""
    global stale_frees
    if os.getpid() != pid:
        return
    if live.get(offset) is fin[0]:
        del live[offset]
    try:
        state, btag = struct.unpack_from("<II", mm, offset)
        if state != 1 or (tag is not None and btag != tag & 0xFFFFFFFF):
            stale_frees += 1
            return
        struct.pack_into(_STATE_FMT, mm, offset, 0)
    except Exception:  # a closed mapping: nothing to give back to
        pass


class _BlockUnpickler(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, mm: mmap.mmap, offset: int, length: int) -> None:
        super().__init__(file)
        self._mm = mm
        self._offset = offset
        self._length = length
        self.owner: Any = None
        self._made: dict[tuple[Any, ...], Any] = {}

    def _owner(self) -> Any:
        if self.owner is None:
            self.owner = (ctypes.c_char * self._length).from_buffer(self._mm, self._offset + HEADER)
        return self.owner

    def persistent_load(self, pid: Any) -> Any:  # noqa: D102 - pickle hook
        try:
            kind, dtype_name, shape, data_off, nbytes = pid
            key = (kind, data_off, dtype_name, shape)
        except (TypeError, ValueError):
            raise pickle.UnpicklingError(f"unknown persistent id {pid!r}") from None
        made = self._made.get(key)
        if made is not None:
            return made
        if data_off < 0 or data_off + nbytes > self._length:
            raise pickle.UnpicklingError(f"array at {data_off}+{nbytes} outside the payload of {self._length} bytes")
        if kind == _KIND_NUMPY:
            dtype = np.dtype(dtype_name)
            if nbytes == 0:
                made = np.empty(shape, dtype)
            else:
                made = np.frombuffer(self._owner(), dtype, nbytes // dtype.itemsize, data_off).reshape(shape)
        elif kind == _KIND_TORCH:
            import torch

            dtype = getattr(torch, dtype_name, None)
            if not isinstance(dtype, torch.dtype):
                raise pickle.UnpicklingError(f"unknown torch dtype {dtype_name!r}")
            if nbytes == 0:
                made = torch.empty(shape, dtype=dtype)
            else:
                made = torch.frombuffer(
                    self._owner(), dtype=dtype, count=nbytes // dtype.itemsize, offset=data_off
                ).view(shape)
        else:
            raise pickle.UnpicklingError(f"unknown persistent id kind {kind!r}")
        self._made[key] = made
        return made


class ArenaView:
    """The main process's view of one worker's arena: unpickles blocks with
    arrays and tensors over the shared memory, and gives each block back when
    the last of them is garbage. ``fd`` may be closed after construction."""

    def __init__(self, fd: int, size: int) -> None:
        self._mm: mmap.mmap | None = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        self.size = size
        self._live: dict[int, weakref.finalize] = {}
        self._pid = os.getpid()
        self._history: dict[int, tuple[int | None, int]] = {}  # offset -> (tag, length) last loaded

    def load(self, offset: int, length: int, tag: int | None = None) -> Any:
        """The sample in the block at ``offset`` (payload ``length`` bytes)."""
        mm = self._mm
        if mm is None:
            raise ValueError("the arena view is closed")
        if offset < 0 or offset % ALIGN or length < _PICKLE_AT or offset + HEADER + length > self.size:
            raise ValueError(f"bad block: offset {offset}, payload length {length}, arena size {self.size}")
        state, btag, _, blen = struct.unpack_from(_HEADER_FMT, mm, offset)
        if state != 1 or blen != length or (tag is not None and btag != tag & 0xFFFFFFFF):
            raise RuntimeError(
                f"minatoloader: internal error: the arena block at {offset} is not the one replied "
                f"(state {state}, tag {btag} want {None if tag is None else tag & 0xFFFFFFFF}, "
                f"length {blen} want {length}); loaded here before: {self._history.get(offset)}"
            )
        self._history[offset] = (tag, length)
        p = offset + HEADER
        (plen,) = struct.unpack_from(_LEN_FMT, mm, p)
        if _PICKLE_AT + plen > length:
            raise ValueError(f"bad block at {offset}: pickle of {plen} bytes in a payload of {length}")
        u = _BlockUnpickler(io.BytesIO(mm[p + _PICKLE_AT : p + _PICKLE_AT + plen]), mm, offset, length)
        try:
            obj = u.load()
        finally:
            owner, u.owner = u.owner, None
            u._made.clear()
            # The C unpickler holds itself in a cycle (its persistent_load
            # bound method) and its memo holds the sample: clear the memo so
            # the block is given back when the caller drops the sample, not
            # at the next cyclic collection.
            u.memo.clear()
            if owner is None:
                struct.pack_into(_STATE_FMT, mm, offset, 0)
            else:
                old = self._live.pop(offset, None)
                if old is not None and old.detach() is not None:
                    # The worker reused a block that arrays here still view:
                    # those arrays now show another sample. Never expected.
                    raise RuntimeError(
                        f"minatoloader: internal error: the arena block at {offset} was reused while still in use"
                    )
                cell: list[Any] = [None]
                cell[0] = weakref.finalize(owner, _free_block, mm, offset, self._live, self._pid, tag, cell)
                self._live[offset] = cell[0]
                del owner
        return obj

    def release(self, offset: int) -> None:
        """Gives the block at ``offset`` back now, whether or not it was
        loaded (for a result that is dropped). Arrays still viewing it see
        whatever the worker writes there next."""
        fin = self._live.pop(offset, None)
        if fin is not None:
            fin.detach()
        mm = self._mm
        if mm is not None:
            struct.pack_into(_STATE_FMT, mm, offset, 0)

    def live_blocks(self) -> int:
        """How many loaded blocks are still viewed by arrays or tensors."""
        return len(self._live)

    def close(self) -> None:
        """Drops this view's mapping. Arrays and tensors still viewing blocks
        keep the mapping alive; their blocks are released when they die."""
        mm, self._mm = self._mm, None
        if mm is not None:
            try:
                mm.close()
            except BufferError:
                pass


class BatchPool:
    """Output memory for collated batches, reused: fresh 19 MB allocations
    fault in every page again (torch.stack of a 3x224x224 float batch: 9.6 ms
    into new memory against 1.4 ms into memory used before). A private
    anonymous mapping, first fit; a block returns when the last tensor
    viewing it dies (weakref.finalize on its owner; the finalizer only
    queues the offset, so it may run on any thread). ``empty`` returns None
    when nothing fits (the user holds many batches): the caller allocates
    normally then. Only the collator thread allocates."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._mm: mmap.mmap | None = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE)
        self._live: dict[int, int] = {}  # offset -> bytes
        self._freed: deque[int] = deque()

    def empty(self, shape: tuple[int, ...], dtype: Any) -> Any:
        import torch

        mm = self._mm
        if mm is None:
            return None
        numel = 1
        for d in shape:
            numel *= int(d)
        nbytes = numel * torch.empty((), dtype=dtype).element_size()
        if nbytes == 0:
            return None
        need = _align(nbytes)
        while self._freed:
            self._live.pop(self._freed.popleft(), None)
        at = 0
        for off in sorted(self._live):
            if off - at >= need:
                break
            at = off + self._live[off]
        if self.size - at < need:
            return None
        self._live[at] = need
        owner = (ctypes.c_char * need).from_buffer(mm, at)
        weakref.finalize(owner, self._freed.append, at)
        return torch.frombuffer(owner, dtype=dtype, count=numel).view(shape)

    def close(self) -> None:
        """Drops the mapping; tensors still viewing it keep it alive."""
        self._mm = None
