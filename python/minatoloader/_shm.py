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
from heapq import heappop, heappush
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
# A worker reads at most this many block headers per allocation, amortized
# (WorkerArena._allocate).
SCAN_EVERY = 8

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
        self._hint = _align(_PICKLE_AT + 256)  # where the arrays start, guessed from the last sample
        # The allocator (see _allocate). Blocks not known to be released:
        self._blocks: dict[int, int] = {}  # offset -> block size
        self._held = 0  # their total size
        # Free space known since the last scan: the tail [_top, size) and
        # gaps below _top, each indexed by its size class (floor(log2(size)))
        # in a heap of offsets; heap entries whose gap was taken are stale
        # (not in _gaps) and dropped when met.
        self._top = 0
        self._gaps: dict[int, int] = {}  # offset -> size
        self._classes: list[list[int]] = [[] for _ in range(size.bit_length())]
        self._since_scan = 0  # allocations since the last scan
        self.scans = 0  # scans so far (with probes: the allocator's work, for tests)
        self.probes = 0  # block headers read by the scans

    # --- allocation ---------------------------------------------------------
    #
    # The main process releases a block by writing 0 to its state word; the
    # worker learns of it only by reading the header. Reading every live
    # header for each sample costs O(live blocks) per sample (a batch of
    # 40,960 small samples: 40,960 live blocks, O(n^2) reads), so a scan of
    # the headers runs only once per len(blocks)/SCAN_EVERY allocations (at
    # most SCAN_EVERY header reads per allocation, amortized; every
    # allocation while few blocks are live), or when nothing fits. A scan
    # rebuilds the free space (gaps between the live blocks, coalesced, and
    # the tail). Between scans an allocation takes the lowest-offset gap among
    # those sure to fit (the head of each larger size class) and the head of
    # its own class if it fits, else the tail: O(log n) (a few dozen classes,
    # heap operations). Blocks stay near the lowest offsets, so the touched
    # extent of the arena stays near the live set.

    def _scan(self) -> None:
        mm = self._mm
        unpack = struct.unpack_from
        blocks = self._blocks
        self.scans += 1
        self.probes += len(blocks)
        live = {off: sz for off, sz in blocks.items() if unpack(_STATE_FMT, mm, off)[0] != 0}
        gaps: dict[int, int] = {}
        classes: list[list[int]] = [[] for _ in range(len(self._classes))]
        at = 0
        held = 0
        for off in sorted(live):
            if off > at:
                gaps[at] = off - at
                classes[(off - at).bit_length() - 1].append(at)  # ascending: already a heap
            sz = live[off]
            at = off + sz
            held += sz
        self._blocks, self._held, self._gaps, self._classes, self._top = live, held, gaps, classes, at
        self._since_scan = 0

    def _fit(self, need: int) -> int:
        """The offset of free space for ``need`` bytes, taken; -1 if none is known."""
        gaps, classes = self._gaps, self._classes
        own = need.bit_length() - 1  # need's class: its gaps may be too small
        best = -1
        best_class = -1
        for k in range(own, len(classes)):
            h = classes[k]
            while h and (h[0] not in gaps or gaps[h[0]].bit_length() - 1 != k):
                heappop(h)  # a gap taken since
            if h and (k > own or gaps[h[0]] >= need) and (best < 0 or h[0] < best):
                best, best_class = h[0], k
        if best >= 0:
            heappop(classes[best_class])
            rest = gaps.pop(best) - need
            if rest:
                gaps[best + need] = rest
                heappush(classes[rest.bit_length() - 1], best + need)
            return best
        if self.size - self._top >= need:
            best = self._top
            self._top += need
            return best
        return -1

    def _free_space(self, off: int, sz: int) -> None:
        """Gives back a block this worker allocated but never sent."""
        del self._blocks[off]
        self._held -= sz
        if off + sz == self._top:
            self._top = off
        else:
            self._gaps[off] = sz
            heappush(self._classes[sz.bit_length() - 1], off)

    def held_bytes(self) -> int:
        """Bytes held by blocks the main process has not released (after
        reclaiming the released ones)."""
        self._scan()
        return self._held

    def live_blocks(self) -> list[tuple[int, int]]:
        """The (offset, size) of the blocks not yet released, lowest first."""
        self._scan()
        return sorted(self._blocks.items())

    def _allocate(self, need: int, what: str) -> int:
        scanned = self._since_scan * SCAN_EVERY >= len(self._blocks)
        if scanned:
            self._scan()
        off = self._fit(need)
        if off < 0 and not scanned:
            self._scan()
            off = self._fit(need)
        if off < 0:
            if need > self.size:
                why = "larger than the arena"
            else:
                why = "does not fit next to the samples the main process still holds"
            raise ArenaFullError(
                f"{what} needs {need} bytes of the worker arena and {why}: the arena holds "
                f"{self.size} bytes, {self._held} of them in {len(self._blocks)} blocks not yet released "
                "(DataLoader.configure(arena_bytes=...) sets the size)"
            )
        self._blocks[off] = need
        self._held += need
        self._since_scan += 1
        return off

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
            self._free_space(off, need)
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


def _free_block(
    mm: mmap.mmap, offset: int, live: dict[int, Any], pid: int, tag: int | None, fin: Any, gone: deque[int], nbytes: int
) -> None:
    """Marks a block free (the finalizer of its owner); never raises; tells
    the view's loading thread that ``nbytes`` are no longer viewed. Only in
    the process that loaded it: a forked child (a worker started while this
    process held samples) inherits the owners, and its garbage collector
    must not free the parent's blocks through the shared mapping. Only if the
    header still carries the tag it was loaded with: a free that comes after
    the block was given back and reused must not release the new sample."""
    global stale_frees
    if os.getpid() != pid:
        return
    gone.append(nbytes)
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
    """Unpickles one block; arrays and tensors view the block, or with
    ``copy`` are copies of their bytes (the block is then not referenced)."""

    def __init__(self, file: io.BytesIO, mm: mmap.mmap, offset: int, length: int, copy: bool = False) -> None:
        super().__init__(file)
        self._mm = mm
        self._offset = offset
        self._length = length
        self._copy = copy
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
            elif self._copy:
                made = np.empty(shape, dtype)
                self._copy_into(made.reshape(-1).view(np.uint8), data_off, nbytes)
            else:
                made = np.frombuffer(self._owner(), dtype, nbytes // dtype.itemsize, data_off).reshape(shape)
        elif kind == _KIND_TORCH:
            import torch

            dtype = getattr(torch, dtype_name, None)
            if not isinstance(dtype, torch.dtype):
                raise pickle.UnpicklingError(f"unknown torch dtype {dtype_name!r}")
            if nbytes == 0:
                made = torch.empty(shape, dtype=dtype)
            elif self._copy:
                made = torch.empty(shape, dtype=dtype)
                self._copy_into(made.reshape(-1).view(torch.uint8).numpy(), data_off, nbytes)
            else:
                made = torch.frombuffer(
                    self._owner(), dtype=dtype, count=nbytes // dtype.itemsize, offset=data_off
                ).view(shape)
        else:
            raise pickle.UnpicklingError(f"unknown persistent id kind {kind!r}")
        self._made[key] = made
        return made

    def _copy_into(self, dst: Any, data_off: int, nbytes: int) -> None:
        if dst.nbytes != nbytes:
            raise pickle.UnpicklingError(f"array of {dst.nbytes} bytes described as {nbytes}")
        src = np.frombuffer(self._mm, np.uint8, nbytes, self._offset + HEADER + data_off)
        np.copyto(dst, src)
        del src


class ArenaView:
    """The main process's view of one worker's arena: unpickles blocks with
    arrays and tensors over the shared memory, and gives each block back when
    the last of them is garbage. ``fd`` may be closed after construction.

    Samples the consumer keeps (``kept = list(loader)`` without a copying
    collate) would hold their blocks and fill the arena, which the worker
    then cannot write to. So once the blocks still viewed here exceed
    ``copy_limit`` bytes (half the arena), a sample loaded is copied out of
    the arena into ordinary memory instead, and its block is given back at
    once: what the consumer keeps costs what it would cost with torch, and
    the other half of the arena stays for the samples in flight. A training
    loop that drops its samples each step never reaches the limit and never
    copies."""

    def __init__(self, fd: int, size: int) -> None:
        self._mm: mmap.mmap | None = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        self.size = size
        self.copy_limit = size // 2
        self.copied = 0  # samples copied out of the arena
        self._live: dict[int, weakref.finalize] = {}
        self._pid = os.getpid()
        self._history: dict[int, tuple[int | None, int]] = {}  # offset -> (tag, length) last loaded
        # Bytes of the blocks still viewed, counted by the loading thread
        # alone; finalizers (any thread) only queue what they give back.
        self._viewed = 0
        self._gone: deque[int] = deque()

    def viewed_bytes(self) -> int:
        """Bytes of the blocks that arrays or tensors still view."""
        while self._gone:
            self._viewed -= self._gone.popleft()
        return self._viewed

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
        nbytes = _align(HEADER + length)
        viewed = self.viewed_bytes()
        copy = viewed > 0 and viewed + nbytes > self.copy_limit
        u = _BlockUnpickler(io.BytesIO(mm[p + _PICKLE_AT : p + _PICKLE_AT + plen]), mm, offset, length, copy)
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
                if copy:
                    self.copied += 1
            else:
                old = self._live.pop(offset, None)
                if old is not None and old.detach() is not None:
                    # The worker reused a block that arrays here still view:
                    # those arrays now show another sample. Never expected.
                    raise RuntimeError(
                        f"minatoloader: internal error: the arena block at {offset} was reused while still in use"
                    )
                cell: list[Any] = [None]
                cell[0] = weakref.finalize(
                    owner, _free_block, mm, offset, self._live, self._pid, tag, cell, self._gone, nbytes
                )
                self._live[offset] = cell[0]
                self._viewed += nbytes
                del owner
        return obj

    def release(self, offset: int) -> None:
        """Gives the block at ``offset`` back now, whether or not it was
        loaded (for a result that is dropped). Arrays still viewing it see
        whatever the worker writes there next."""
        fin = self._live.pop(offset, None)
        info = fin.detach() if fin is not None else None
        if info is not None:
            self._gone.append(info[2][-1])  # _free_block's nbytes
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
