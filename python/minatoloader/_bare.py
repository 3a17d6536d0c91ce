"""DataLoader's base class on an install without torch (numpy only).

With torch installed, ``minatoloader.DataLoader`` subclasses
``torch.utils.data.DataLoader`` and torch's ``__init__`` checks the
arguments and builds the samplers. Without torch only native datasets can
run; this module gives them torch's argument checks, attributes and the
sequential/random samplers (numpy's generator in place of torch's).
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Iterator
from typing import Any, Generic, TypeVar

import numpy as np

_T_co = TypeVar("_T_co", covariant=True)
_rng: np.random.Generator | None = None


def global_rng() -> np.random.Generator:
    """The generator a shuffle without ``generator=`` draws from (torch's
    global RNG plays this part when torch is installed)."""
    global _rng
    if _rng is None:
        _rng = np.random.default_rng(int.from_bytes(os.urandom(8), "little"))
    return _rng


def check_worker_args(num_workers: Any, timeout: Any, prefetch_factor: int | None, persistent_workers: bool) -> int | None:
    """torch's checks of the worker arguments, with torch's messages (and a
    clear one for a wrong type); returns prefetch_factor with torch's
    default (2 with workers)."""
    if isinstance(num_workers, bool) or not isinstance(num_workers, numbers.Integral):
        raise TypeError(f"num_workers option should be an int, got {type(num_workers).__name__}")
    num_workers = int(num_workers)
    if num_workers < 0:
        raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
    if isinstance(timeout, bool) or not isinstance(timeout, numbers.Real):
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


class SequentialSampler:
    def __init__(self, data_source: Any) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler:
    """A permutation per epoch, from ``generator`` (a numpy Generator) or
    the module's generator."""

    def __init__(self, data_source: Any, generator: Any = None) -> None:
        self.data_source, self.generator = data_source, generator

    def __iter__(self) -> Iterator[int]:
        rng = self.generator if self.generator is not None else global_rng()
        yield from (int(i) for i in rng.permutation(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class BatchSampler:
    def __init__(self, sampler: Any, batch_size: int, drop_last: bool) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler: Any = sampler
        self.batch_size: int = int(batch_size)
        self.drop_last: bool = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        batch: list[int] = []
        for i in self.sampler:
            batch.append(i)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n: int = len(self.sampler)
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)


class BareDataLoader(Generic[_T_co]):
    """torch's DataLoader.__init__ for a native dataset, without torch."""

    _dataset_kind = 0
    _IterableDataset_len_called = None

    def __init__(
        self, dataset: Any, batch_size: int | None = 1, shuffle: bool | None = None, sampler: Any = None,
        batch_sampler: Any = None, num_workers: int = 0, collate_fn: Any = None, pin_memory: bool = False,
        drop_last: bool = False, timeout: float = 0, worker_init_fn: Any = None, multiprocessing_context: Any = None,
        generator: Any = None, *, prefetch_factor: int | None = None, persistent_workers: bool = False,
        pin_memory_device: str = "", in_order: bool = True,
    ) -> None:
        from .dataset import Dataset

        if not isinstance(dataset, Dataset):
            raise TypeError(
                "minatoloader.DataLoader over a Python dataset needs torch (pip install torch); "
                f"without it only native datasets run, got {type(dataset).__name__}"
            )
        prefetch_factor = check_worker_args(num_workers, timeout, prefetch_factor, persistent_workers)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last"
                )
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        if sampler is None:
            sampler = RandomSampler(dataset, generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self) -> Any:
        return self.batch_sampler if self._auto_collation else self.sampler

    def __len__(self) -> int:
        return len(self._index_sampler)
