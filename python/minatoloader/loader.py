"""NativeLoader: the full-featured loader over the Go core."""

from __future__ import annotations

import importlib.util
import json
import math
import numbers
from collections.abc import Iterator
from typing import Any, Callable

from . import _native
from ._goloader import GoLoader
from .dataset import Dataset
from .dlpack import Batch, Tensor, export_capsule
from .errors import InvalidArgumentError

OUTPUTS = ("auto", "torch", "numpy", "dlpack")


def _plain(name: str, value: Any) -> Any:
    """A JSON-encodable copy of an option value (numpy scalars become Python
    numbers); non-finite numbers are rejected naming the option. Everything
    else is left for the library to validate."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if type(value).__name__ == "bool_":  # numpy.bool_
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        f = float(value)
        if not math.isfinite(f):
            raise InvalidArgumentError(f'config: option "{name}": must be finite, got {f}')
        return f
    if isinstance(value, (list, tuple)):
        return [_plain(name, v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(f"{name}.{k}", v) for k, v in value.items()}
    raise InvalidArgumentError(f'config: option "{name}": cannot pass a {type(value).__name__} ({value!r})')


def _resolve_output(output: str) -> str:
    if output not in OUTPUTS:
        raise InvalidArgumentError(
            f"NativeLoader: output must be one of {', '.join(map(repr, OUTPUTS))}, got {output!r}"
        )
    if output == "auto":
        try:
            return "torch" if importlib.util.find_spec("torch") is not None else "numpy"
        except ValueError:  # sys.modules["torch"] is None: torch blocked
            return "numpy"
    return output


def converter(output: str) -> Callable[[Tensor], Any]:
    if output == "torch":
        try:
            import torch
        except ImportError as exc:
            raise ImportError(
                "minatoloader: output='torch' needs PyTorch; install torch or use output='numpy'"
            ) from exc
        convert: Callable[[Tensor], Any] = torch.from_dlpack
        return convert
    import numpy

    if not hasattr(numpy, "from_dlpack"):
        raise ImportError(
            f"minatoloader: output='numpy' needs numpy >= 1.23 (numpy.from_dlpack); found {numpy.__version__}"
        )
    return numpy.from_dlpack


class _Export:
    """The smallest DLPack producer over a batch handle, for
    numpy.from_dlpack (which wants __dlpack__, not a capsule)."""

    __slots__ = ("handle", "field")

    def __init__(self, handle: int, field: int) -> None:
        self.handle, self.field = handle, field

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None, dl_device: Any = None, copy: Any = None) -> Any:
        if copy:
            raise BufferError("minatoloader: copy=True is not supported: batches are exported without a copy")
        versioned = max_version is not None and int(max_version[0]) >= 1
        return export_capsule(self.handle, self.field, versioned)


def export_fields(handle: int, fields: tuple[int, ...], output: str, convert: Callable[[Any], Any]) -> tuple[Any, ...]:
    """The batch's fields as torch tensors or numpy arrays, exported from
    the handle without a copy (each keeps the batch memory alive; the
    caller releases the handle)."""
    if output == "torch":
        # torch takes a legacy capsule directly: no Python-level
        # __dlpack__ round trip.
        return tuple(convert(export_capsule(handle, f, False)) for f in fields)
    return tuple(convert(_Export(handle, f)) for f in fields)


class NativeLoader(GoLoader):
    """Iterates over batches of a native dataset built by the Go core.

    Each item is ``(data, labels)`` (``(data, labels, indices)`` with
    ``return_indices=True``): torch tensors (``output="torch"``), numpy arrays
    (``"numpy"``), or :class:`minatoloader.dlpack.Tensor` objects
    (``"dlpack"``); ``"auto"`` is torch when it is installed, else numpy. The
    tensors are views of the batch memory (DLPack, no copy).

    Every ``iter(loader)`` starts the next epoch: epochs are numbered from 0,
    or from the number given to :meth:`set_epoch`, and the order of samples
    is a function of ``(seed, epoch)``. Starting an epoch cancels the one
    still running (after a ``break``, say).

    The options are those of the library's JSON configuration, under the
    same names:

    * ``batch_size``, ``drop_last``, ``shuffle``, ``seed``, ``in_order``
      (batches in sampler order; ``False`` lets a batch of fast samples go
      first);
    * ``rank``, ``world_size``: DistributedSampler-style slicing;
    * ``workers`` (starting width of the fast lane), ``max_workers``
      (None: the number of CPUs), ``slow_workers`` (None: ``workers // 2``,
      at least 1), ``adaptive`` and the scaling formula's ``alpha``,
      ``beta``, ``theta``, ``scale_interval_ms``;
    * ``timeout_ms``: the slow-sample threshold; 0 learns it (the
      ``quantile`` of a streaming estimate after ``warmup_samples``, the
      ``fallback_quantile`` while more than ``slow_fraction_limit`` of recent
      samples go slow), never below ``min_timeout_ms``;
    * ``prefetch_batches``, ``max_inflight`` (None: derived), ``slow_max_age``;
    * ``prefetch_epoch``: start the next epoch once this one has dispatched
      its last sample (adopted by the next ``iter()``, dropped after
      ``set_epoch`` to another epoch), so epoch boundaries do not starve the
      consumer;
    * ``on_error``: "raise" (a failing sample ends its epoch with a
      :class:`SampleError` naming it and its file) or "skip" (left out and
      counted in ``stats()["epoch_skipped"]``, up to ``max_skipped``
      samples an epoch; -1: no limit); a sample whose dtype or shape cannot
      be batched counts as failing;
    * ``stop_timeout_ms``: how long stopping an epoch (``close()``, the next
      ``iter()``) waits for a read that never returns (a stuck network file
      system) before abandoning it (docs/failure-modes.md).

    ``batch_timeout`` (seconds, 0: no limit) bounds the wait for one batch:
    a longer wait raises ``RuntimeError`` as torch's DataLoader ``timeout``
    does. A bad value raises :class:`InvalidArgumentError` naming the option.
    """

    _kind = "loader"

    dataset: Dataset[Any]
    batch_size: int
    _output: str
    _convert: Callable[[Tensor], Any] | None
    _return_indices: bool
    _batch_timeout: float
    _config: dict[str, Any]
    _next_epoch: int
    _generation: int

    def __init__(
        self,
        dataset: Dataset[Any],
        batch_size: int = 1,
        *,
        shuffle: bool = False,
        seed: int = 0,
        drop_last: bool = False,
        in_order: bool = True,
        rank: int = 0,
        world_size: int = 1,
        workers: int = 4,
        max_workers: int | None = None,
        slow_workers: int | None = None,
        adaptive: bool = True,
        alpha: float = 2.0,
        beta: float = 1.0,
        theta: float = 0.7,
        scale_interval_ms: int = 250,
        timeout_ms: float = 0.0,
        warmup_samples: int = 64,
        quantile: float = 0.75,
        fallback_quantile: float = 0.9,
        slow_fraction_limit: float = 0.35,
        min_timeout_ms: float = 0.1,
        prefetch_batches: int = 2,
        max_inflight: int | None = None,
        slow_max_age: int = 2,
        prefetch_epoch: bool = True,
        output: str = "auto",
        return_indices: bool = False,
        batch_timeout: float = 0.0,
        on_error: str = "raise",
        max_skipped: int = -1,
        stop_timeout_ms: int = 2000,
    ) -> None:
        if not isinstance(dataset, Dataset):
            raise TypeError(
                "minatoloader.NativeLoader runs native datasets (minatoloader.SyntheticDataset, minatoloader.datasets.*); "
                f"got {type(dataset).__module__}.{type(dataset).__qualname__}"
            )
        if isinstance(batch_timeout, bool) or not isinstance(batch_timeout, numbers.Real) or not batch_timeout >= 0:
            raise InvalidArgumentError(
                f"NativeLoader: batch_timeout must be a number >= 0 (seconds), got {batch_timeout!r}"
            )
        self._output = _resolve_output(output)
        # Import torch/numpy now, not on the first batch: a first import of
        # torch takes about a second and would land in time-to-first-batch.
        self._convert = None if self._output == "dlpack" else converter(self._output)
        self._item_fields: tuple[int, ...] | None = None
        self._return_indices = bool(return_indices)
        self._batch_timeout = float(batch_timeout)
        options: dict[str, Any] = {
            "batch_size": batch_size,
            "shuffle": shuffle,
            "seed": seed,
            "drop_last": drop_last,
            "in_order": in_order,
            "rank": rank,
            "world_size": world_size,
            "workers": workers,
            "max_workers": 0 if max_workers is None else max_workers,
            "slow_workers": 0 if slow_workers is None else slow_workers,
            "adaptive": adaptive,
            "alpha": alpha,
            "beta": beta,
            "theta": theta,
            "scale_interval_ms": scale_interval_ms,
            "timeout_ms": timeout_ms,
            "warmup_samples": warmup_samples,
            "quantile": quantile,
            "fallback_quantile": fallback_quantile,
            "slow_fraction_limit": slow_fraction_limit,
            "min_timeout_ms": min_timeout_ms,
            "prefetch_batches": prefetch_batches,
            "max_inflight": 0 if max_inflight is None else max_inflight,
            "slow_max_age": slow_max_age,
            "prefetch_epoch": prefetch_epoch,
            "on_error": on_error,
            "max_skipped": max_skipped,
            "stop_timeout_ms": stop_timeout_ms,
        }
        config = {name: _plain(name, value) for name, value in options.items()}
        config["dataset"] = _plain("dataset", dataset.config())
        self._config = config
        self.dataset = dataset
        self.batch_size = batch_size  # validated by the library below
        self._next_epoch = 0
        self._generation = 0
        super().__init__(config)

    @property
    def config(self) -> dict[str, Any]:
        """The JSON configuration sent to the library (a copy)."""
        copy: dict[str, Any] = json.loads(json.dumps(self._config))
        return copy

    @property
    def output(self) -> str:
        """ "torch", "numpy" or "dlpack" ("auto" resolved)."""
        return self._output

    @property
    def epoch(self) -> int:
        """The epoch the next ``iter()`` starts."""
        return self._next_epoch

    def set_epoch(self, epoch: int) -> None:
        """Makes the next ``iter()`` start epoch ``epoch`` (then epoch+1, ...),
        like ``DistributedSampler.set_epoch``."""
        if isinstance(epoch, bool) or not isinstance(epoch, numbers.Integral) or epoch < 0:
            raise InvalidArgumentError(f"set_epoch: epoch must be an int >= 0, got {epoch!r}")
        self._next_epoch = int(epoch)

    def __len__(self) -> int:
        """Batches per epoch (after rank slicing and drop_last)."""
        return self.lengths()[0]

    def num_samples(self) -> int:
        """Samples per epoch (after rank slicing and drop_last)."""
        return self.lengths()[1]

    def __iter__(self) -> EpochIterator:
        handle = self._live_handle()
        epoch = self._next_epoch
        _native.loader_start_epoch(handle, epoch)
        self._next_epoch = epoch + 1
        self._generation += 1
        return EpochIterator(self, self._generation, epoch)

    def _wrap(self, handle: int) -> tuple[Any, ...]:
        """Turns a batch handle into the iterator's item: the dataset's
        fields in order (a SyntheticDataset's data and label), then the
        indices with ``return_indices``. For torch and numpy outputs the
        fields are exported straight from the handle, which is released at
        once (the tensors keep the memory alive)."""
        if self._output == "dlpack":
            batch = Batch(self.take_batch())
            tensors = [batch.field(f) for f in range(len(batch.names))]
            if self._return_indices:
                tensors.append(batch.indices)
            return tuple(tensors)
        convert = self._convert
        assert convert is not None
        try:
            fields = self._item_fields
            if fields is None:  # the same for every batch of this loader
                n = _native.batch_info(handle).num_fields
                fields = (*range(n), _native.FIELD_INDICES) if self._return_indices else tuple(range(n))
                self._item_fields = fields
            return export_fields(handle, fields, self._output, convert)
        finally:
            self.release_batch()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"next epoch {self._next_epoch}"
        return f"<minatoloader.NativeLoader batch_size={self.batch_size} dataset={self.dataset!r} {state}>"


class EpochIterator(Iterator[tuple[Any, ...]]):
    """The batches of one epoch. Starting another epoch on the same loader
    ends this iterator (its next ``next()`` raises RuntimeError)."""

    def __init__(self, loader: NativeLoader, generation: int, epoch: int) -> None:
        self._loader = loader
        self._generation = generation
        self.epoch = epoch
        self._done = False

    def __iter__(self) -> EpochIterator:
        return self

    def __len__(self) -> int:
        return len(self._loader)

    def __next__(self) -> tuple[Any, ...]:
        if self._done:
            raise StopIteration
        loader = self._loader
        if loader._generation != self._generation:
            self._done = True
            raise RuntimeError(
                f"minatoloader: epoch {self.epoch} was cancelled because a newer iter(loader) "
                "started another epoch on the same loader"
            )
        try:
            handle = loader.next_batch(loader._batch_timeout)
        except BaseException as e:
            # A timeout leaves the epoch running (torch's iterator goes on).
            self._done = not getattr(e, "batch_timeout", False)
            raise
        if not handle:
            self._done = True
            raise StopIteration
        # The handle stays with the loader until _wrap released it, so an
        # interrupt in between cannot leak it (the next call releases it).
        return loader._wrap(handle)
