"""The Python worker process: runs a Dataset's ``__getitem__`` (or its
iterator) for the main process and hands samples over through its arena.
The wire format is docs/worker-protocol.md.

A worker never loads the Go library: this module imports only the standard
library, numpy (through _shm) and, when available, torch.
"""

from __future__ import annotations

import os
import random
import signal
import socket
import stat
import struct
import sys
import traceback
from collections.abc import Callable, Iterator
from typing import Any

from ._shm import WorkerArena

__all__ = [
    "KIND_GET",
    "KIND_HELLO",
    "KIND_NEXT",
    "KIND_REPLY",
    "KIND_RESET",
    "STATUS_ERROR",
    "STATUS_EXHAUSTED",
    "STATUS_OK",
    "WorkerInfo",
    "error_text",
    "get_worker_info",
    "pack_get",
    "pack_next",
    "pack_reset",
    "parse_message",
    "worker_main",
]

KIND_GET = 1
KIND_HELLO = 2
KIND_REPLY = 3
KIND_NEXT = 4
KIND_RESET = 5

STATUS_OK = 0
STATUS_ERROR = 1  # an exception in user code (HELLO: worker_init_fn or setup failed)
STATUS_EXHAUSTED = 2  # NEXT only: the iterator is exhausted

# Every integer is little-endian; the text after a fixed part is UTF-8.
_HEAD = struct.Struct("<II")  # kind, status (0 in main -> worker messages)
_GET = struct.Struct("<IIQqqQ")  # kind 1, 0, seq, epoch, index, seed
_NEXT = struct.Struct("<IIQqq")  # kind 4, 0, seq, count, drop_last (0/1)
_RESET = struct.Struct("<IIQq")  # kind 5, 0, seq, epoch
_HELLO = struct.Struct("<IIQ")  # kind 2, status, pid; status 1: + error text
_REPLY = struct.Struct("<IIQQQ")  # kind 3, status, seq, block offset, payload length; status 1: + error text

_U64 = (1 << 64) - 1


class WorkerInfo:
    """What a worker knows about itself (like torch's): ``id`` (0 to
    ``num_workers - 1``), ``num_workers``, ``seed`` (base seed + id) and
    ``dataset`` (this worker's copy)."""

    __slots__ = ("id", "num_workers", "seed", "dataset")

    def __init__(self, id: int, num_workers: int, seed: int, dataset: Any) -> None:  # noqa: A002
        object.__setattr__(self, "id", id)
        object.__setattr__(self, "num_workers", num_workers)
        object.__setattr__(self, "seed", seed)
        object.__setattr__(self, "dataset", dataset)

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError(f"cannot assign attribute {key!r} of WorkerInfo")

    def __repr__(self) -> str:
        return f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, seed={self.seed}, dataset={self.dataset!r})"


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """This worker's :class:`WorkerInfo`; None in the main process."""
    return _worker_info


# --- messages -----------------------------------------------------------------


def pack_get(seq: int, epoch: int, index: int, seed: int) -> bytes:
    """GET (main -> worker): ``<IIQqqQ`` kind 1, 0, seq, epoch, index, seed."""
    return _GET.pack(KIND_GET, 0, seq, epoch, index, seed & _U64)


def pack_next(seq: int, count: int, drop_last: bool) -> bytes:
    """NEXT (main -> worker): ``<IIQqq`` kind 4, 0, seq, count, drop_last."""
    return _NEXT.pack(KIND_NEXT, 0, seq, count, 1 if drop_last else 0)


def pack_reset(seq: int, epoch: int) -> bytes:
    """RESET (main -> worker): ``<IIQq`` kind 5, 0, seq, epoch."""
    return _RESET.pack(KIND_RESET, 0, seq, epoch)


def _pack_hello(status: int, text: str = "") -> bytes:
    return _HELLO.pack(KIND_HELLO, status, os.getpid()) + text.encode("utf-8", "replace")


def _pack_reply(status: int, seq: int, offset: int = 0, length: int = 0, text: str = "") -> bytes:
    return _REPLY.pack(KIND_REPLY, status, seq, offset, length) + text.encode("utf-8", "replace")


def parse_message(b: bytes) -> tuple[int, int, int, int, int, str | int]:
    """Decodes a worker -> main message into (kind, status, seq, offset,
    length, text_or_pid).

    REPLY (``<IIQQQ`` + text): the fields as sent; text_or_pid is the error
    text for status 1, else "". HELLO (``<IIQ`` + text): seq holds the pid
    (the u64 at the same place), offset and length are 0; text_or_pid is the
    pid for status 0, the error text for status 1."""
    if len(b) < _HEAD.size:
        raise ValueError(f"a message of {len(b)} bytes is too short")
    kind, status = _HEAD.unpack_from(b)
    if kind == KIND_REPLY:
        if len(b) < _REPLY.size:
            raise ValueError(f"a REPLY of {len(b)} bytes is too short")
        _, _, seq, offset, length = _REPLY.unpack_from(b)
        text = bytes(b[_REPLY.size :]).decode("utf-8", "replace")
        return kind, status, seq, offset, length, text
    if kind == KIND_HELLO:
        if len(b) < _HELLO.size:
            raise ValueError(f"a HELLO of {len(b)} bytes is too short")
        _, _, pid = _HELLO.unpack_from(b)
        if status == STATUS_OK:
            return kind, status, pid, 0, 0, pid
        return kind, status, pid, 0, 0, bytes(b[_HELLO.size :]).decode("utf-8", "replace")
    raise ValueError(f"unknown message kind {kind} from a worker")


def error_text(e: BaseException) -> str:
    """The protocol's error text for the exception being handled:
    ``module:qualname``, a newline, the traceback."""
    return f"{type(e).__module__}:{type(e).__qualname__}\n{traceback.format_exc()}"


# --- the worker ---------------------------------------------------------------


def _setup_random(base_seed: int, worker_id: int, num_workers: int, dataset: Any) -> int:
    """Seeds like torch's worker loop and sets both WorkerInfos; returns the
    worker's seed."""
    global _worker_info
    seed = base_seed + worker_id
    random.seed(seed)
    try:
        import torch
    except ImportError:
        torch = None  # type: ignore[assignment]
    if torch is not None:
        torch.set_num_threads(1)
        torch.manual_seed(seed & _U64)
        from torch.utils.data._utils import worker as tw

        try:
            import numpy as np
        except ImportError:
            np = None  # type: ignore[assignment]
        if np is not None:
            np.random.seed(tw._generate_state(base_seed, worker_id))
        tw._worker_info = tw.WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
    else:
        try:
            import numpy as np

            np.random.seed(seed % 2**32)
        except ImportError:
            pass
    _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
    return seed


def _seed_sample(seed: int) -> None:
    random.seed(seed)
    torch = sys.modules.get("torch")
    if torch is not None:
        # The CPU generator directly: torch.manual_seed also queues a lazy
        # CUDA seeding with a formatted stack (0.45 ms a call).
        s = seed & ((1 << 63) - 1)
        torch.default_generator.manual_seed(s)
        if torch.cuda.is_initialized():
            torch.cuda.manual_seed_all(s)
    np = sys.modules.get("numpy")
    if np is not None:
        np.random.seed(seed % 2**32)


def _peer_inode(fd: int) -> int | None:
    """The inode of the other end of the Unix socket ``fd`` (sock_diag's
    UNIX_DIAG_PEER), or None where the kernel does not tell."""
    ino = os.fstat(fd).st_ino
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 4) as nl:  # NETLINK_SOCK_DIAG
        nl.settimeout(1.0)
        # unix_diag_req: family, protocol, pad, states (all), ino, show (UDIAG_SHOW_PEER), cookie (none)
        req = struct.pack("=BBHIIIII", socket.AF_UNIX, 0, 0, 0xFFFFFFFF, ino, 4, 0xFFFFFFFF, 0xFFFFFFFF)
        # nlmsghdr: length, SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST, seq, pid
        nl.sendto(struct.pack("=IHHII", 16 + len(req), 20, 1, 1, 0) + req, (0, 0))
        data = nl.recv(65536)
    length, kind = struct.unpack_from("=IH", data)
    if kind != 20 or length > len(data) or length < 32 or struct.unpack_from("=I", data, 20)[0] != ino:
        return None
    at = 32  # nlmsghdr (16) + unix_diag_msg (16), then attributes
    while at + 4 <= length:
        alen, atype = struct.unpack_from("=HH", data, at)
        if alen < 4:
            break
        if atype == 2 and alen >= 8:  # UNIX_DIAG_PEER
            return struct.unpack_from("=I", data, at + 4)[0]
        at += (alen + 3) & ~3
    return None


def _drop_inherited_peer(conn: Any) -> None:
    """A forked worker inherits the main process's end of its own channel
    (and any dup of it); while it holds one, closing the main end gives it no
    EOF. Each such fd is pointed at /dev/null (not closed: a stale Python
    object of the parent's may still close that number later). Best effort;
    nothing to do under spawn and forkserver."""
    try:
        fd = conn.fileno()
        if not stat.S_ISSOCK(os.fstat(fd).st_mode):
            return
        peer = _peer_inode(fd)
        if peer is None:
            return
        target = f"socket:[{peer}]"
        found = []
        for name in os.listdir("/proc/self/fd"):
            try:
                if os.readlink(f"/proc/self/fd/{name}") == target:
                    found.append(int(name))
            except OSError:
                pass
        if found:
            null = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
            try:
                for other in found:
                    os.dup2(null, other, inheritable=False)
            finally:
                os.close(null)
    except Exception:
        pass


def worker_main(
    conn: Any,
    dataset: Any,
    worker_id: int,
    num_workers: int,
    base_seed: int,
    worker_init_fn: Callable[[int], Any] | None,
    parent_pid: int,
    arena_fd: int,
    arena_size: int,
    mode: str,
    seed_per_sample: bool,
) -> None:
    """A worker process's entry point. ``conn`` is its end of a duplex
    ``multiprocessing`` Pipe; ``mode`` is "map" (GET; a batched loader:
    ``__getitems__([index])[0]`` when the dataset has it, as torch's fetcher
    with auto-collation), "map-single" (GET; ``batch_size=None``:
    ``dataset[index]``, as torch's fetcher without auto-collation) or
    "iterable" (NEXT, RESET). Returns on EOF, when its parent pid changes, or after a failed
    setup (reported in the HELLO)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the main process handles Ctrl-C
    watched_ppid = os.getppid()  # the main process, or a forkserver that dies with it
    _drop_inherited_peer(conn)
    try:
        if mode not in ("map", "map-single", "iterable"):
            raise ValueError(f"unknown worker mode {mode!r} (want 'map', 'map-single' or 'iterable')")
        _setup_random(base_seed, worker_id, num_workers, dataset)
        arena = WorkerArena(parent_pid, arena_fd, arena_size)
        if worker_init_fn is not None:
            worker_init_fn(worker_id)
    except Exception as e:
        try:
            conn.send_bytes(_pack_hello(STATUS_ERROR, error_text(e)))
        except OSError:
            pass
        return
    try:
        conn.send_bytes(_pack_hello(STATUS_OK))
    except OSError:
        return

    iterator: Iterator[Any] | None = None  # made on the first NEXT (or a RESET)
    exhausted = False
    getitems = getattr(dataset, "__getitems__", None) if mode == "map" else None
    while True:
        try:
            if not conn.poll(1.0):
                if os.getppid() != watched_ppid:
                    return
                continue
            msg = conn.recv_bytes()
        except (EOFError, OSError):
            return
        seq = 0
        try:
            if len(msg) < _HEAD.size + 8:
                raise ValueError(f"a message of {len(msg)} bytes is too short")
            kind = _HEAD.unpack_from(msg)[0]
            seq = struct.unpack_from("<Q", msg, _HEAD.size)[0]
            if kind == KIND_GET and mode != "iterable":
                _, _, seq, _epoch, index, seed = _GET.unpack_from(msg)
                if seed_per_sample:
                    _seed_sample(seed)
                # torch's fetcher calls __getitems__ with the batch's
                # indices when the dataset has it; samples come one at a
                # time here, so it gets a batch of one.
                sample = getitems([index])[0] if getitems else dataset[index]
                offset, length = arena.put(sample, f"sample {index}", seq)
                del sample
                reply = _pack_reply(STATUS_OK, seq, offset, length)
            elif kind == KIND_NEXT and mode == "iterable":
                _, _, seq, count, drop_last = _NEXT.unpack_from(msg)
                if count < 1:
                    raise ValueError(f"NEXT asks for {count} items")
                items: list[Any] = []
                if not exhausted:
                    if iterator is None:
                        iterator = iter(dataset)
                    try:
                        for _ in range(count):
                            items.append(next(iterator))
                    except StopIteration:
                        exhausted = True
                if not items or (exhausted and drop_last and len(items) < count):
                    reply = _pack_reply(STATUS_EXHAUSTED, seq)
                else:
                    offset, length = arena.put(items, f"{len(items)} items of the iterator", seq)
                    reply = _pack_reply(STATUS_OK, seq, offset, length)
                del items
            elif kind == KIND_RESET and mode == "iterable":
                _, _, seq, _epoch = _RESET.unpack_from(msg)
                iterator = None
                exhausted = False
                iterator = iter(dataset)
                reply = _pack_reply(STATUS_OK, seq)
            else:
                raise ValueError(f"unexpected message kind {kind} for a {mode!r} worker")
        except Exception as e:
            reply = _pack_reply(STATUS_ERROR, seq, text=error_text(e))
        try:
            conn.send_bytes(reply)
        except OSError:
            return
