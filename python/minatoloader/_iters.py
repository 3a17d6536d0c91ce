"""The epoch iterators' common part, and the single-process one.

:class:`BaseIter` does what torch's ``_BaseDataLoaderIter`` does for every
epoch, in torch's order: the pin_memory warnings, ``iter()`` of the index
sampler, the base seed drawn from the generator (once with persistent
workers), the count of yielded batches, the IterableDataset length warning
and pinning. It adds the resume point (``state_dict``). Subclasses supply
``next_data``: :class:`InlineIter` (``num_workers=0``, in this process, as
torch), ``_iter_workers.IterableWorkersIter`` (an IterableDataset in worker
processes) and ``_iter_fed.FedIter`` (everything the Go core schedules).
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Iterator
from typing import Any

from ._goloader import Feeder
from ._session import Session, draw_base_seed, rng_state, set_rng_state
from .errors import StateError

ITERABLE = 1  # torch's _DatasetKind.Iterable
STATE_VERSION = 1


def index_batches(index_sampler: Any) -> Iterator[Any]:
    """iter() of the index sampler. torch's own BatchSampler is iterated
    here to the same batches, with each batch's list built as it fills: its
    ``[sampler_iter] * batch_size`` allocates batch_size slots first (a
    MemoryError for a batch_size of 2**40, which torch's constructor
    takes)."""
    try:
        from torch.utils.data import BatchSampler
    except ImportError:
        return iter(index_sampler)
    if type(index_sampler) is not BatchSampler:
        return iter(index_sampler)
    return _batched(index_sampler.sampler, index_sampler.batch_size, index_sampler.drop_last)


def _batched(sampler: Any, size: int, drop_last: bool) -> Iterator[list[Any]]:
    it = iter(sampler)
    while True:
        batch = list(itertools.islice(it, size))
        if not batch or (drop_last and len(batch) < size):
            return
        yield batch


def _epoch_samplers(dl: Any) -> list[Any]:
    """The samplers with set_epoch behind the index sampler (a
    DistributedSampler given as sampler, or inside a batch_sampler)."""
    found = []
    for s in (dl.sampler, getattr(dl.batch_sampler, "sampler", None)):
        if s is not None and callable(getattr(s, "set_epoch", None)) and isinstance(getattr(s, "epoch", None), int):
            if all(s is not f for f in found):
                found.append(s)
    return found


def _pin_enabled(dl: Any) -> bool:
    """torch's warnings about pin_memory, and whether to pin."""
    if not dl.pin_memory:
        return False
    if dl.pin_memory_device:
        warnings.warn(
            "pin_memory_device is deprecated, the current accelerator will be used as the device,"
            f"ignore pin_memory_device='{dl.pin_memory_device}'.",
            stacklevel=4,
        )
    try:
        import torch
    except ImportError:
        return False
    acc = getattr(torch, "accelerator", None)  # torch >= 2.6; torch.cuda before
    if not (acc.is_available() if acc is not None else torch.cuda.is_available()):
        warnings.warn(
            "'pin_memory' argument is set as true but no accelerator is found, "
            "then device pinned memory won't be used.",
            stacklevel=4,
        )
        return False
    return True


class BaseIter:
    """One epoch of a DataLoader."""

    go: Any = None  # the GoLoader running the epoch, if any

    def __init__(self, session: Session, dl: Any) -> None:
        self.session, self.dl = session, dl
        self.done = False
        self.iterable = dl._dataset_kind == ITERABLE
        self.auto = dl._auto_collation
        self.timeout = dl.timeout
        self.len_called = getattr(dl, "_IterableDataset_len_called", None)
        self.pin = _pin_enabled(dl)
        resume, session.resume = session.resume, None
        self.epoch = session.epochs if resume is None else int(resume["epoch"])
        session.epochs = self.epoch + 1
        # torch: iter(index sampler), then the base seed from the generator;
        # the sampler's own draws happen at its first next(). The RNG is
        # snapshot first so that state_dict() can replay this epoch's order.
        if resume is not None:
            set_rng_state(dl.generator, resume["rng"])
            if resume.get("sampler_epoch") is not None:
                # A DistributedSampler's epoch: a trainer that resumes may
                # call iter() before set_epoch (Lightning does).
                for s in _epoch_samplers(dl):
                    s.set_epoch(int(resume["sampler_epoch"]))
        self.rng = rng_state(dl.generator)
        self.sampler_epoch = next((getattr(s, "epoch", None) for s in _epoch_samplers(dl)), None)
        self.sampler_iter = None if self.iterable else index_batches(dl._index_sampler)
        self.persistent = bool(dl.persistent_workers) and dl.num_workers > 0
        if self.persistent and session.base_seed is not None:
            self.base_seed = session.base_seed
        else:
            self.base_seed = draw_base_seed(dl.generator)
            if self.persistent:
                session.base_seed = self.base_seed
        self.num_yielded = 0
        self.delivered: list[int] = []  # sample indices, for state_dict
        skip_batches, skip_samples = 0, set()
        if resume is not None:
            if resume["in_order"]:
                skip_batches = int(resume["num_yielded"])
            else:
                skip_samples = set(resume["delivered"])
            self.num_yielded = int(resume["num_yielded"])
            self.delivered = list(resume["delivered"])
        self.feeder = None
        if self.sampler_iter is not None:
            self.feeder = Feeder(self.sampler_iter, auto=self.auto, skip_batches=skip_batches, skip_samples=skip_samples)

    def __iter__(self) -> "BaseIter":
        return self

    def __len__(self) -> int:
        return len(self.dl._index_sampler)

    def __next__(self) -> Any:
        if self.done:
            raise StopIteration
        data = self.next_data()
        self.num_yielded += 1
        if self.iterable and self.len_called is not None and self.num_yielded > self.len_called:
            msg = (
                f"Length of IterableDataset {self.dl.dataset} was reported to be {self.len_called}"
                f"(when accessing len(dataloader)), but {self.num_yielded} samples have been fetched. "
            )
            if self.dl.num_workers > 0:
                msg += (
                    "For multiprocessing data-loading, this could be caused by not properly configuring the "
                    "IterableDataset replica at each worker. Please see "
                    "https://pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset for examples."
                )
            warnings.warn(msg, stacklevel=2)
        if self.pin:
            from ._collate import pin

            data = pin(data)
        return data

    def next_data(self) -> Any:
        raise NotImplementedError

    def finish(self) -> Any:
        """Ends the epoch: keeps its stats, stops, raises StopIteration."""
        self.done = True
        go = self.go
        if go is not None and not go.closed:
            try:
                self.session.last_stats = go.stats()
            except Exception:
                pass
        self.close()
        raise StopIteration

    def close(self) -> None:
        self.done = True

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def state(self) -> dict[str, Any]:
        if self.iterable:
            raise StateError("state_dict() needs a map-style dataset: an IterableDataset has no indices to resume at")
        return {
            "version": STATE_VERSION,
            "epoch": self.epoch,
            "num_yielded": self.num_yielded,
            "in_order": bool(self.dl.in_order) or self.dl.num_workers == 0,
            "delivered": list(self.delivered),
            "rng": self.rng,
            "sampler_epoch": self.sampler_epoch,
        }


class InlineIter(BaseIter):
    """``num_workers=0`` over a Python dataset: loads in this process, as
    torch does (``__getitems__`` when the dataset has it)."""

    def __init__(self, session: Session, dl: Any) -> None:
        super().__init__(session, dl)
        self.collate = dl.collate_fn
        if self.feeder is not None:
            self.feeder.ints = False  # any key a map-style dataset takes
        else:
            self.data_iter = iter(dl.dataset)
            self.ended = False

    def next_data(self) -> Any:
        dl = self.dl
        if self.iterable:
            if self.ended:
                self.finish()
            if self.auto:
                data = []
                for _ in range(dl.batch_size):
                    try:
                        data.append(next(self.data_iter))
                    except StopIteration:
                        self.ended = True
                        break
                if not data or (dl.drop_last and len(data) < dl.batch_size):
                    self.finish()
                return self.collate(data)
            try:
                return self.collate(next(self.data_iter))
            except StopIteration:
                self.finish()
        assert self.feeder is not None
        b = self.feeder.pull()
        if b is None:
            self.finish()
        assert b is not None
        if self.auto:
            getitems = getattr(dl.dataset, "__getitems__", None)
            data = getitems(b) if getitems else [dl.dataset[i] for i in b]
            out = self.collate(data)
        else:
            out = self.collate(dl.dataset[b[0]])
        self.delivered.extend(b)
        return out
