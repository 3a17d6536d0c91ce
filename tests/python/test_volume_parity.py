"""Native 3D volume pairs (npy_pairs) against a numpy re-implementation.

core/volume/testdata/numpy/make_fixtures.py re-implements, with numpy, the
generator (SplitMix64, as core/sampler) and the documented draw order and
ops of the 3D-UNet chain. A loader seeds each step's generator with (seed,
epoch, index, step); the chain's step is number 1 (0 is the load). With the
same generator, crop, flips and labels must be identical and the image equal
within float32 rounding.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from minatoloader import InvalidArgumentError, NativeLoader, SampleError
from minatoloader import datasets as mds
from minatoloader import transforms as T

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "core", "volume", "testdata", "numpy"))
import make_fixtures as ref  # noqa: E402


def _cases(root: str, n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(1)
    out = []
    for k in range(n):
        image = rng.standard_normal((1, 12, 14, 16)).astype(np.float32)
        label = np.zeros((1, 12, 14, 16), dtype=np.uint8)
        label[0, 2 + k % 5 : 5 + k % 5, 9:12, 1:4] = 1
        if k % 2:
            label[0, 9, 3, 14] = 2
        np.save(os.path.join(root, f"case_{k:05d}_x.npy"), image)
        np.save(os.path.join(root, f"case_{k:05d}_y.npy"), label)
        out.append((image, label))
    return out


@pytest.mark.parametrize("epoch", [0, 3])
def test_npy_pairs_match_numpy_reference(tmp_path, epoch: int) -> None:
    root = str(tmp_path)
    cases = _cases(root, 6)
    chain = [T.RandomCrop3D((8, 8, 10), foreground_p=0.5), T.RandomFlip3D(p=0.5),
             T.RandomBrightness(factor=0.3, p=0.5), T.GaussianNoise(std=0.1, p=0.5)]
    ds = mds.NpyPairs(root, transform=chain)
    assert len(ds) == 6
    assert [f["name"] for f in ds.fields] == ["image", "label"]
    assert ds.fields[0]["shape"] == [1, 8, 8, 10] and ds.fields[1]["dtype"] == "uint8"
    seed = 5
    with NativeLoader(ds, 2, seed=seed, output="numpy", return_indices=True) as loader:
        loader.set_epoch(epoch)
        items = list(loader)
    c = {"crop_prob": 0.5, "flip_prob": 0.5, "bright_factor": 0.3, "bright_prob": 0.5,
         "noise_std": 0.1, "noise_prob": 0.5, "image_pad": 0.0, "size": [8, 8, 10]}
    seen = 0
    for images, labels, indices in items:
        for img, lbl, idx in zip(images, labels, indices):
            image, label = cases[int(idx)]
            want_img, want_lbl, _ = ref.augment_case(ref.RNG(seed, epoch, int(idx), 1), image, label, c)
            np.testing.assert_array_equal(lbl, want_lbl)
            np.testing.assert_allclose(img, want_img, rtol=1e-6, atol=1e-6)
            seen += 1
    assert seen == 6


def test_volume_chain_errors(tmp_path) -> None:
    root = str(tmp_path)
    _cases(root, 2)
    with pytest.raises(InvalidArgumentError, match="random_crop_3d"):
        mds.NpyPairs(root, transform=[T.RandomFlip3D()])
    with pytest.raises(InvalidArgumentError, match="in that order"):
        mds.NpyPairs(root, transform=[T.RandomCrop3D((4, 4, 4)), T.Cast("float16"), T.RandomFlip3D()])
    os.remove(os.path.join(root, "case_00001_y.npy"))
    with pytest.raises(InvalidArgumentError, match="case_00001_x.npy has no label"):
        mds.NpyPairs(root, transform=[T.RandomCrop3D((4, 4, 4))])


def test_truncated_npy_names_the_file(tmp_path) -> None:
    root = str(tmp_path)
    _cases(root, 3)
    ds = mds.NpyPairs(root, transform=[T.RandomCrop3D((4, 4, 4))])
    path = os.path.join(root, "case_00002_x.npy")
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(data[:200])
    with NativeLoader(ds, 1) as loader, pytest.raises(SampleError, match="case_00002_x.npy"):
        list(loader)


def test_cast_sets_the_image_dtype(tmp_path) -> None:
    root = str(tmp_path)
    _cases(root, 2)
    ds = mds.NpyPairs(root, transform=[T.RandomCrop3D((4, 4, 4)), T.Cast("float16")])
    assert ds.fields[0]["dtype"] == "float16"
    with NativeLoader(ds, 2, output="numpy") as loader:
        (img, lbl), = list(loader)
    assert img.dtype == np.float16 and img.shape == (2, 1, 4, 4, 4) and lbl.dtype == np.uint8
