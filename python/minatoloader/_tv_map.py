"""torchvision transforms -> native transforms, only where the native step
computes what torchvision's computes on the PIL RGB image its default
loader returns.

Accepted (torchvision.transforms v1 classes exactly, not subclasses, nor
v2):

========================= ==================================================
step                      equivalence
========================= ==================================================
Compose (nested too)      the steps in order
Resize                    bilinear, no max_size: PIL's antialiased resize,
                          within 1/255 (antialias is ignored for PIL input)
CenterCrop                exact (zero padding when larger than the image)
RandomCrop                no padding: same crop distribution, exact pixels
RandomResizedCrop         bilinear: same distribution, resize within 1/255
RandomHorizontal/Vertical same distribution (exact at p=0 or p=1)
Flip
ColorJitter               symmetric ranges, no hue: same distribution,
                          PIL's ImageEnhance arithmetic
ToTensor, PILToTensor     exact
Normalize                 exact: (x - mean) / std in float32; a single
                          mean/std broadcasts over the 3 channels
========================= ==================================================

Random steps draw from the native generator, not torch's: the parameters
follow torchvision's distributions, not torch's random stream.
"""

from __future__ import annotations

import math
from typing import Any

from . import transforms as T

_V1 = "torchvision.transforms.transforms"


def _bilinear(t: Any) -> bool:
    interp = getattr(t, "interpolation", None)
    return str(getattr(interp, "value", interp)).lower() in ("bilinear", "2")


def _sizes(size: Any) -> list[int]:
    return [int(size)] if isinstance(size, int) else [int(s) for s in size]


def _jitter(name: str, v: Any) -> float:
    # torchvision stores a factor b as the range (max(0, 1 - b), 1 + b),
    # and None for no change.
    if v is None:
        return 0.0
    lo, hi = float(v[0]), float(v[1])
    b = hi - 1.0
    if b < 0 or not math.isclose(lo, max(0.0, 1.0 - b), abs_tol=1e-9):
        raise ValueError(f"the {name} range {tuple(v)} is not of the form (max(0, 1-b), 1+b)")
    return b


def _translate_one(t: Any) -> T.Transform:
    """One torchvision transform -> its native equivalent; ValueError (or
    TypeError) saying why when there is none."""
    cls = type(t).__name__
    if type(t).__module__ != _V1:
        raise ValueError(f"{type(t).__module__}.{cls} is not a torchvision.transforms (v1) transform")
    if cls == "Resize":
        if not _bilinear(t):
            raise ValueError(f"interpolation {t.interpolation} is not native (bilinear only)")
        if t.max_size is not None:
            raise ValueError("max_size is not native")
        return T.Resize(_sizes(t.size))
    if cls == "CenterCrop":
        return T.CenterCrop(_sizes(t.size))
    if cls == "RandomCrop":
        if t.padding not in (None, 0) or t.pad_if_needed:
            raise ValueError("padding and pad_if_needed are not native")
        return T.RandomCrop(_sizes(t.size))
    if cls == "RandomResizedCrop":
        if not _bilinear(t):
            raise ValueError(f"interpolation {t.interpolation} is not native (bilinear only)")
        return T.RandomResizedCrop(_sizes(t.size), scale=t.scale, ratio=t.ratio)
    if cls == "RandomHorizontalFlip":
        return T.RandomHorizontalFlip(t.p)
    if cls == "RandomVerticalFlip":
        return T.RandomVerticalFlip(t.p)
    if cls == "ColorJitter":
        if t.hue is not None:
            raise ValueError("hue is not native")
        return T.ColorJitter(
            _jitter("brightness", t.brightness), _jitter("contrast", t.contrast), _jitter("saturation", t.saturation)
        )
    if cls == "ToTensor":
        return T.ToTensor()
    if cls == "PILToTensor":
        return T.PILToTensor()
    if cls == "Normalize":
        mean, std = [float(m) for m in t.mean], [float(s) for s in t.std]
        if len(mean) == 1 and len(std) == 1:
            mean, std = mean * 3, std * 3  # torch broadcasts one value over the channels
        if len(mean) != 3 or len(std) != 3:
            raise ValueError(f"{len(mean)} means and {len(std)} stds for an RGB image")
        return T.Normalize(mean, std)
    raise ValueError("no native equivalent")


def _flatten(transform: Any, out: list[Any]) -> None:
    if type(transform).__name__ == "Compose" and type(transform).__module__ == _V1:
        for t in transform.transforms:
            _flatten(t, out)
    else:
        out.append(transform)


def from_torchvision(transform: Any) -> tuple[T.Compose | None, str]:
    """(native compose, "") or (None, the reason naming the step)."""
    if transform is None:
        return None, "transform is None: the samples would be PIL images"
    steps: list[Any] = []
    _flatten(transform, steps)
    native = []
    for i, t in enumerate(steps):
        try:
            native.append(_translate_one(t))
        except (ValueError, TypeError) as exc:
            return None, f"transform step {i} ({type(t).__name__}): {exc}"
    if not native or type(native[-1]) not in (T.ToTensor, T.PILToTensor, T.Normalize):
        return None, "the transform does not end with ToTensor/PILToTensor (+ Normalize): its output is a PIL image"
    return T.Compose(native), ""
