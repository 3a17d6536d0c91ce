"""torchvision -> native conversion: it runs only when it is provably the
same data, and then gives torch's DataLoader's batches.

Files are real PNG and JPEG written here with PIL in an ImageFolder layout
(several classes, odd sizes; RGB/L/P/P-with-transparency/RGBA/LA and 16-bit
gray PNGs, RGB and grayscale JPEGs). Every case compares a whole shuffled epoch of
``minatoloader.DataLoader(ds, batch_size=4, shuffle=True)`` with
``torch.utils.data.DataLoader(ds, batch_size=4, shuffle=True)`` under the
same ``torch.manual_seed``: labels exact; images exact except for the
documented tolerances (docs/decisions.md): a bilinear resize within 1/255
of PIL's (test_image_parity.py), scaled by 1/std after Normalize; JPEG
exact with libjpeg-turbo (what PIL decodes with), within 3/255 with Go's
image/jpeg fallback.
"""

from __future__ import annotations

import os
from typing import Any, Callable

import numpy as np
import pytest
import torch
import torchvision
from PIL import Image
from torchvision import transforms as tvt
from torchvision.datasets.folder import default_loader

from minatoloader import DataLoader

CROP = tvt.Compose([tvt.CenterCrop(12), tvt.ToTensor()])
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
RESIZE_TOL = 1 / 255 + 1e-6


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = str(tmp_path_factory.mktemp("folder"))
    rng = np.random.default_rng(0)
    kinds = ["png:RGB", "png:L", "png:P", "png:RGBA", "jpg:RGB", "jpg:L", "png:LA", "png:Pt"]
    for k in range(22):
        cls = ["cat", "dog", "emu"][k % 3]
        os.makedirs(os.path.join(root, cls), exist_ok=True)
        h, w = 13 + k % 6, 15 + (3 * k) % 7  # odd sizes, some smaller than the crops
        rgb = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        ext, mode = kinds[k % len(kinds)].split(":")
        img = Image.fromarray(rgb)
        if mode == "RGBA":  # transparent pixels keep a colour: convert("RGB") keeps it
            alpha = rng.integers(0, 256, (h, w), dtype=np.uint8)
            alpha[0, :] = 0
            img = Image.fromarray(np.dstack([rgb, alpha]), "RGBA")
        elif mode in ("P", "Pt"):
            img = img.convert("P", palette=Image.ADAPTIVE, colors=16)
            if mode == "Pt":
                img.info["transparency"] = 3
        elif mode != "RGB":
            img = img.convert(mode)
        name = os.path.join(root, cls, f"{k:02d}.{ext}")
        if ext == "jpg":
            img.save(name, quality=90)
        else:
            img.save(name, **({"transparency": 3} if mode == "Pt" else {}))
    # 16-bit gray (PIL mode "I;16"): convert("RGB") clips values above 255.
    g16 = rng.integers(0, 65536, (17, 19), dtype=np.uint16)
    g16[0, :4] = [0, 255, 256, 65535]
    Image.fromarray(g16).save(os.path.join(root, "dog", "99.png"))
    with Image.open(os.path.join(root, "dog", "99.png")) as im:
        assert im.mode == "I;16"
    with Image.open(os.path.join(root, "emu", "02.png")) as im:
        assert im.mode == "P"
    return root


def _epoch(loader: Any, seed: int = 7) -> list[tuple[torch.Tensor, list[int]]]:
    torch.manual_seed(seed)
    return [(x.clone(), y.tolist()) for x, y in loader]


def _compare(ds: Any, tol: float = 0.0, scale: float = 1.0) -> dict[str, Any]:
    """Whole shuffled epochs of ours and torch's; returns our stats().
    tol: the images' tolerance; scale: what Normalize multiplies a level
    by (1/std), for the JPEG fallback's tolerance."""
    theirs = _epoch(torch.utils.data.DataLoader(ds, batch_size=4, shuffle=True))
    loader = DataLoader(ds, batch_size=4, shuffle=True)
    try:
        ours = _epoch(loader)
        stats = loader.stats()
        native = loader._native_dataset
    finally:
        loader.close()
    assert len(ours) == len(theirs)
    assert [y for _, y in ours] == [y for _, y in theirs]
    has_jpeg = any(str(p).endswith(".jpg") for p, _ in ds.samples)
    for (a, _), (b, _) in zip(ours, theirs):
        assert a.dtype == b.dtype and a.shape == b.shape
        t = tol
        if native is not None and has_jpeg and native.jpeg_decoder != "libjpeg-turbo":
            # Go's image/jpeg IDCT, not PIL's libjpeg-turbo: 3 levels.
            t = max(t, 3 * (1 if a.dtype == torch.uint8 else 1 / 255) * scale + 1e-5)
        assert torch.max(torch.abs(a.double() - b.double())).item() <= t
    return stats


def _native(stats: dict[str, Any]) -> None:
    assert stats["path"] == "torchvision->native", stats.get("path_reason")


# ------------------------------------------------------------------ accepted
def test_plain_image_folder(root: str) -> None:
    _native(_compare(torchvision.datasets.ImageFolder(root, transform=CROP)))


def test_relabelled_samples_and_targets(root: str) -> None:
    ds = torchvision.datasets.ImageFolder(root, transform=CROP)
    ds.samples = [(p, 0) for p, _ in ds.samples]
    ds.targets = [0] * len(ds.samples)
    _native(_compare(ds))


def test_reordered_and_filtered_samples(root: str) -> None:
    ds = torchvision.datasets.ImageFolder(root, transform=CROP)
    ds.samples = list(reversed(ds.samples[4:])) + ds.samples[:2]
    _native(_compare(ds))


def test_dataset_folder_with_default_loader(root: str) -> None:
    ds = torchvision.datasets.DatasetFolder(root, loader=default_loader, extensions=(".png",), transform=CROP)
    assert all(p.endswith(".png") for p, _ in ds.samples)
    _native(_compare(ds))


class OwnClasses(torchvision.datasets.ImageFolder):
    """Overrides only the scan: samples, as given, are still what it reads."""

    def find_classes(self, directory: str) -> tuple[list[str], dict[str, int]]:
        classes = ["emu", "dog", "cat"]
        return classes, {c: i for i, c in enumerate(classes)}


def test_subclass_overriding_only_the_scan(root: str) -> None:
    ds = OwnClasses(root, transform=CROP)
    assert ds.samples[0][1] == 2  # cat
    _native(_compare(ds))


def test_resize_normalize_within_tolerance(root: str) -> None:
    # Resize(10) then a larger crop: CenterCrop pads with zeros.
    tf = tvt.Compose([tvt.Resize(10), tvt.CenterCrop((11, 13)), tvt.ToTensor(), tvt.Normalize(MEAN, STD)])
    _native(_compare(torchvision.datasets.ImageFolder(root, transform=tf), RESIZE_TOL / min(STD) + 1e-5, 1 / min(STD)))


def test_pil_to_tensor_and_deterministic_flips(root: str) -> None:
    tf = tvt.Compose([
        tvt.RandomHorizontalFlip(1.0), tvt.RandomVerticalFlip(0.0), tvt.Compose([tvt.CenterCrop(14)]), tvt.PILToTensor(),
    ])
    _native(_compare(torchvision.datasets.ImageFolder(root, transform=tf)))


def test_normalize_single_mean_broadcasts(root: str) -> None:
    # PNGs only: Normalize is exact ((x - mean) / std in float32, as torch).
    tf = tvt.Compose([tvt.CenterCrop(12), tvt.ToTensor(), tvt.Normalize([0.5], [0.25])])
    _native(_compare(torchvision.datasets.DatasetFolder(root, default_loader, extensions=(".png",), transform=tf)))


# ------------------------------------------------------------------ refused
def gray_loader(path: str) -> Image.Image:
    with open(path, "rb") as f:
        return Image.open(f).convert("L")


def rgb_loader(path: str) -> Image.Image:  # the same as pil_loader, but not provably
    with open(path, "rb") as f:
        return Image.open(f).convert("RGB")


class OverridesGetitem(torchvision.datasets.ImageFolder):
    def __getitem__(self, index: int) -> Any:
        x, y = super().__getitem__(index)
        return 1 - x, y


class OverridesLoader(torchvision.datasets.ImageFolder):
    def loader(self, path: str) -> Image.Image:  # type: ignore[override]
        return gray_loader(path)

    def __init__(self, root: str, **kw: Any) -> None:
        super().__init__(root, **kw)
        del self.loader  # the class's loader, not default_loader, is used


def _bmp_samples(root: str, tmp: str) -> torchvision.datasets.ImageFolder:
    ds = torchvision.datasets.ImageFolder(root, transform=CROP)
    bmp = os.path.join(tmp, "x.bmp")
    Image.open(ds.samples[0][0]).convert("RGB").save(bmp)
    ds.samples = ds.samples + [(bmp, 1)]
    return ds


REFUSALS: list[tuple[str, Callable[[str, str], Any], str]] = [
    ("custom_loader", lambda r, t: torchvision.datasets.ImageFolder(r, transform=CROP, loader=rgb_loader),
     "loader (rgb_loader) is not torchvision's default_loader"),
    ("gray_loader", lambda r, t: torchvision.datasets.ImageFolder(r, transform=CROP, loader=gray_loader),
     "loader (gray_loader)"),
    ("target_transform", lambda r, t: torchvision.datasets.ImageFolder(r, transform=CROP, target_transform=lambda y: y + 10),
     "target_transform is set"),
    ("subclass_getitem", lambda r, t: OverridesGetitem(r, transform=CROP), "overrides __getitem__"),
    ("subclass_loader", lambda r, t: OverridesLoader(r, transform=CROP), "overrides loader"),
    ("unsupported_step", lambda r, t: torchvision.datasets.ImageFolder(
        r, transform=tvt.Compose([tvt.CenterCrop(12), tvt.GaussianBlur(3), tvt.ToTensor()])),
     "transform step 1 (GaussianBlur): no native equivalent"),
    ("unsupported_argument", lambda r, t: torchvision.datasets.ImageFolder(
        r, transform=tvt.Compose([tvt.Resize((12, 12), interpolation=tvt.InterpolationMode.NEAREST), tvt.ToTensor()])),
     "transform step 0 (Resize): interpolation"),
    ("lambda_step", lambda r, t: torchvision.datasets.ImageFolder(
        r, transform=tvt.Compose([tvt.CenterCrop(12), tvt.ToTensor(), tvt.Lambda(lambda x: x * 2)])),
     "transform step 2 (Lambda)"),
    ("not_jpeg_or_png", _bmp_samples, "is not a .jpg/.jpeg/.png file"),
    ("numpy_target", lambda r, t: _numpy_targets(r), "target is a int32, not an int"),
]


def _numpy_targets(root: str) -> torchvision.datasets.ImageFolder:
    ds = torchvision.datasets.ImageFolder(root, transform=CROP)
    ds.samples = [(p, np.int32(y)) for p, y in ds.samples]
    return ds


@pytest.mark.parametrize("make, reason", [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS])
def test_refused_runs_in_python_with_torchvisions_data(
    root: str, tmp_path: Any, make: Callable[[str, str], Any], reason: str
) -> None:
    ds = make(root, str(tmp_path))
    stats = _compare(ds)
    assert stats["path"] == "python"
    assert reason in stats["path_reason"], stats["path_reason"]
