"""What a DataLoader keeps across its epochs, on every path.

The epoch count, the resume point (``load_state_dict``), persistent
workers and the Go loader they feed, the stats of the last finished epoch
and the running iterators. Which iterator class runs an epoch is chosen
once, when the DataLoader is built (``dataloader._choose``).
"""

from __future__ import annotations

import weakref
from typing import Any

from .errors import ClosedError


def rng_state(generator: Any) -> Any:
    """The state of the RNG an epoch's order is drawn from: the
    generator's, else torch's global one (numpy's for an install without
    torch, see ``_bare``)."""
    if generator is not None:
        return generator.get_state()
    try:
        import torch
    except ImportError:
        from . import _bare

        return _bare.global_rng().bit_generator.state
    return torch.get_rng_state()


def set_rng_state(generator: Any, state: Any) -> None:
    if generator is not None:
        generator.set_state(state)
        return
    try:
        import torch
    except ImportError:
        from . import _bare

        _bare.global_rng().bit_generator.state = state
        return
    torch.set_rng_state(state)


def draw_base_seed(generator: Any) -> int:
    """torch's per-iterator base seed, drawn as torch draws it (so the RNG
    streams advance exactly as with torch's DataLoader)."""
    try:
        import torch
    except ImportError:
        from . import _bare

        rng = generator if generator is not None else _bare.global_rng()
        return int(rng.integers(-(1 << 63), 1 << 63, dtype="int64"))
    return int(torch.empty((), dtype=torch.int64).random_(generator=generator).item())


class Session:
    """A DataLoader's state across epochs. The DataLoader is held weakly:
    ``del loader`` frees its workers at once (an iterator holds it)."""

    def __init__(self, dl: Any) -> None:
        self._dl = weakref.ref(dl)
        self.epochs = 0  # iterators created (the epoch of the next one)
        self.resume: dict[str, Any] | None = None
        self.pool: Any = None  # persistent worker processes
        self.go: Any = None  # persistent GoLoader, and the key of its config
        self.go_key: Any = None
        self.go_busy = False  # an iterator is using the persistent GoLoader
        self.base_seed: int | None = None  # persistent workers' seed
        self.batch_pool: Any = None
        self.last_stats: dict[str, Any] = {}
        self.path = "python"
        self.path_reason = ""
        self._iters: "weakref.WeakSet[Any]" = weakref.WeakSet()
        self._current: Any = None
        self.closed = False

    @property
    def dl(self) -> Any:
        dl = self._dl()
        if dl is None:
            raise ClosedError("the DataLoader is gone")
        return dl

    @property
    def current(self) -> Any:
        """The iterator created last, while it runs."""
        it = self._current() if self._current is not None else None
        return it if it is not None and not it.done else None

    def start(self, cls: Any, dl: Any) -> Any:
        """A new epoch iterator. As torch: iterators of one DataLoader are
        independent (``zip(loader, loader)``), except with persistent
        workers, whose next epoch takes over from the running one."""
        if self.closed:
            raise ClosedError("this DataLoader is closed")
        if dl.persistent_workers and dl.num_workers > 0:
            for it in list(self._iters):
                it.close()
        it = cls(self, dl)
        self._iters.add(it)
        self._current = weakref.ref(it)
        return it

    def stats(self) -> dict[str, Any]:
        cur = self.current
        out: dict[str, Any] = {}
        if cur is not None and cur.go is not None and not cur.go.closed:
            out = cur.go.stats()
        else:
            out = dict(self.last_stats)
        out["path"] = self.path
        if self.path_reason:
            out["path_reason"] = self.path_reason
        return out

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for it in list(self._iters):
            it.close()
        self.close_persistent()

    def close_persistent(self) -> None:
        if self.go is not None:
            try:
                self.go.close()
            except Exception:
                pass
            self.go = None
        if self.pool is not None:
            self.pool.stop()
            self.pool = None
