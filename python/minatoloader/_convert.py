"""A torchvision folder dataset as a native dataset, only when that is
provably the same data.

torchvision's ``DatasetFolder.__getitem__`` does ``path, target =
self.samples[index]``, ``sample = self.loader(path)``, then ``transform``
and ``target_transform``. The native dataset reproduces exactly that when:

- the class is ``DatasetFolder``/``ImageFolder`` or a subclass that does not
  override ``__getitem__``, ``__getitems__``, ``__len__`` or ``loader``;
- ``loader`` is torchvision's ``default_loader`` with the PIL backend (or
  ``pil_loader``): ``Image.open(f).convert("RGB")``, which the native JPEG
  and PNG decoders match (gray replicated, palette looked up, alpha dropped
  without compositing; tests/python/test_tv_convert.py);
- every file of ``samples`` is named .jpg/.jpeg/.png (the formats the core
  decodes) and every target is an int;
- ``target_transform`` is None and every step of ``transform`` has a native
  equivalent (``_tv_map``);
- the paths and targets are those of ``dataset.samples`` as they stand now,
  in order, handed to the core in memory (``FileList(samples=...)``):
  nothing is rescanned, so a relabelled, filtered or reordered ``samples``
  is honoured (``find_classes``, ``is_valid_file`` only shaped the scan).

Anything else returns (None, the reason): the dataset then runs in Python
worker processes, which gives torchvision's own data.
"""

from __future__ import annotations

import os
from typing import Any

from .dataset import Dataset

# What DatasetFolder.__getitem__ reads through; a subclass defining any of
# these may compute something else.
_OVERRIDABLE = ("__getitem__", "__getitems__", "__len__", "loader")
# The formats the core decodes (by content: a file that is not what its
# name says fails loudly in the native loader, never silently).
_EXTENSIONS = (".jpg", ".jpeg", ".png")
_INT64 = (-(2**63), 2**63 - 1)


def _name(obj: Any) -> str:
    return str(getattr(obj, "__qualname__", None) or type(obj).__qualname__)


def _class_reason(dataset: Any, folder: type) -> str:
    """Why type(dataset) may compute other data than DatasetFolder's
    __getitem__, or ""."""
    cls = type(dataset)
    if not isinstance(dataset, folder):
        return f"{cls.__qualname__} is not a torchvision DatasetFolder"
    for klass in cls.__mro__:
        if klass is folder:
            break
        for attr in _OVERRIDABLE:
            if attr in vars(klass):
                return f"{cls.__qualname__} overrides {attr} (in {klass.__qualname__})"
    return ""


def _loader_reason(dataset: Any) -> str:
    import torchvision
    from torchvision.datasets.folder import default_loader, pil_loader

    loader = getattr(dataset, "loader", None)
    if loader is default_loader:
        backend = torchvision.get_image_backend()
        if backend != "PIL":
            return f"torchvision's image backend is {backend!r}, not 'PIL'"
        return ""
    if loader is pil_loader:
        return ""
    return f"its loader ({_name(loader)}) is not torchvision's default_loader"


def _samples(dataset: Any) -> tuple[list[tuple[str | bytes, int]], str]:
    """dataset.samples as (absolute path, int target) pairs, or ([], why not)."""
    samples = getattr(dataset, "samples", None)
    if samples is None:
        return [], "it has no samples list"
    try:
        count = len(samples)
    except TypeError:
        return [], f"its samples ({type(samples).__name__}) has no len()"
    if count != len(dataset):
        return [], f"len(samples) is {count}, len(dataset) {len(dataset)}"
    if count == 0:
        return [], "the dataset has no samples"
    rows: list[tuple[str | bytes, int]] = []
    for k in range(count):
        entry = samples[k]  # as __getitem__ reads it
        try:
            path, target = entry
            path = os.fspath(path)
        except (TypeError, ValueError):
            return [], f"samples[{k}] is not a (path, target) pair"
        if type(target) is not int:
            # torch's collate makes an int64 tensor of ints only (a numpy
            # int32 gives int32, a bool a bool tensor, ...).
            return [], f"samples[{k}]'s target is a {type(target).__name__}, not an int"
        if not _INT64[0] <= target <= _INT64[1]:
            return [], f"samples[{k}]'s target {target} does not fit in int64"
        ext = os.path.splitext(os.fsdecode(path))[1].lower()
        if ext not in _EXTENSIONS:
            return [], f"samples[{k}] ({os.fsdecode(path)!r}) is not a .jpg/.jpeg/.png file"
        rows.append((os.path.abspath(path), target))
    return rows, ""


def native_equivalent(dataset: Any) -> tuple[Dataset[Any] | None, str]:
    """(a native dataset yielding what ``dataset`` yields, "") or (None, why not)."""
    try:
        from torchvision.datasets import DatasetFolder
    except ImportError:
        return None, "torchvision is not importable"
    reason = _class_reason(dataset, DatasetFolder) or _loader_reason(dataset)
    if reason:
        return None, reason
    if getattr(dataset, "target_transform", None) is not None:
        return None, f"target_transform is set ({_name(dataset.target_transform)})"

    from ._tv_map import from_torchvision

    compose, reason = from_torchvision(getattr(dataset, "transform", None))
    if compose is None:
        return None, reason
    rows, reason = _samples(dataset)
    if reason:
        return None, reason

    from .datasets import FileList
    from .errors import InvalidArgumentError

    try:
        native = FileList(samples=rows, transform=compose)
    except InvalidArgumentError as exc:
        # e.g. a chain whose images do not all come out the same size.
        return None, f"the native dataset refused it: {exc}"
    if len(native) != len(rows):
        return None, f"the native dataset has {len(native)} samples, samples {len(rows)}"
    return native, ""
