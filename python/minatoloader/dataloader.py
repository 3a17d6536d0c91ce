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

from ._pyloader import PythonLoading
from . import _limits
from .dataset import Dataset
from .errors import StateError, UnsupportedArgumentError
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


def _native_equivalent(dataset: Any) -> Dataset[Any] | None:
    """A torchvision ImageFolder/DatasetFolder whose transform has native
    equivalents becomes a native ImageFolder; anything else is None (it runs
    as a Python dataset in worker processes), with the reason logged."""
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
    return None


def _check_worker_args(num_workers: Any, timeout: Any, prefetch_factor: int | None, persistent_workers: bool) -> int | None:
    """torch's checks of the worker arguments, with torch's messages; returns
    prefetch_factor with torch's default (2 with workers)."""
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
    return prefetch_factor


class DataLoader(Generic[_T_co]):
    """A drop-in for ``torch.utils.data.DataLoader``.

    Over any Python dataset (a torch ``Dataset`` or ``IterableDataset``)
    every argument behaves as torch's: the dataset runs in worker processes
    that the Go core feeds one sample at a time (fast and slow lanes, spare
    processes, batches composed from ready samples with ``in_order=False``),
    samples return through shared memory and are collated here. See
    :meth:`configure` (skip policy, spare workers, per-sample seeds) and
    :meth:`state_dict` (mid-epoch resume).

    Over a native dataset (:mod:`minatoloader.datasets`,
    :class:`minatoloader.SyntheticDataset`, or a torchvision ImageFolder
    whose transforms have native equivalents) the whole pipeline runs in
    the Go core: ``batch_size``, ``shuffle``, ``num_workers`` (the fast
    lane's starting width), ``drop_last``, ``generator`` (its
    ``initial_seed()``), ``prefetch_factor``, ``persistent_workers``,
    ``in_order``, ``timeout`` and ``pin_memory`` apply; ``sampler``,
    ``batch_sampler``, ``collate_fn``, ``worker_init_fn``,
    ``multiprocessing_context``, a non-empty ``pin_memory_device`` and
    ``batch_size=None`` raise :class:`UnsupportedArgumentError` there.
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
        # Which path runs the data, in stats(): "native" (a native dataset),
        # "torchvision->native" (a torchvision dataset translated) or
        # "python" (any other Dataset: Python worker processes).
        self.path = "native"
        self._py: PythonLoading | None = None
        if not isinstance(dataset, Dataset):
            native = None
            if sampler is None and batch_sampler is None and collate_fn is None and worker_init_fn is None \
                    and batch_size is not None and multiprocessing_context is None:
                native = _native_equivalent(dataset)
            if native is None:
                self.path = "python"
                self._init_python(
                    dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, collate_fn, pin_memory,
                    drop_last, timeout, worker_init_fn, multiprocessing_context, generator, prefetch_factor,
                    persistent_workers, pin_memory_device, in_order,
                )
                return
            dataset = native
            self.path = "torchvision->native"
        # The checks torch makes, with torch's messages.
        prefetch_factor = _check_worker_args(num_workers, timeout, prefetch_factor, persistent_workers)

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
        # A batch never holds more than the dataset: a batch_size beyond it
        # (torch takes even 2**40) becomes len + 1, which gives the same
        # batches (one of them all, or none with drop_last) within the
        # core's bounds; prefetch beyond its bound buys nothing.
        core_batch = min(self.batch_size, len(dataset) + 1)
        pf = min(max(1, int(prefetch_factor if prefetch_factor is not None else 2)), _limits.MAX_PREFETCH_BATCHES)
        self._loader = NativeLoader(
            dataset,
            core_batch,
            shuffle=shuffle,
            seed=seed,
            drop_last=drop_last,
            in_order=in_order,
            workers=max(1, self.num_workers),
            prefetch_batches=pf,
            output="auto",
            batch_timeout=float(timeout),
        )

    @property
    def native(self) -> NativeLoader:
        """The NativeLoader underneath (for stats and the full option set)."""
        if self._py is not None:
            raise AttributeError("a DataLoader over a Python dataset has no NativeLoader")
        return self._loader

    def __iter__(self) -> Any:
        """Starts the next epoch. A native dataset yields ``(data, labels)``
        pairs; a Python dataset yields what its collate_fn returns."""
        if self._py is not None:
            return self._py.iterator(self)
        return iter(self._loader)

    def __len__(self) -> int:
        """Batches per epoch (torch's rules for a Python dataset)."""
        if self._py is not None:
            if self._dataset_kind == "iterable":
                length = len(self.dataset)  # type: ignore[arg-type]
                if self.batch_size is not None:
                    import math

                    length = length // self.batch_size if self.drop_last else math.ceil(length / self.batch_size)
                return length
            return len(self._index_sampler)
        return len(self._loader)

    def set_epoch(self, epoch: int) -> None:
        """Makes the next ``iter()`` start epoch ``epoch`` (for a Python
        dataset: the epoch in the per-sample seeds; a DistributedSampler's
        own set_epoch is still the user's to call, as with torch)."""
        if self._py is not None:
            if isinstance(epoch, bool) or not isinstance(epoch, numbers.Integral) or epoch < 0:
                raise ValueError(f"epoch must be an int >= 0, got {epoch!r}")
            self._py.epochs = int(epoch)
            return
        self._loader.set_epoch(epoch)

    def stats(self) -> dict[str, Any]:
        """The library's stats of the loader, with "path": which path runs
        the data ("native", "torchvision->native" or "python"). For a Python
        dataset: the core's stats of the last epoch that ran in workers
        (skipped samples, lanes, threshold), or of the running one."""
        if self._py is not None:
            cur = self._py.current
            if cur is not None and cur.go is not None:
                from . import _native
                import json

                return {**json.loads(_native.loader_stats(cur.go)), "path": self.path}
            return {**self._py.last_stats, "path": self.path}
        return {**self._loader.stats(), "path": self.path}

    def configure(
        self: _Self,
        *,
        on_error: str | None = None,
        max_skipped: int | float | None = None,
        spare_workers: int | None = None,
        seed_per_sample: bool | None = None,
        arena_bytes: int | None = None,
        timeout_ms: float | None = None,
    ) -> _Self:
        """minatoloader's options for a Python dataset, beyond torch's
        signature; they apply from the next ``iter()``. Returns self.

        - ``on_error``: "raise" (default: the first exception in
          ``__getitem__`` is re-raised here with the worker's traceback and
          the sample index) or "skip": a failing sample is left out of its
          batch and counted (``stats()["epoch_skipped"]``), until more than
          ``max_skipped`` samples of one epoch failed (an int, or a float in
          [0, 1): that fraction of the epoch; default: no limit).
        - ``spare_workers``: processes beyond ``num_workers`` that take new
          samples while others are held by slow ones, so the fast lane keeps
          its width (default max(1, num_workers // 2)).
        - ``seed_per_sample`` (default True): before each ``__getitem__``
          the worker seeds ``random``, ``torch`` and ``numpy`` from (seed,
          epoch, index), so a sample's random augmentation does not depend
          on which worker ran it or when.
        - ``arena_bytes``: each worker's shared memory arena (address space;
          memory is used only for samples in flight). Default 1 GiB.
        - ``timeout_ms``: a fixed slow-sample threshold instead of the
          learned one.
        """
        if self._py is None:
            raise StateError("configure() applies to DataLoaders over Python datasets; use NativeLoader's options")
        opts = self._ml_options
        if on_error is not None:
            if on_error not in ("raise", "skip"):
                raise ValueError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
            opts["on_error"] = on_error
        if max_skipped is not None:
            if isinstance(max_skipped, bool) or not isinstance(max_skipped, (int, float)):
                raise TypeError(f"max_skipped must be an int or a float fraction, got {type(max_skipped).__name__}")
            if isinstance(max_skipped, float) and not 0 <= max_skipped < 1:
                raise ValueError(f"max_skipped as a fraction must be in [0, 1), got {max_skipped}")
            if isinstance(max_skipped, int) and max_skipped < 0:
                raise ValueError(f"max_skipped must be >= 0, got {max_skipped}")
            opts["max_skipped"] = max_skipped
        if spare_workers is not None:
            if isinstance(spare_workers, bool) or not isinstance(spare_workers, int) or spare_workers < 0:
                raise ValueError(f"spare_workers must be an int >= 0, got {spare_workers!r}")
            opts["spare_workers"] = spare_workers
        if seed_per_sample is not None:
            opts["seed_per_sample"] = bool(seed_per_sample)
        if arena_bytes is not None:
            if isinstance(arena_bytes, bool) or not isinstance(arena_bytes, int) or arena_bytes < 1 << 16:
                raise ValueError(f"arena_bytes must be an int >= 65536, got {arena_bytes!r}")
            opts["arena_bytes"] = arena_bytes
        if timeout_ms is not None:
            if not isinstance(timeout_ms, (int, float)) or timeout_ms <= 0:
                raise ValueError(f"timeout_ms must be > 0, got {timeout_ms!r}")
            opts["timeout_ms"] = float(timeout_ms)
        return self

    def state_dict(self) -> dict[str, Any]:
        """Where the current epoch stands (a Python map-style dataset): the
        epoch, the batches yielded, the samples delivered and the RNG state
        the epoch's order came from. ``load_state_dict`` on a fresh
        DataLoader built the same way makes its next ``iter()`` resume there:
        exactly (the same remaining batches) with ``in_order=True``; with
        ``in_order=False`` every sample not yet delivered comes exactly once.
        Before any iteration it describes the start of epoch 0."""
        if self._py is None:
            raise StateError("state_dict() applies to DataLoaders over Python datasets")
        cur = self._py.current
        if cur is None:
            if self._py.resume is not None:
                return dict(self._py.resume)
            from ._pyloader import _rng_state

            return {"version": 1, "epoch": self._py.epochs, "num_yielded": 0, "in_order": True, "delivered": [],
                    "rng": _rng_state(self.generator)}
        return cur.state()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Makes the next ``iter()`` resume at ``state`` (from
        :meth:`state_dict`)."""
        if self._py is None:
            raise StateError("load_state_dict() applies to DataLoaders over Python datasets")
        if not isinstance(state, dict) or state.get("version") != 1:
            raise ValueError("load_state_dict: not a minatoloader DataLoader state (version 1)")
        if self._dataset_kind == "iterable":
            raise StateError("load_state_dict() needs a map-style dataset")
        self._py.resume = dict(state)

    def close(self) -> None:
        """Stops the loader's workers and frees its pending batches. Idempotent;
        also done when the DataLoader is garbage collected."""
        if self._py is not None:
            self._py.close()
            return
        self._loader.close()

    @property
    def closed(self) -> bool:
        if self._py is not None:
            return self._py.closed
        return self._loader.closed

    def __del__(self) -> None:
        py = getattr(self, "_py", None)
        if py is not None:
            try:
                py.close()
            except Exception:
                pass

    def __enter__(self: _Self) -> _Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        self.close()

    def _init_python(
        self, dataset: Any, batch_size: int | None, shuffle: bool | None, sampler: Any, batch_sampler: Any,
        num_workers: int, collate_fn: Any, pin_memory: bool, drop_last: bool, timeout: float,
        worker_init_fn: Any, multiprocessing_context: Any, generator: Any, prefetch_factor: int | None,
        persistent_workers: bool, pin_memory_device: str, in_order: bool,
    ) -> None:
        """torch's DataLoader.__init__ for a Python dataset: the same checks
        in the same order, with torch's messages, and the same samplers."""
        import multiprocessing as mp

        import torch
        from torch.utils.data import BatchSampler, IterableDataset, RandomSampler, SequentialSampler
        from torch.utils.data._utils.collate import default_collate, default_convert

        prefetch_factor = _check_worker_args(num_workers, timeout, prefetch_factor, persistent_workers)

        if isinstance(dataset, IterableDataset):
            kind = "iterable"
            if shuffle not in {False, None}:
                raise ValueError(
                    f"DataLoader with IterableDataset: expected unspecified shuffle option, but got shuffle={shuffle}"
                )
            if sampler is not None:
                raise ValueError(
                    f"DataLoader with IterableDataset: expected unspecified sampler option, but got sampler={sampler}"
                )
            elif batch_sampler is not None:
                raise ValueError(
                    "DataLoader with IterableDataset: expected unspecified "
                    f"batch_sampler option, but got batch_sampler={batch_sampler}"
                )
        else:
            shuffle = bool(shuffle)
            kind = "map"
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last"
                )
            batch_size = None
            drop_last = False
        elif batch_size is None:
            if drop_last:
                raise ValueError(
                    "batch_size=None option disables auto-batching and is mutually exclusive with drop_last"
                )
        if batch_size is not None and (
            isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral) or batch_size <= 0
        ):
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        if sampler is None:
            if kind == "iterable":
                from torch.utils.data.dataloader import _InfiniteConstantSampler

                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        if collate_fn is None:
            collate_fn = default_collate if batch_sampler is not None else default_convert

        if multiprocessing_context is not None:
            if num_workers > 0:
                if isinstance(multiprocessing_context, str):
                    valid = torch.multiprocessing.get_all_start_methods()
                    if multiprocessing_context not in valid:
                        raise ValueError(
                            "multiprocessing_context option "
                            f"should specify a valid start method in {valid!r}, but got "
                            f"multiprocessing_context={multiprocessing_context!r}"
                        )
                    multiprocessing_context = mp.get_context(multiprocessing_context)
                if not isinstance(multiprocessing_context, mp.context.BaseContext):
                    raise TypeError(
                        "multiprocessing_context option should be a valid context "
                        "object or a string specifying the start method, but got "
                        f"multiprocessing_context={multiprocessing_context}"
                    )
            else:
                raise ValueError(
                    "multiprocessing_context can only be used with "
                    "multi-process loading (num_workers > 0), but got "
                    f"num_workers={num_workers}"
                )
        if pin_memory and not torch.cuda.is_available():
            import warnings

            warnings.warn(
                "'pin_memory' argument is set as true but no accelerator is found, "
                "then device pinned memory won't be used.",
                stacklevel=3,
            )

        self.dataset = dataset
        self._dataset_kind = kind
        self.batch_size = batch_size  # type: ignore[assignment]
        self.shuffle = bool(shuffle)
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = int(num_workers)
        self.collate_fn = collate_fn
        self.pin_memory = pin_memory
        self.drop_last = drop_last
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.generator = generator
        self.prefetch_factor = prefetch_factor
        self.persistent_workers = persistent_workers
        self.pin_memory_device = pin_memory_device
        self.in_order = in_order
        self._ml_options: dict[str, Any] = {
            "on_error": "raise",
            "max_skipped": None,
            "spare_workers": None,
            "seed_per_sample": True,
            "arena_bytes": 1 << 30,
            "timeout_ms": None,
        }
        self._py = PythonLoading(self)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self) -> Any:
        return self.batch_sampler if self.batch_sampler is not None else self.sampler

    def __repr__(self) -> str:
        if self._py is not None:
            return (
                f"<minatoloader.DataLoader python dataset={type(self.dataset).__name__} batch_size={self.batch_size} "
                f"num_workers={self.num_workers}>"
            )
        return (
            f"<minatoloader.DataLoader batch_size={self.batch_size} shuffle={self.shuffle} "
            f"num_workers={self.num_workers} dataset={self.dataset!r}>"
        )
