"""torchvision folder datasets -> native datasets (the pre-issue-8 rule,
moved here from dataloader.py; being replaced by the provably-same rule)."""

from __future__ import annotations

from typing import Any

from .dataset import Dataset


def native_equivalent(dataset: Any) -> tuple[Dataset[Any] | None, str]:
    """(a native dataset, "") or (None, why not)."""
    if not (type(dataset).__module__.startswith("torchvision.datasets") and hasattr(dataset, "root")
            and hasattr(dataset, "samples")):
        return None, ""
    from .datasets import ImageFolder
    from .transforms import from_torchvision

    compose, reason = from_torchvision(getattr(dataset, "transform", None))
    if getattr(dataset, "target_transform", None) is not None:
        return None, "target_transform is set"
    if compose is None:
        return None, reason
    exts = getattr(dataset, "extensions", None)
    native = ImageFolder(dataset.root, transform=compose, extensions=list(exts) if exts else None)
    if len(native) != len(dataset):
        return None, f"the native scan found {len(native)} files, torchvision {len(dataset)}"
    return native, ""
