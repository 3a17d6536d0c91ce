"""The worker arenas: shared-memory blocks that carry samples from Python
worker processes to the main process without copying array data through a
pipe. The format is docs/worker-protocol.md ("Arena blocks").

A worker (:class:`WorkerArena`) pickles a sample with every numpy array and
torch tensor replaced by a persistent id, and writes the pickle and the
arrays' bytes into a block of its arena (the codec: _shm_codec). The main
process (:class:`ArenaView`) unpickles the block with arrays and tensors
built over the shared memory itself; the block goes back to the worker when
the last of them is garbage.

This module must never load the Go library (a forked worker imports it).
numpy is required; torch is imported only when a tensor is met.
"""

from __future__ import annotations

import fcntl
import mmap
import os
import struct
from heapq import heappop, heappush
from typing import Any

import numpy as np

from ._shm_codec import ALIGN, HEADER, PICKLE_AT as _PICKLE_AT, align as _align, encode, write_payload

__all__ = [
    "ALIGN",
    "BatchPool",
    "DEFAULT_ARENA_BYTES",
    "HEADER",
    "ArenaFullError",
    "ArenaView",
    "WorkerArena",
    "create_arena",
]

DEFAULT_ARENA_BYTES = 1 << 30
# A worker reads at most this many block headers per allocation, amortized
# (WorkerArena._allocate).
SCAN_EVERY = 8

# Block header: state (1 in use, 0 free), 0, block size (header included),
# payload length.
_HEADER_FMT = "<IIQQ"
_STATE_FMT = "<I"


class ArenaFullError(MemoryError):
    """A sample does not fit in its worker's arena (larger than the arena, or
    the arena is held by samples the main process has not released)."""


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
        buf, plen, state, base = encode(obj, self._hint)
        if state.items:
            payload = base + state.end
            self._hint = _align(_PICKLE_AT + plen + 16 * len(state.by_id) + 256)
        else:
            payload = _PICKLE_AT + plen
        need = _align(HEADER + payload)
        off = self._allocate(need, what)
        try:
            p = off + HEADER
            write_payload(self, p, buf, plen, state, base)
            struct.pack_into(_HEADER_FMT, self._mm, off, 1, tag & 0xFFFFFFFF, need, payload)
        except BaseException:
            self._free_space(off, need)
            raise
        return off, payload

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


from ._shm_view import ArenaView, BatchPool  # noqa: E402 - the main process's side, re-exported
