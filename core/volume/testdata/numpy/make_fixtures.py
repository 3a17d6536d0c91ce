"""Writes the numpy fixtures that core/volume's tests read.

Run from the repository root with the project's virtual environment:

    .venv/bin/python core/volume/testdata/numpy/make_fixtures.py

Everything here is independent of the Go code: arrays are saved by numpy
itself, float16 bits come from numpy's astype, and the augmentation cases
re-implement the documented draw order (sampler.RNG is SplitMix64) and the
ops with numpy (np.pad, slicing, np.flip, float64 multiply, the polar method).
Output is deterministic.
"""

import json
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
M64 = (1 << 64) - 1


def mix(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


class RNG:
    """core/sampler.RNG: SplitMix64 over a state mixed from the keys."""

    def __init__(self, *keys):
        s = 0x9E3779B97F4A7C15
        for k in keys:
            s = mix(s ^ mix((k + 0x632BE59BD9B4E019) & M64))
        self.s = s

    def uint64(self):
        self.s = (self.s + 0x9E3779B97F4A7C15) & M64
        return mix(self.s)

    def below(self, n):
        limit = ((1 << 64) - n) % n
        while True:
            v = self.uint64()
            if v >= limit:
                return v % n

    def float64(self):
        return (self.uint64() >> 11) / float(1 << 53)


def save(name, a, version=None):
    path = os.path.join(HERE, name)
    if version is None:
        np.save(path, a, allow_pickle=False)
    else:
        with open(path, "wb") as f:
            np.lib.format.write_array(f, a, version=version, allow_pickle=False)


def arrays():
    base = np.arange(2 * 3 * 4, dtype=np.float64).reshape(2, 3, 4) - 7.5
    for dt in ["u1", "i1", "i2", "i4", "f2", "f4", "f8"]:
        a = base.astype("<" + dt) if dt not in ("u1",) else (base + 8).astype("u1")
        save(f"arange_{dt}.npy", a)
    save("arange_f4_v2.npy", base.astype("<f4"), version=(2, 0))
    save("arange_f4_v3.npy", base.astype("<f4"), version=(3, 0))
    save("scalar_f8.npy", np.float64(2.5))
    save("empty_f4.npy", np.zeros((0, 3), dtype="<f4"))
    save("bigendian_f4.npy", base.astype(">f4"))
    save("fortran_f4.npy", np.asfortranarray(base.astype("<f4")))
    save("bool.npy", base > 0)


def halves():
    rng = np.random.default_rng(7)
    vals = np.concatenate([
        rng.standard_normal(2000).astype(np.float32) * np.float32(1000),
        (rng.standard_normal(2000) * 1e-5).astype(np.float32),
        np.array([0.0, -0.0, 1.0, 65504, 65519.99, 65520, 1e9, -1e9, 2**-24, 2**-25,
                  3 * 2**-26, 2**-14 - 2**-25, 5.960464477539063e-08, np.inf, -np.inf],
                 dtype=np.float32),
    ]).astype(np.float32)
    save("half_in_f4.npy", vals)
    with np.errstate(over="ignore"):
        save("half_out_u2.npy", vals.astype(np.float16).view("<u2").astype("<i4"))


def polar_normals(seed, n):
    """NormalStream: Marsaglia's polar method over RNG(seed)."""
    r = RNG(seed)
    z = np.empty(n + (n & 1))
    for i in range(0, n, 2):
        while True:
            x, y = 2 * r.float64() - 1, 2 * r.float64() - 1
            q = x * x + y * y
            if 0 < q < 1:
                break
        m = np.sqrt(-2 * np.log(q) / q)
        z[i], z[i + 1] = x * m, y * m
    return z[:n]


def augment_case(r, image, label, c):
    size = c["size"]
    sp = label.shape[-3:]

    def uniform():
        return [r.below(max(n - k, 0) + 1) - max(k - n, 0) // 2 for n, k in zip(sp, size)]

    fg, center = False, [0, 0, 0]
    if r.float64() >= c["crop_prob"]:
        start = uniform()
    else:
        classes = np.unique(label[label > 0])
        if len(classes) == 0:
            start = uniform()
        else:
            cls = classes[r.below(len(classes))]
            idx = np.flatnonzero(label == cls)
            flat = int(idx[r.below(len(idx))]) % int(np.prod(sp))
            center = [int(x) for x in np.unravel_index(flat, sp)]
            fg = True
            start = [min(max(ce - k // 2, 0), n - k) if n >= k else -((k - n) // 2)
                     for ce, k, n in zip(center, size, sp)]
    axes = [r.float64() < c["flip_prob"] for _ in range(3)]
    bright = {"apply": False, "factor": 0.0}
    if r.float64() < c["bright_prob"]:
        lo, hi = 1 - c["bright_factor"], 1 + c["bright_factor"]
        bright = {"apply": True, "factor": lo + (hi - lo) * r.float64()}
    noise = {"apply": False, "mean": 0.0, "std": 0.0, "seed": 0}
    if r.float64() < c["noise_prob"]:
        std = c["noise_std"] * r.float64()
        noise = {"apply": True, "mean": 0.0, "std": std, "seed": r.uint64()}

    def crop(a, value):
        lo = [max(0, -s) for s in start]
        hi = [max(0, s + k - n) for s, k, n in zip(start, size, sp)]
        b = np.pad(a, [(0, 0)] + list(zip(lo, hi)), mode="constant", constant_values=value)
        sl = tuple(slice(s + l, s + l + k) for s, l, k in zip(start, lo, size))
        return b[(slice(None),) + sl]

    img, lbl = crop(image, c["image_pad"]), crop(label, 0)
    flip_axes = [1 + i for i in range(3) if axes[i]]
    if flip_axes:
        img, lbl = np.flip(img, axis=flip_axes), np.flip(lbl, axis=flip_axes)
    img = np.ascontiguousarray(img, dtype=np.float32)
    if bright["apply"]:
        img = (img * np.array([bright["factor"]])).astype(np.float32)
    if noise["apply"]:
        z = polar_normals(noise["seed"], img.size).reshape(img.shape)
        img = img + (noise["mean"] + noise["std"] * z).astype(np.float32)
    params = {
        "crop": {"start": start, "size": size, "foreground": fg, "center": center},
        "flip": {"axes": axes},
        "brightness": bright,
        "noise": noise,
    }
    return img.astype(np.float32), np.ascontiguousarray(lbl, dtype=np.uint8), params


def augment():
    rng = np.random.default_rng(3)
    image = rng.standard_normal((1, 12, 14, 16)).astype(np.float32)
    label = np.zeros((1, 12, 14, 16), dtype=np.uint8)
    label[0, 2:4, 10:13, 1:3] = 1
    label[0, 9, 3, 14] = 2
    save("aug_image.npy", image)
    save("aug_label.npy", label)
    common = {"crop_prob": 0.4, "flip_prob": 1 / 3, "bright_factor": 0.3, "bright_prob": 0.1,
              "noise_std": 0.1, "noise_prob": 0.1, "image_pad": 0.0}
    cases = []
    for i, over in enumerate([
        {},
        {"crop_prob": 1.0, "flip_prob": 0.5, "bright_prob": 1.0, "noise_prob": 1.0},
        {"crop_prob": 1.0, "flip_prob": 1.0, "bright_prob": 1.0},
        {"crop_prob": 0.0, "flip_prob": 0.5, "noise_prob": 1.0, "image_pad": -3.0},
        {"crop_prob": 1.0, "flip_prob": 0.5, "bright_prob": 0.5, "noise_prob": 0.5},
        {"crop_prob": 0.5, "flip_prob": 0.5, "bright_prob": 0.5, "noise_prob": 0.5},
    ]):
        for j, size in enumerate([[8, 8, 8], [6, 16, 20]]):
            c = dict(common, **over, size=size, keys=[11, 2, 100 + i, j])
            img, lbl, params = augment_case(RNG(*c["keys"]), image, label, c)
            name = f"aug_case{i}_{j}"
            save(name + "_image.npy", img)
            save(name + "_label.npy", lbl)
            c["name"], c["params"] = name, params
            cases.append(c)
    with open(os.path.join(HERE, "aug_cases.json"), "w") as f:
        f.write("[\n" + ",\n".join(json.dumps(c) for c in cases) + "\n]\n")


if __name__ == "__main__":
    arrays()
    halves()
    augment()
