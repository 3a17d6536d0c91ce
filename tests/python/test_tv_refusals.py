"""A torchvision folder dataset runs natively only when that is provably the
same data; otherwise it runs in Python, with the reason in stats().

Every case compares whole shuffled epochs with torch's DataLoader under
the same seed: the data is torchvision's either way. Files are real PNG
and JPEG (grayscale, palette and RGBA PNGs included), written here.
Tolerance: exact (PNG decode and crops are exact; JPEG decode is exact with
libjpeg-turbo, within 3/255 with Go's image/jpeg fallback, see
test_image_parity.py).
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch
import torchvision
from PIL import Image
from torchvision import transforms as tvt

from minatoloader import DataLoader

TRANSFORM = tvt.Compose([tvt.CenterCrop(12), tvt.ToTensor()])


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = str(tmp_path_factory.mktemp("folder"))
    rng = np.random.default_rng(0)
    modes = ["RGB", "L", "P", "RGBA", "RGB", "L"]
    for k in range(18):
        cls = ["cat", "dog", "emu"][k % 3]
        os.makedirs(os.path.join(root, cls), exist_ok=True)
        h, w = 14 + k % 5, 15 + k % 4
        img = Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))
        mode = modes[k % len(modes)]
        img = img.convert(mode) if mode != "P" else img.convert("P", palette=Image.ADAPTIVE, colors=16)
        ext = "jpg" if k % 4 == 0 and mode in ("RGB", "L") else "png"
        img.save(os.path.join(root, cls, f"{k:02d}.{ext}"), quality=95)
    return root


def _epoch(loader_cls: type, ds: object, seed: int = 3) -> list[tuple[torch.Tensor, list[int]]]:
    torch.manual_seed(seed)
    loader = loader_cls(ds, batch_size=4, shuffle=True)
    out = [(x.clone(), y.tolist()) for x, y in loader]
    return out


def _same_epochs(ds: object, jpeg_tol: float) -> DataLoader:
    theirs = _epoch(torch.utils.data.DataLoader, ds)
    ours_loader = DataLoader(ds, batch_size=4, shuffle=True)
    native = ours_loader._native_dataset
    if native is not None and native.jpeg_decoder == "libjpeg-turbo":
        jpeg_tol = 0.0  # PIL decodes with libjpeg-turbo too: exact
    torch.manual_seed(3)
    ours = [(x.clone(), y.tolist()) for x, y in ours_loader]
    assert [y for _, y in ours] == [y for _, y in theirs]
    for (a, _), (b, _) in zip(ours, theirs):
        assert a.shape == b.shape
        assert torch.max(torch.abs(a - b)).item() <= jpeg_tol
    return ours_loader


def test_plain_image_folder_runs_natively(root: str) -> None:
    ds = torchvision.datasets.ImageFolder(root, transform=TRANSFORM)
    loader = _same_epochs(ds, 3 / 255)
    assert loader.stats()["path"] == "torchvision->native"


def test_relabelled_samples_are_honoured(root: str) -> None:
    ds = torchvision.datasets.ImageFolder(root, transform=TRANSFORM)
    ds.samples = [(p, 0) for p, _ in ds.samples]
    ds.targets = [0] * len(ds.samples)
    loader = _same_epochs(ds, 3 / 255)
    assert loader.stats()["path"] == "torchvision->native"


def test_filtered_and_reordered_samples_are_honoured(root: str) -> None:
    ds = torchvision.datasets.ImageFolder(root, transform=TRANSFORM)
    ds.samples = list(reversed(ds.samples[3:]))
    loader = _same_epochs(ds, 3 / 255)
    assert loader.stats()["path"] == "torchvision->native"
    assert len(loader) == len(torch.utils.data.DataLoader(ds, batch_size=4))


def gray_loader(path: str) -> Image.Image:
    with open(path, "rb") as f:
        return Image.open(f).convert("L")


class Overriding(torchvision.datasets.ImageFolder):
    def __getitem__(self, index: int):  # type: ignore[no-untyped-def]
        x, y = super().__getitem__(index)
        return 1 - x, y


@pytest.mark.parametrize(
    "make, reason",
    [
        (lambda r: torchvision.datasets.ImageFolder(r, transform=TRANSFORM, loader=gray_loader), "loader"),
        (lambda r: torchvision.datasets.ImageFolder(r, transform=TRANSFORM, target_transform=lambda t: t + 10),
         "target_transform"),
        (lambda r: Overriding(r, transform=TRANSFORM), "overrides __getitem__"),
        (lambda r: torchvision.datasets.ImageFolder(
            r, transform=tvt.Compose([tvt.CenterCrop(12), tvt.GaussianBlur(3), tvt.ToTensor()])), "GaussianBlur"),
    ],
    ids=["gray_loader", "target_transform", "subclass", "unsupported_step"],
)
def test_refusals_run_in_python_with_torchvisions_data(root: str, make, reason: str) -> None:
    ds = make(root)
    loader = _same_epochs(ds, 0.0)
    stats = loader.stats()
    assert stats["path"] == "python"
    assert reason in stats["path_reason"], stats["path_reason"]
