"""Native image datasets against PIL and torchvision on files written here.

Tolerances (max absolute difference, on [0, 1] pixel values before
Normalize):
  PNG decode: exact.
  JPEG decode: exact with libjpeg-turbo (what PIL decodes with); 3/255
  with the image/jpeg fallback (its IDCT rounds differently).
  Bilinear resize with antialias vs PIL: 1/255 + float rounding.
Random ops are pinned to deterministic parameters that torchvision
reproduces: RandomResizedCrop with scale=(1, 1) and ratio=(W/H, W/H) crops
the whole image; flips with p=1.
"""

from __future__ import annotations

import logging
import os

import numpy as np
import pytest
import torch
import torchvision
from PIL import Image
from torchvision import transforms as tvt

import minatoloader
from minatoloader import InvalidArgumentError, NativeLoader, SampleError
from minatoloader import datasets as mds
from minatoloader import transforms as T

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def _write_images(root: str, fmt: str, sizes: list[tuple[int, int]], seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    paths = []
    for k, (h, w) in enumerate(sizes):
        cls = "a" if k % 2 == 0 else "b"
        os.makedirs(os.path.join(root, cls), exist_ok=True)
        # Smooth content with some texture, so JPEG and resize are realistic.
        y, x = np.mgrid[0:h, 0:w]
        base = np.stack([(x * 255 // max(w - 1, 1)), (y * 255 // max(h - 1, 1)), ((x + y) * 3) % 256], -1)
        arr = np.clip(base + rng.integers(-20, 21, (h, w, 3)), 0, 255).astype(np.uint8)
        path = os.path.join(root, cls, f"{k:03d}.{fmt}")
        if fmt == "jpg":
            Image.fromarray(arr).save(path, quality=92)
        else:
            Image.fromarray(arr).save(path)
        paths.append(path)
    return paths


def _native_epoch(ds: mds.FileDataset, **kw: object) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    with NativeLoader(ds, 4, output="numpy", return_indices=True, **kw) as loader:
        items = list(loader)
    data = np.concatenate([x for x, _, _ in items])
    labels = np.concatenate([y for _, y, _ in items])
    idx = np.concatenate([i for _, _, i in items])
    return data, labels, idx


def _reference(root: str, tv_transform: object) -> tuple[np.ndarray, np.ndarray]:
    ref = torchvision.datasets.ImageFolder(root, transform=tv_transform)
    xs, ys = zip(*(ref[i] for i in range(len(ref))))
    return np.stack([np.asarray(x) for x in xs]), np.asarray(ys)


def test_png_decode_exact(tmp_path) -> None:
    root = str(tmp_path)
    _write_images(root, "png", [(37, 53)] * 6)
    ds = mds.ImageFolder(root, transform=T.Compose([T.CenterCrop((37, 53)), T.PILToTensor()]))
    got, labels, idx = _native_epoch(ds)
    want, want_labels = _reference(root, tvt.Compose([tvt.CenterCrop((37, 53)), tvt.PILToTensor()]))
    assert got.dtype == np.uint8 and got.shape == (6, 3, 37, 53)
    np.testing.assert_array_equal(got, want[idx])
    np.testing.assert_array_equal(labels, want_labels[idx])


def test_jpeg_decode_close_to_pil(tmp_path) -> None:
    root = str(tmp_path)
    _write_images(root, "jpg", [(48, 64)] * 6)
    ds = mds.ImageFolder(root, transform=T.Compose([T.CenterCrop((48, 64)), T.PILToTensor()]))
    got, _, idx = _native_epoch(ds)
    want, _ = _reference(root, tvt.Compose([tvt.CenterCrop((48, 64)), tvt.PILToTensor()]))
    diff = np.abs(got.astype(int) - want[idx].astype(int))
    assert ds.jpeg_decoder in ("libjpeg-turbo", "image/jpeg")
    assert diff.max() <= (0 if ds.jpeg_decoder == "libjpeg-turbo" else 3)


@pytest.mark.parametrize("fused", [True, False])
def test_eval_chain_matches_torchvision(tmp_path, fused: bool) -> None:
    root = str(tmp_path)
    _write_images(root, "png", [(60, 80), (90, 70), (41, 33), (120, 100), (64, 64), (33, 97)])
    steps = [T.Resize(36), T.CenterCrop(32), T.ToTensor(), T.Normalize(MEAN, STD)]
    if not fused:  # a p=0 flip breaks the fused pattern without changing the values
        steps.insert(2, T.RandomVerticalFlip(p=0.0))
    got, _, idx = _native_epoch(mds.ImageFolder(root, transform=T.Compose(steps)))
    want, _ = _reference(root, tvt.Compose([tvt.Resize(36), tvt.CenterCrop(32), tvt.ToTensor(), tvt.Normalize(MEAN, STD)]))
    assert got.shape == (6, 3, 32, 32)
    tol = (1 / 255) / min(STD) + 1e-4
    np.testing.assert_allclose(got, want[idx], atol=tol, rtol=0)


@pytest.mark.parametrize("fused", [True, False])
def test_random_resized_crop_pinned_matches_torchvision(tmp_path, fused: bool) -> None:
    root = str(tmp_path)
    h, w = 60, 90
    _write_images(root, "png", [(h, w)] * 4)
    r = w / h
    steps = [T.RandomResizedCrop((24, 30), scale=(1.0, 1.0), ratio=(r, r)), T.RandomHorizontalFlip(p=1.0), T.ToTensor()]
    if not fused:
        steps.insert(1, T.RandomVerticalFlip(p=0.0))
    got, _, idx = _native_epoch(mds.ImageFolder(root, transform=T.Compose(steps)))
    want, _ = _reference(root, tvt.Compose([tvt.Resize((24, 30)), tvt.RandomHorizontalFlip(p=1.0), tvt.ToTensor()]))
    np.testing.assert_allclose(got, want[idx], atol=1 / 255 + 1e-6, rtol=0)


def test_random_ops_depend_on_seed_and_epoch_only(tmp_path) -> None:
    root = str(tmp_path)
    _write_images(root, "jpg", [(50, 70), (80, 60)] * 3)
    chain = T.Compose([T.RandomResizedCrop(24), T.RandomHorizontalFlip(), T.ColorJitter(0.4, 0.4, 0.4), T.ToTensor()])
    ds = mds.ImageFolder(root, transform=chain)

    def run(workers: int, epoch: int) -> np.ndarray:
        with NativeLoader(ds, 2, seed=7, workers=workers, in_order=True, output="numpy") as loader:
            loader.set_epoch(epoch)
            return np.concatenate([x for x, _ in loader])

    a, b = run(1, 0), run(4, 0)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, run(1, 1))


def test_chain_errors_name_the_problem(tmp_path) -> None:
    root = str(tmp_path)
    _write_images(root, "png", [(20, 20)] * 2)
    with pytest.raises(InvalidArgumentError, match="same size"):
        mds.ImageFolder(root, transform=T.Compose([T.Resize(16), T.ToTensor()]))
    with pytest.raises(InvalidArgumentError, match="must end with to_tensor"):
        mds.ImageFolder(root, transform=T.Compose([T.CenterCrop(8)]))
    with pytest.raises(InvalidArgumentError, match="transforms\\[1\\].*before the tensor"):
        mds.ImageFolder(root, transform=[T.ToTensor(), T.CenterCrop(8)])
    with pytest.raises(InvalidArgumentError, match="no class folder"):
        mds.ImageFolder(str(tmp_path / "a"))


@pytest.mark.parametrize(
    "name,content,reason",
    [
        ("zero.png", b"", "zero|empty|EOF"),
        ("trunc.png", None, "trunc|EOF|unexpected"),
        ("garbage.jpg", b"\xff\xd8\xff\xe0 this is not a jpeg at all" * 10, "jpeg"),
    ],
)
def test_bad_files_name_the_file(tmp_path, name: str, content: bytes | None, reason: str) -> None:
    root = str(tmp_path)
    _write_images(root, "png", [(16, 16)] * 2)
    path = os.path.join(root, "a", name)
    if content is None:
        with open(os.path.join(root, "a", "000.png"), "rb") as f:
            content = f.read()[:60]
    with open(path, "wb") as f:
        f.write(content)
    ds = mds.ImageFolder(root, transform=[T.CenterCrop(8), T.ToTensor()])
    with NativeLoader(ds, 4) as loader, pytest.raises(SampleError, match=reason) as info:
        list(loader)
    assert name in str(info.value)


def test_decompression_bomb_limit(tmp_path) -> None:
    root = str(tmp_path)
    _write_images(root, "png", [(100, 100)] * 2)
    ds = mds.ImageFolder(root, transform=[T.CenterCrop(8), T.ToTensor()], max_pixels=5000)
    with NativeLoader(ds, 2) as loader, pytest.raises(SampleError, match="pixel|limit|large"):
        list(loader)


def test_missing_file_after_scan(tmp_path) -> None:
    root = str(tmp_path)
    paths = _write_images(root, "png", [(16, 16)] * 4)
    ds = mds.ImageFolder(root, transform=[T.CenterCrop(8), T.ToTensor()])
    with NativeLoader(ds, 2) as loader:  # the loader scans the folder when created
        os.remove(paths[2])
        with pytest.raises(SampleError, match=os.path.basename(paths[2])):
            list(loader)


def test_torchvision_imagefolder_runs_natively(tmp_path, caplog) -> None:
    root = str(tmp_path)
    _write_images(root, "png", [(60, 80), (90, 70), (41, 33), (120, 100)])
    tv_chain = tvt.Compose([tvt.Resize(36), tvt.CenterCrop(32), tvt.ToTensor(), tvt.Normalize(MEAN, STD)])
    tv_ds = torchvision.datasets.ImageFolder(root, transform=tv_chain)
    with caplog.at_level(logging.INFO, logger="minatoloader"):
        loader = minatoloader.DataLoader(tv_ds, batch_size=2)
    assert "natively" in caplog.text
    with loader:
        got = torch.cat([x for x, _ in loader]).numpy()
        assert loader.stats()["path"] == "torchvision->native"
    want = np.stack([tv_ds[i][0].numpy() for i in range(len(tv_ds))])
    np.testing.assert_allclose(got, want, atol=(1 / 255) / min(STD) + 1e-4, rtol=0)


def test_torchvision_imagefolder_fallback_says_why(tmp_path, caplog) -> None:
    root = str(tmp_path)
    _write_images(root, "png", [(20, 20)] * 2)
    tv_ds = torchvision.datasets.ImageFolder(root, transform=tvt.Compose([tvt.Grayscale(), tvt.ToTensor()]))
    with caplog.at_level(logging.INFO, logger="minatoloader"):
        dl = minatoloader.DataLoader(tv_ds, batch_size=2, num_workers=1)
    assert "cannot run" in caplog.text and "Grayscale" in caplog.text
    # It runs as a Python dataset instead, with torchvision's own code.
    assert dl.stats()["path"] == "python"
    ours = [(x, y) for x, y in dl]
    dl.close()
    theirs = list(torch.utils.data.DataLoader(tv_ds, batch_size=2))
    assert len(ours) == len(theirs)
    for (a, b), (c, d) in zip(ours, theirs):
        assert torch.equal(a, c) and torch.equal(b, d)


@pytest.mark.parametrize("train", [False, True])
def test_decode_scale_is_close_and_draws_the_same_params(tmp_path, train: bool) -> None:
    root = str(tmp_path)
    _write_images(root, "jpg", [(400, 600), (480, 360), (512, 512), (300, 640)])
    if train:
        chain = [T.RandomResizedCrop(48), T.RandomHorizontalFlip(), T.ToTensor()]
    else:
        chain = [T.Resize(64), T.CenterCrop(56), T.ToTensor()]
    full, _, idx_full = _native_epoch(mds.ImageFolder(root, transform=chain), seed=9)
    scaled, _, idx_scaled = _native_epoch(mds.ImageFolder(root, transform=chain, decode_scale=True), seed=9)
    np.testing.assert_array_equal(idx_full, idx_scaled)
    assert full.shape == scaled.shape
    # Same crop and flip (the parameters are drawn on the full size), pixels
    # from a smaller decode: close on average, not equal.
    assert np.abs(full - scaled).mean() < 0.02


def test_padding_collate_for_images(tmp_path) -> None:
    root = str(tmp_path)
    _write_images(root, "png", [(20, 30), (30, 20), (25, 25), (16, 40)])
    ds = mds.ImageFolder(root, transform=[T.Resize(12), T.PILToTensor()], collate="pad")
    assert ds.fields[0]["shape"] == [3, -1, -1]
    got, _, idx = _native_epoch(ds)  # batches of 4: one batch
    ref = torchvision.datasets.ImageFolder(root, transform=tvt.Compose([tvt.Resize(12), tvt.PILToTensor()]))
    wants = [np.asarray(ref[int(i)][0]) for i in idx]
    assert got.shape == (4, 3, max(w.shape[1] for w in wants), max(w.shape[2] for w in wants))
    for row, want in enumerate(wants):
        h, w = want.shape[1:]
        np.testing.assert_array_equal(got[row, :, :h, :w], want)
        assert not got[row, :, h:, :].any() and not got[row, :, :, w:].any()
