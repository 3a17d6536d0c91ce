"""DataLoader: torch's constructor, the Go core underneath.

``from minatoloader import DataLoader`` keeps the signature of
``torch.utils.data.DataLoader.__init__`` exactly (names, order, defaults,
keyword-only markers). Arguments that are supported map onto a
:class:`NativeLoader`; an argument that is not supported yet raises
:class:`UnsupportedArgumentError` naming it, rather than being ignored, and
an invalid value raises the same kind of exception as torch, naming it.
"""

from __future__ import annotations

import logging

import importlib.util
import numbers
import os
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Callable, Generic, TypeVar

from .dataset import Dataset
from .errors import UnsupportedArgumentError
from .loader import EpochIterator, NativeLoader

if TYPE_CHECKING:
    from torch.utils.data import Sampler

_T = TypeVar("_T")
_T_co = TypeVar("_T_co", covariant=True)
_worker_init_fn_t = Callable[[int], None]
_collate_fn_t = Callable[[list[_T]], Any]

_Self = TypeVar("_Self", bound="DataLoader[Any]")


def _unsupported(name: str, value: Any, hint: str) -> UnsupportedArgumentError:
    return UnsupportedArgumentError(f"minatoloader.DataLoader: {name}={value!r} is not supported yet; {hint}")


def _seed_from(generator: Any) -> int:
    """The seed of a torch.Generator, as a signed 64-bit int."""
    initial_seed = getattr(generator, "initial_seed", None)
    if not callable(initial_seed):
        raise TypeError(
            f"DataLoader: generator must be a torch.Generator (or have initial_seed()), got {type(generator).__name__}"
        )
    seed = int(initial_seed())
    return seed - (1 << 64) if seed >= (1 << 63) else seed


def _draw_seed() -> int:
    """A fresh seed, drawn like torch's RandomSampler does (from torch's
    global generator, so torch.manual_seed makes it reproducible) when torch
    is installed, else from os.urandom."""
    if "torch" in sys.modules or importlib.util.find_spec("torch") is not None:
        import torch

        return int(torch.empty((), dtype=torch.int64).random_().item())
    return int.from_bytes(os.urandom(8), "little") >> 1


_log = logging.getLogger("minatoloader")


def _native_equivalent(dataset: Any) -> Dataset[Any]:
    """A torchvision ImageFolder/DatasetFolder whose transform has native
    equivalents becomes a native ImageFolder; anything else raises TypeError
    saying why (running Python datasets comes in a later release)."""
    name = f"{type(dataset).__module__}.{type(dataset).__qualname__}"
    reason = ""
    if type(dataset).__module__.startswith("torchvision.datasets") and hasattr(dataset, "root") and hasattr(dataset, "samples"):
        from .datasets import ImageFolder
        from .transforms import from_torchvision

        compose, reason = from_torchvision(getattr(dataset, "transform", None))
        if getattr(dataset, "target_transform", None) is not None:
            compose, reason = None, "target_transform is set"
        if compose is not None:
            exts = getattr(dataset, "extensions", None)
            native = ImageFolder(dataset.root, transform=compose, extensions=list(exts) if exts else None)
            if len(native) != len(dataset):
                reason = f"the native scan found {len(native)} files, torchvision {len(dataset)}"
            else:
                _log.info("minatoloader: running %s natively (decode and %d transforms in the Go core)", name, len(compose.transforms))
                return native
        _log.info("minatoloader: cannot run %s natively: %s", name, reason)
    raise TypeError(
        f"minatoloader.DataLoader runs native datasets (minatoloader.SyntheticDataset, minatoloader.datasets.*) "
        f"and torchvision ImageFolder/DatasetFolder whose transforms have native equivalents; got {name}"
        + (f" ({reason})" if reason else "")
        + ". Python datasets (torch Dataset objects) come in a later release."
    )


class DataLoader(Generic[_T_co]):
    """A drop-in for ``torch.utils.data.DataLoader`` over a native dataset.

    Supported: ``dataset`` (a native dataset such as
    :class:`minatoloader.SyntheticDataset`), ``batch_size`` (an int >= 1),
    ``shuffle``, ``num_workers`` (0: one worker thread, n: n workers to start
    with; the Go core scales them), ``drop_last``, ``generator`` (a
    ``torch.Generator``: the seed is its ``initial_seed()``; without one a
    seed is drawn from torch's global generator), ``prefetch_factor``
    (batches kept ready, default 2), ``persistent_workers`` (accepted; the
    core's workers persist across epochs anyway), ``in_order``, ``timeout``,
    and ``pin_memory`` (accepted; a no-op on a host without an accelerator).

    Each epoch's order is a function of (seed, epoch); :meth:`set_epoch`
    picks the epoch like ``DistributedSampler.set_epoch``.

    Not supported yet (raise :class:`UnsupportedArgumentError`, a
    ``ValueError``): ``sampler``, ``batch_sampler``, ``collate_fn``,
    ``worker_init_fn``, ``multiprocessing_context``, a non-empty
    ``pin_memory_device``, and ``batch_size=None``.
    """

    dataset: Dataset[_T_co]
    batch_size: int
    shuffle: bool
    num_workers: int
    drop_last: bool
    timeout: float
    generator: Any
    seed: int
    prefetch_factor: int | None
    persistent_workers: bool
    pin_memory: bool
    pin_memory_device: str
    worker_init_fn: _worker_init_fn_t | None
    multiprocessing_context: Any
    in_order: bool
    _loader: NativeLoader

    def __init__(
        self,
        dataset: Dataset[_T_co],
        batch_size: int | None = 1,
        shuffle: bool | None = None,
        sampler: Sampler | Iterable | None = None,
        batch_sampler: Sampler[list] | Iterable[list] | None = None,
        num_workers: int = 0,
        collate_fn: _collate_fn_t | None = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: _worker_init_fn_t | None = None,
        multiprocessing_context=None,
        generator=None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        pin_memory_device: str = "",
        in_order: bool = True,
    ) -> None:
        # Which path runs the data: "native" (a native dataset) or
        # "torchvision->native" (a torchvision dataset translated); in stats().
        self.path = "native"
        if not isinstance(dataset, Dataset):
            dataset = _native_equivalent(dataset)
            self.path = "torchvision->native"
        # The checks torch makes, with torch's messages.
        if isinstance(num_workers, bool) or not isinstance(num_workers, numbers.Integral):
            raise TypeError(f"num_workers option should be an int, got {type(num_workers).__name__}")
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
        if not isinstance(timeout, numbers.Real):
            raise TypeError(f"timeout option should be a number of seconds, got {type(timeout).__name__}")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError(
                "prefetch_factor option could only be specified in multiprocessing."
                "let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None."
            )
        elif num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        # Arguments not supported yet: refuse rather than ignore.
        if sampler is not None:
            raise _unsupported(
                "sampler", sampler, "the Go core orders samples itself: use shuffle= and generator= (and set_epoch)"
            )
        if batch_sampler is not None:
            raise _unsupported("batch_sampler", batch_sampler, "use batch_size=, shuffle= and drop_last=")
        if collate_fn is not None:
            raise _unsupported("collate_fn", collate_fn, "batches are built in the Go core; leave collate_fn=None")
        if worker_init_fn is not None:
            raise _unsupported("worker_init_fn", worker_init_fn, "workers are Go goroutines, not Python processes")
        if multiprocessing_context is not None:
            raise _unsupported(
                "multiprocessing_context", multiprocessing_context, "workers are Go goroutines, not Python processes"
            )
        if pin_memory_device:
            raise _unsupported("pin_memory_device", pin_memory_device, "leave pin_memory_device=''")
        if batch_size is None:
            raise _unsupported(
                "batch_size", batch_size, "disabling automatic batching is not available: pass an int >= 1"
            )
        if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")

        shuffle = bool(shuffle)
        if generator is not None:
            seed = _seed_from(generator)
        elif shuffle:
            seed = _draw_seed()
        else:
            seed = 0

        self.dataset = dataset
        self.batch_size = int(batch_size)
        self.shuffle = shuffle
        self.num_workers = int(num_workers)
        self.drop_last = drop_last
        self.timeout = timeout
        self.generator = generator
        self.seed = seed
        self.prefetch_factor = prefetch_factor
        self.persistent_workers = persistent_workers
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order
        self._loader = NativeLoader(
            dataset,
            self.batch_size,
            shuffle=shuffle,
            seed=seed,
            drop_last=drop_last,
            in_order=in_order,
            workers=max(1, self.num_workers),
            prefetch_batches=max(1, int(prefetch_factor if prefetch_factor is not None else 2)),
            output="auto",
            batch_timeout=float(timeout),
        )

    @property
    def native(self) -> NativeLoader:
        """The NativeLoader underneath (for stats and the full option set)."""
        return self._loader

    def __iter__(self) -> EpochIterator:
        """Starts the next epoch; yields ``(data, labels)`` pairs."""
        return iter(self._loader)

    def __len__(self) -> int:
        """Batches per epoch."""
        return len(self._loader)

    def set_epoch(self, epoch: int) -> None:
        """Makes the next ``iter()`` start epoch ``epoch``."""
        self._loader.set_epoch(epoch)

    def stats(self) -> dict[str, Any]:
        """The library's stats of the loader, with "path": which path runs
        the data ("native" or "torchvision->native")."""
        return {**self._loader.stats(), "path": self.path}

    def close(self) -> None:
        """Stops the loader's workers and frees its pending batches. Idempotent;
        also done when the DataLoader is garbage collected."""
        self._loader.close()

    @property
    def closed(self) -> bool:
        return self._loader.closed

    def __enter__(self: _Self) -> _Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"<minatoloader.DataLoader batch_size={self.batch_size} shuffle={self.shuffle} "
            f"num_workers={self.num_workers} dataset={self.dataset!r}>"
        )
