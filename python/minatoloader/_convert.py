"""A torchvision folder dataset as a native dataset, only when that is
provably the same data.

torchvision's ``DatasetFolder.__getitem__`` does ``path, target =
self.samples[index]``, ``sample = self.loader(path)``, then ``transform``
and ``target_transform``. The native dataset reproduces exactly that when:

- the class is ``DatasetFolder``/``ImageFolder`` or a subclass that does not
  override ``__getitem__`` or ``__len__``;
- ``loader`` is torchvision's ``default_loader`` (PIL backend) or
  ``pil_loader``: open the file and convert it to RGB, which the native
  decoders match (tests/python/test_image_parity.py);
- ``target_transform`` is None and every step of ``transform`` has a native
  equivalent (``transforms.from_torchvision``);
- the paths and targets are those of ``dataset.samples`` as they stand now,
  in order, handed to the core as a file list (nothing is rescanned, so a
  relabelled, filtered or reordered ``samples`` is honoured).

Anything else returns (None, the reason): the dataset then runs in Python
worker processes, which gives torchvision's own data.
"""

from __future__ import annotations

import json
import numbers
import os
import tempfile
from typing import Any

from .dataset import Dataset


def native_equivalent(dataset: Any) -> tuple[Dataset[Any] | None, str]:
    """(a native dataset yielding what ``dataset`` yields, "") or (None, why not)."""
    try:
        import torchvision
        from torchvision.datasets import DatasetFolder
        from torchvision.datasets.folder import default_loader, pil_loader
    except ImportError:
        return None, ""
    cls = type(dataset)
    if not isinstance(dataset, DatasetFolder):
        return None, f"{cls.__qualname__} is not a torchvision DatasetFolder"
    for name in ("__getitem__", "__len__"):
        if getattr(cls, name) is not getattr(DatasetFolder, name):
            return None, f"{cls.__qualname__} overrides {name}"
    loader = getattr(dataset, "loader", None)
    if loader is default_loader:
        if torchvision.get_image_backend() != "PIL":
            return None, f"torchvision's image backend is {torchvision.get_image_backend()!r}, not 'PIL'"
    elif loader is not pil_loader:
        return None, f"its loader ({getattr(loader, '__qualname__', type(loader).__name__)}) is not torchvision's default_loader"
    if getattr(dataset, "target_transform", None) is not None:
        return None, "target_transform is set"
    from .datasets import FileList
    from .transforms import from_torchvision

    compose, reason = from_torchvision(getattr(dataset, "transform", None))
    if compose is None:
        return None, reason
    rows = []
    for k, entry in enumerate(dataset.samples):
        try:
            path, target = entry
        except (TypeError, ValueError):
            return None, f"samples[{k}] is not a (path, target) pair"
        if isinstance(target, bool) or not isinstance(target, numbers.Integral):
            return None, f"samples[{k}]'s target is a {type(target).__name__}, not an int"
        name = os.fsdecode(os.fspath(path))
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            return None, f"samples[{k}]'s file name is not valid UTF-8"
        rows.append(json.dumps({"path": os.path.abspath(name), "label": int(target)}))
    if not rows:
        return None, "the dataset has no samples"
    # The list lives as long as the native dataset (the core reads it again
    # for each loader it creates).
    tmp = tempfile.TemporaryDirectory(prefix="minatoloader-samples-")
    list_path = os.path.join(tmp.name, "samples.jsonl")
    with open(list_path, "w", encoding="utf-8") as f:
        f.write("\n".join(rows) + "\n")
    native = FileList(list_path, transform=compose)
    native._samples_dir = tmp  # type: ignore[attr-defined]
    if len(native) != len(rows):
        return None, f"the native file list has {len(native)} entries, samples {len(rows)}"
    return native, ""
