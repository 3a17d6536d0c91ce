"""The main process's side of the worker arenas (docs/worker-protocol.md,
"Arena blocks"): :class:`ArenaView` loads the blocks a worker wrote (the
codec: _shm_codec) and gives each back when nothing views it any more;
:class:`BatchPool` is the reused output memory of collated batches. The
worker's side (the allocator) is _shm.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import struct
import weakref
from collections import deque
from typing import Any

from ._shm_codec import ALIGN, HEADER, LEN_FMT as _LEN_FMT, PICKLE_AT as _PICKLE_AT, align as _align, decode

__all__ = ["ArenaView", "BatchPool"]

# Block header: state (1 in use, 0 free), tag, block size (header included),
# payload length (as in _shm).
_HEADER_FMT = "<IIQQ"
_STATE_FMT = "<I"


# Frees that found their block already given back and reused (counted; a
# free only ever clears the block it was made for).
stale_frees = 0


class _BlockRef(weakref.ref):
    """The weak reference to the object (a ctypes array) that a loaded
    block's arrays and tensors view: its callback gives the block back. One object per
    block, with no finalizer registry, bound method or argument tuple
    (weakref.finalize made four, and their allocations ran the cyclic
    collector several times per hundred samples)."""

    __slots__ = ("offset", "tag", "nbytes")


class _Blocks:
    """What a view's block callbacks need (not the view itself, which they
    must not keep alive): the mapping, the live references, the bytes given
    back since the loading thread last counted, the loading process."""

    __slots__ = ("mm", "live", "gone", "pid", "__weakref__")

    def __init__(self, mm: mmap.mmap) -> None:
        self.mm = mm
        self.live: dict[int, _BlockRef] = {}  # offset -> the reference of the block loaded there
        self.gone: deque[int] = deque()
        self.pid = os.getpid()

    def freed(self, ref: _BlockRef) -> None:
        """Marks a block free (its owner died); never raises; tells the
        view's loading thread that its bytes are no longer viewed. Only in
        the process that loaded it: a forked child (a worker started while
        this process held samples) inherits the owners, and its garbage
        collector must not free the parent's blocks through the shared
        mapping. Only if the header still carries the tag it was loaded
        with: a free that comes after the block was given back and reused
        must not release the new sample."""
        global stale_frees
        if os.getpid() != self.pid:
            return
        offset = ref.offset
        if self.live.get(offset) is not ref:
            return  # released (release()) since: already given back
        del self.live[offset]
        self.gone.append(ref.nbytes)
        try:
            state, btag = struct.unpack_from("<II", self.mm, offset)
            if state != 1 or (ref.tag is not None and btag != ref.tag & 0xFFFFFFFF):
                stale_frees += 1
                return
            struct.pack_into(_STATE_FMT, self.mm, offset, 0)
        except Exception:  # a closed mapping: nothing to give back to
            pass


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
        self._mv: memoryview | None = memoryview(self._mm)
        self.size = size
        self.copy_limit = size // 2
        self.copied = 0  # samples copied out of the arena
        self._blocks = _Blocks(self._mm)
        self._live = self._blocks.live
        self._freed = self._blocks.freed  # the callback of every block's reference
        self._history: dict[int, tuple[int | None, int]] = {}  # offset -> (tag, length) last loaded
        # Bytes of the blocks still viewed, counted by the loading thread
        # alone; callbacks (any thread) only queue what they give back.
        self._viewed = 0
        self._gone = self._blocks.gone

    def viewed_bytes(self) -> int:
        """Bytes of the blocks that arrays or tensors still view."""
        while self._gone:
            self._viewed -= self._gone.popleft()
        return self._viewed

    def load(self, offset: int, length: int, tag: int | None = None) -> Any:
        """The sample in the block at ``offset`` (payload ``length`` bytes)."""
        mm, mv = self._mm, self._mv
        if mm is None or mv is None:
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
        obj, owner = decode(mm, mv, p, length, plen, copy)
        if owner is None:
            struct.pack_into(_STATE_FMT, mm, offset, 0)
            if copy:
                self.copied += 1
            return obj
        old = self._live.pop(offset, None)
        if old is not None and old() is not None:
            # The worker reused a block that arrays here still view: those
            # arrays now show another sample. Never expected.
            raise RuntimeError(
                f"minatoloader: internal error: the arena block at {offset} was reused while still in use"
            )
        ref = _BlockRef(owner, self._freed)
        ref.offset, ref.tag, ref.nbytes = offset, tag, nbytes
        self._live[offset] = ref
        self._viewed += nbytes
        return obj

    def release(self, offset: int) -> None:
        """Gives the block at ``offset`` back now, whether or not it was
        loaded (for a result that is dropped). Arrays still viewing it see
        whatever the worker writes there next."""
        ref = self._live.pop(offset, None)
        if ref is not None:
            self._gone.append(ref.nbytes)
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
        mv, self._mv = self._mv, None
        if mv is not None:
            mv.release()
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
