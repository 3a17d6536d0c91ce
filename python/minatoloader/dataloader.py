"""DataLoader: torch's DataLoader, with the Go core underneath.

``minatoloader.DataLoader`` is a subclass of ``torch.utils.data.DataLoader``
(when torch is installed): torch's own ``__init__`` checks the arguments
and sets every attribute (``dataset``, ``sampler``, ``batch_sampler``,
``collate_fn``, ...), so code that inspects or re-creates a DataLoader
(PyTorch Lightning injecting a DistributedSampler, type checkers) sees
torch's. What differs is the iterator. The data path is chosen once:

- a native dataset (:mod:`minatoloader.datasets`, ``SyntheticDataset``),
  or a torchvision ImageFolder/DatasetFolder that provably yields the same
  data natively (``_convert``): decoding and transforms run in the Go core,
  fed in the order of torch's sampler (``_iter_fed.NativeIter``);
- any other map-style dataset with workers: worker processes that the Go
  core schedules one sample at a time (``_iter_fed.PyMapIter``);
- an IterableDataset with workers (``_iter_workers``), or
  ``num_workers=0`` (``_iters.InlineIter``): as torch does.

``stats()["path"]`` says which ("native", "torchvision->native",
"python") and ``stats()["path_reason"]`` why a torchvision dataset did not
run natively.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable, Iterable, TypeVar, Union, cast

from . import _bare
from ._session import Session, rng_state
from .dataset import Dataset as _NativeDataset
from .errors import StateError, UnsupportedArgumentError

_T_co = TypeVar("_T_co", covariant=True)
_T = TypeVar("_T")

if TYPE_CHECKING:
    from torch.utils.data import DataLoader as _Base
    from torch.utils.data import Dataset as _TorchDataset
    from torch.utils.data import Sampler

    # The constructor's annotations read as torch's (test_signature), and a
    # native dataset type-checks too.
    Dataset = Union[_TorchDataset[_T], _NativeDataset[_T]]
    _collate_fn_t = Callable[[list[Any]], Any]
    _worker_init_fn_t = Callable[[int], None]
else:
    try:
        from torch.utils.data import DataLoader as _Base
    except ImportError:  # a numpy-only install: native datasets only
        _Base = _bare.BareDataLoader
_Self = TypeVar("_Self", bound="DataLoader[Any]")
_log = logging.getLogger("minatoloader")

_PY_ONLY_OPTIONS = ("spare_workers", "seed_per_sample", "arena_bytes")


def _native_equivalent(dataset: Any) -> tuple[_NativeDataset[Any] | None, str]:
    """A native dataset that yields exactly what ``dataset`` yields, or
    (None, why not). Only torchvision's folder datasets are considered."""
    if not type(dataset).__module__.startswith("torchvision.") and not any(
        c.__module__.startswith("torchvision.datasets") for c in type(dataset).__mro__[1:]
    ):
        return None, ""
    from ._convert import native_equivalent

    result: tuple[_NativeDataset[Any] | None, str] = native_equivalent(dataset)
    return result


class DataLoader(_Base[_T_co]):
    """A drop-in for ``torch.utils.data.DataLoader``: the same constructor,
    attributes and batches (see the module's doc for what runs where).
    Beyond torch: :meth:`configure` (skip policy, spare workers, per-sample
    seeds), :meth:`stats`, :meth:`set_epoch`, :meth:`close`, and
    :meth:`state_dict`/:meth:`load_state_dict` (exact mid-epoch resume) on
    every path."""

    def __init__(  # type: ignore[no-untyped-def]
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
        prefetch_factor = _bare.check_worker_args(num_workers, timeout, prefetch_factor, persistent_workers)
        native: _NativeDataset[Any] | None = None
        path, reason = "python", ""
        if isinstance(dataset, _NativeDataset):
            native, path = dataset, "native"
            if worker_init_fn is not None:
                raise UnsupportedArgumentError(
                    f"minatoloader.DataLoader: worker_init_fn={worker_init_fn!r} cannot run for a native dataset: "
                    "its workers are Go goroutines, not Python processes"
                )
        else:
            native, reason = _native_equivalent(dataset)
            if native is not None and worker_init_fn is not None:
                native, reason = None, "worker_init_fn is set (it runs in Python worker processes)"
            if native is not None:
                path = "torchvision->native"
        super().__init__(
            cast(Any, dataset), batch_size, shuffle, sampler, batch_sampler, num_workers, collate_fn, pin_memory, drop_last,
            timeout, worker_init_fn, multiprocessing_context, generator, prefetch_factor=prefetch_factor,
            persistent_workers=persistent_workers, pin_memory_device=pin_memory_device, in_order=in_order,
        )
        name = f"{type(dataset).__module__}.{type(dataset).__qualname__}"
        if path == "torchvision->native":
            _log.info("minatoloader: running %s natively (decoding and transforms in the Go core)", name)
        elif reason:
            _log.info("minatoloader: cannot run %s natively: %s", name, reason)
        self._native_dataset = native
        self._session = Session(self)
        self._session.path, self._session.path_reason = path, reason
        self._ml_options: dict[str, Any] = {
            "on_error": "raise",
            "max_skipped": None,
            "spare_workers": None,
            "seed_per_sample": True,
            "arena_bytes": 1 << 30,
            "timeout_ms": None,
        }

    # ------------------------------------------------------------ epochs
    def _iterator_class(self) -> Any:
        if self._native_dataset is not None:
            from ._iter_fed import NativeIter

            return NativeIter
        if self.num_workers == 0:
            from ._iters import InlineIter

            return InlineIter
        if self._dataset_kind == 1:  # Iterable
            from ._iter_workers import IterableWorkersIter

            return IterableWorkersIter
        from ._iter_fed import PyMapIter

        return PyMapIter

    def __iter__(self) -> Any:
        """Starts an epoch. As torch's, iterators are independent
        (``zip(loader, loader)``) except with persistent workers, where the
        new epoch takes over the workers from the running one."""
        return self._get_iterator()

    def _get_iterator(self) -> Any:
        if self.num_workers > 0 and hasattr(_Base, "check_worker_number_rationality"):
            self.check_worker_number_rationality()
        return self._session.start(self._iterator_class(), self)

    @property
    def path(self) -> str:
        """Which path runs the data: "native", "torchvision->native" or "python"."""
        return self._session.path

    def set_epoch(self, epoch: int) -> None:
        """Makes the next ``iter()`` run epoch ``epoch`` (the epoch in
        per-sample seeds and native augmentations; a DistributedSampler's
        own set_epoch is still the user's to call, as with torch)."""
        if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 0:
            raise ValueError(f"epoch must be an int >= 0, got {epoch!r}")
        self._session.epochs = int(epoch)

    def stats(self) -> dict[str, Any]:
        """The core's stats of the running epoch (else of the last one):
        lanes, threshold, skipped samples...; with "path" and, when a
        torchvision dataset runs in Python, "path_reason"."""
        return self._session.stats()

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
        """minatoloader's options beyond torch's signature; they apply from
        the next ``iter()``. Returns self.

        - ``on_error``: "raise" (default: the first exception in
          ``__getitem__`` is re-raised here with the worker's traceback and
          the sample index) or "skip": a failing sample is left out of its
          batch and counted (``stats()["epoch_skipped"]``), until more than
          ``max_skipped`` samples of one epoch failed (an int, or a float in
          [0, 1): that fraction of the epoch; default: no limit).
        - ``timeout_ms``: a fixed slow-sample threshold instead of the
          learned one.
        - Python datasets only: ``spare_workers`` (processes beyond
          ``num_workers`` that take new samples while others are held by
          slow ones; default max(1, num_workers // 2)), ``seed_per_sample``
          (default True: each ``__getitem__`` runs with ``random``, torch
          and numpy seeded from (seed, epoch, index), so augmentation does
          not depend on which worker ran it) and ``arena_bytes`` (each
          worker's shared memory arena; default 1 GiB of address space).
        """
        opts = self._ml_options
        given = {"spare_workers": spare_workers, "seed_per_sample": seed_per_sample, "arena_bytes": arena_bytes}
        if self._native_dataset is not None:
            for name, value in given.items():
                if value is not None:
                    raise StateError(f"configure({name}=...) applies to Python datasets; this one runs natively")
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
            if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, (int, float)) or timeout_ms <= 0:
                raise ValueError(f"timeout_ms must be > 0, got {timeout_ms!r}")
            opts["timeout_ms"] = float(timeout_ms)
        return self

    # -------------------------------------------------------------- state
    def state_dict(self) -> dict[str, Any]:
        """Where the running epoch stands (a map-style dataset, any path):
        the epoch, the batches yielded, the samples delivered and the RNG
        state the epoch's order was drawn from. ``load_state_dict`` on a
        fresh DataLoader built the same way makes its next ``iter()`` resume
        there: exactly (the same remaining batches) with ``in_order=True``;
        with ``in_order=False`` every sample not yet delivered comes exactly
        once. Between epochs it describes the start of the next one."""
        s = self._session
        cur = s.current
        if cur is not None:
            return cur.state()  # type: ignore[no-any-return]
        if s.resume is not None:
            return dict(s.resume)
        if self._dataset_kind == 1:
            raise StateError("state_dict() needs a map-style dataset: an IterableDataset has no indices to resume at")
        from ._iters import _epoch_samplers

        epoch = next((getattr(x, "epoch", None) for x in _epoch_samplers(self)), None)
        return {"version": 1, "epoch": s.epochs, "num_yielded": 0, "in_order": True, "delivered": [],
                "rng": rng_state(self.generator), "sampler_epoch": epoch}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Makes the next ``iter()`` resume at ``state`` (from :meth:`state_dict`)."""
        if not isinstance(state, dict) or state.get("version") != 1:
            raise ValueError("load_state_dict: not a minatoloader DataLoader state (version 1)")
        if self._dataset_kind == 1:
            raise StateError("load_state_dict() needs a map-style dataset")
        self._session.resume = dict(state)

    # ---------------------------------------------------------- lifetime
    def close(self) -> None:
        """Stops the loader's workers and frees its pending batches.
        Idempotent; also done when the DataLoader is garbage collected."""
        s = getattr(self, "_session", None)
        if s is not None:
            s.close()

    @property
    def closed(self) -> bool:
        return self._session.closed

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self: _Self) -> _Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"<minatoloader.DataLoader path={self.path} dataset={type(self.dataset).__name__} "
            f"batch_size={self.batch_size} num_workers={self.num_workers}>"
        )
