"""Native transforms, named and parameterised as torchvision's.

Each transform here is a description: ``spec()`` returns the JSON object the
Go core runs (one scheduler step per transform, outside the GIL). Build a
chain with :class:`Compose` and hand it to a native dataset::

    from minatoloader import datasets, transforms as T
    ds = datasets.ImageFolder(root, transform=T.Compose([
        T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(),
        T.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])]))

Random transforms draw from a generator seeded by (seed, epoch, sample
index, step), so a sample's augmentation does not depend on which worker ran
it. ``from_torchvision`` translates a torchvision ``Compose`` when every step
has a native equivalent and says why when one has not.

Image transforms: Resize, CenterCrop, RandomCrop, RandomResizedCrop,
RandomHorizontalFlip, RandomVerticalFlip, ColorJitter, ToTensor,
PILToTensor, Normalize. Audio: Resample, PadTrim, Spectrogram, MelScale,
AmplitudeToDB-free Log, SpecAugment (FrequencyMasking/TimeMasking),
FrameSplicing, NormalizeFeatures. Volume: RandomCrop3D, RandomFlip3D,
RandomBrightness, GaussianNoise, Cast.
"""

from __future__ import annotations

import abc
import math
import numbers
from collections.abc import Sequence
from typing import Any

__all__ = [
    "Transform",
    "Compose",
    "Resize",
    "CenterCrop",
    "RandomCrop",
    "RandomResizedCrop",
    "RandomHorizontalFlip",
    "RandomVerticalFlip",
    "ColorJitter",
    "ToTensor",
    "PILToTensor",
    "Normalize",
    "Resample",
    "PadTrim",
    "Spectrogram",
    "MelScale",
    "Log",
    "FrequencyMasking",
    "TimeMasking",
    "FrameSplicing",
    "NormalizeFeatures",
    "RandomCrop3D",
    "RandomFlip3D",
    "RandomBrightness",
    "GaussianNoise",
    "Cast",
    "from_torchvision",
]


def _size(name: str, size: Any, allow_int: bool = True) -> list[int]:
    """torchvision's size argument: an int (smaller edge, or a square for
    crops) or a sequence (h, w) or (s,)."""
    if isinstance(size, numbers.Integral) and not isinstance(size, bool):
        if size < 1:
            raise ValueError(f"{name}: size must be >= 1, got {size}")
        return [int(size)]
    if isinstance(size, Sequence) and len(size) in (1, 2) and all(isinstance(s, numbers.Integral) for s in size):
        if any(s < 1 for s in size):
            raise ValueError(f"{name}: size must be >= 1, got {tuple(size)}")
        return [int(s) for s in size]
    raise TypeError(f"{name}: size must be an int or a sequence of 1 or 2 ints, got {size!r}")


def _pair(name: str, arg: str, value: Any) -> list[float]:
    if not (isinstance(value, Sequence) and len(value) == 2):
        raise TypeError(f"{name}: {arg} must be a sequence of two numbers, got {value!r}")
    a, b = (float(v) for v in value)
    if not (math.isfinite(a) and math.isfinite(b)) or a > b:
        raise ValueError(f"{name}: {arg} must be (min, max) with min <= max, got {value!r}")
    return [a, b]


def _prob(name: str, p: Any) -> float:
    p = float(p)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{name}: p must be in [0, 1], got {p}")
    return p


class Transform(abc.ABC):
    """Base class: a native transform with a JSON ``spec()``."""

    op: str = ""

    @abc.abstractmethod
    def spec(self) -> dict[str, Any]:
        """The JSON object the Go core runs."""

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.spec().items() if k != "op")
        return f"{type(self).__name__}({args})"


class Compose:
    """A chain of native transforms, applied in order (torchvision.transforms.Compose)."""

    def __init__(self, transforms: Sequence[Transform]) -> None:
        transforms = list(transforms)
        for i, t in enumerate(transforms):
            if not isinstance(t, Transform):
                raise TypeError(
                    f"Compose: transforms[{i}] is a {type(t).__module__}.{type(t).__qualname__}, not a native "
                    "minatoloader transform (use minatoloader.transforms, or from_torchvision())"
                )
        self.transforms = transforms

    def specs(self) -> list[dict[str, Any]]:
        return [t.spec() for t in self.transforms]

    def __repr__(self) -> str:
        inner = "".join(f"\n    {t!r}," for t in self.transforms)
        return f"Compose([{inner}\n])"


def specs_of(transform: Compose | Transform | Sequence[Transform] | None) -> list[dict[str, Any]]:
    """The JSON chain of a Compose, a single transform, a list, or None."""
    if transform is None:
        return []
    if isinstance(transform, Compose):
        return transform.specs()
    if isinstance(transform, Transform):
        return [transform.spec()]
    return Compose(transform).specs()


# ------------------------------------------------------------------ images
class Resize(Transform):
    """Bilinear resize (antialiased when downscaling, as PIL does). An int
    size resizes the smaller edge, keeping the aspect ratio."""

    op = "resize"

    def __init__(self, size: int | Sequence[int], interpolation: Any = "bilinear", antialias: bool | None = True) -> None:
        name = str(getattr(interpolation, "value", interpolation)).lower()
        if name not in ("bilinear", "2"):
            raise ValueError(f"Resize: only bilinear interpolation is native, got {interpolation!r}")
        if antialias is False:
            raise ValueError("Resize: antialias=False is not native (PIL images are always antialiased)")
        self.size = _size("Resize", size)

    def spec(self) -> dict[str, Any]:
        return {"op": self.op, "size": self.size}


class CenterCrop(Transform):
    op = "center_crop"

    def __init__(self, size: int | Sequence[int]) -> None:
        s = _size("CenterCrop", size)
        self.size = s * 2 if len(s) == 1 else s

    def spec(self) -> dict[str, Any]:
        return {"op": self.op, "size": self.size}


class RandomCrop(Transform):
    op = "random_crop"

    def __init__(self, size: int | Sequence[int], padding: Any = None, pad_if_needed: bool = False) -> None:
        if padding not in (None, 0) or pad_if_needed:
            raise ValueError("RandomCrop: padding and pad_if_needed are not native")
        s = _size("RandomCrop", size)
        self.size = s * 2 if len(s) == 1 else s

    def spec(self) -> dict[str, Any]:
        return {"op": self.op, "size": self.size}


class RandomResizedCrop(Transform):
    op = "random_resized_crop"

    def __init__(
        self,
        size: int | Sequence[int],
        scale: Sequence[float] = (0.08, 1.0),
        ratio: Sequence[float] = (3.0 / 4.0, 4.0 / 3.0),
        interpolation: Any = "bilinear",
        antialias: bool | None = True,
    ) -> None:
        Resize(1, interpolation, antialias)  # same checks
        s = _size("RandomResizedCrop", size)
        self.size = s * 2 if len(s) == 1 else s
        self.scale = _pair("RandomResizedCrop", "scale", scale)
        self.ratio = _pair("RandomResizedCrop", "ratio", ratio)

    def spec(self) -> dict[str, Any]:
        return {"op": self.op, "size": self.size, "scale": self.scale, "ratio": self.ratio}


class RandomHorizontalFlip(Transform):
    op = "random_horizontal_flip"

    def __init__(self, p: float = 0.5) -> None:
        self.p = _prob("RandomHorizontalFlip", p)

    def spec(self) -> dict[str, Any]:
        return {"op": self.op, "p": self.p}


class RandomVerticalFlip(Transform):
    op = "random_vertical_flip"

    def __init__(self, p: float = 0.5) -> None:
        self.p = _prob("RandomVerticalFlip", p)

    def spec(self) -> dict[str, Any]:
        return {"op": self.op, "p": self.p}


class ColorJitter(Transform):
    op = "color_jitter"

    def __init__(self, brightness: float = 0, contrast: float = 0, saturation: float = 0, hue: float = 0) -> None:
        if hue not in (0, 0.0, None):
            raise ValueError("ColorJitter: hue is not native")
        for name, v in (("brightness", brightness), ("contrast", contrast), ("saturation", saturation)):
            if not isinstance(v, numbers.Real) or v < 0:
                raise ValueError(f"ColorJitter: {name} must be a number >= 0 (ranges are not native), got {v!r}")
        self.brightness, self.contrast, self.saturation = float(brightness), float(contrast), float(saturation)

    def spec(self) -> dict[str, Any]:
        return {"op": self.op, "brightness": self.brightness, "contrast": self.contrast, "saturation": self.saturation}


class ToTensor(Transform):
    """HWC uint8 -> CHW float32 in [0, 1]."""

    op = "to_tensor"

    def spec(self) -> dict[str, Any]:
        return {"op": self.op}


class PILToTensor(Transform):
    """HWC uint8 -> CHW uint8."""

    op = "pil_to_tensor"

    def spec(self) -> dict[str, Any]:
        return {"op": self.op}


class Normalize(Transform):
    op = "normalize"

    def __init__(self, mean: Sequence[float], std: Sequence[float], inplace: bool = False) -> None:
        self.mean = [float(m) for m in mean]
        self.std = [float(s) for s in std]
        if not self.mean or len(self.mean) != len(self.std):
            raise ValueError(f"Normalize: mean and std must have the same non-zero length, got {mean!r}, {std!r}")
        if any(s == 0 for s in self.std):
            raise ValueError(f"Normalize: std evaluated to zero, leading to division by zero ({std!r})")

    def spec(self) -> dict[str, Any]:
        return {"op": self.op, "mean": self.mean, "std": self.std}


# ------------------------------------------------------------------- audio
class Resample(Transform):
    op = "resample"

    def __init__(self, rate: int) -> None:
        if not isinstance(rate, numbers.Integral) or rate < 1:
            raise ValueError(f"Resample: rate must be an int >= 1, got {rate!r}")
        self.rate = int(rate)

    def spec(self) -> dict[str, Any]:
        return {"op": self.op, "rate": self.rate}


class PadTrim(Transform):
    """Pads with zeros or trims the waveform to ``length`` samples; with
    ``random_offset`` the trimmed window starts at a random offset."""

    op = "pad_trim"

    def __init__(self, length: int, random_offset: bool = False) -> None:
        if not isinstance(length, numbers.Integral) or length < 1:
            raise ValueError(f"PadTrim: length must be an int >= 1, got {length!r}")
        self.length, self.random_offset = int(length), bool(random_offset)

    def spec(self) -> dict[str, Any]:
        return {"op": self.op, "length": self.length, "random_offset": self.random_offset}


class Spectrogram(Transform):
    """torchaudio.transforms.Spectrogram (center=True, reflect padding, onesided)."""

    op = "spectrogram"

    def __init__(
        self, n_fft: int = 400, win_length: int | None = None, hop_length: int | None = None,
        window: str = "hann", power: float = 2.0,
    ) -> None:
        self.n_fft = int(n_fft)
        self.win_length = int(win_length) if win_length is not None else self.n_fft
        self.hop_length = int(hop_length) if hop_length is not None else self.win_length // 2
        if window not in ("hann", "hamming"):
            raise ValueError(f"Spectrogram: window must be 'hann' or 'hamming', got {window!r}")
        if power not in (1, 2, 1.0, 2.0):
            raise ValueError(f"Spectrogram: power must be 1 or 2, got {power!r}")
        self.window, self.power = window, float(power)

    def spec(self) -> dict[str, Any]:
        return {"op": self.op, "n_fft": self.n_fft, "win_length": self.win_length, "hop_length": self.hop_length,
                "window": self.window, "power": self.power}


class MelScale(Transform):
    """torchaudio.transforms.MelScale over a spectrogram."""

    op = "mel"

    def __init__(self, n_mels: int = 128, sample_rate: int = 16000, f_min: float = 0.0, f_max: float | None = None,
                 norm: str | None = None, mel_scale: str = "htk") -> None:
        if mel_scale not in ("htk", "slaney") or norm not in (None, "slaney"):
            raise ValueError(f"MelScale: mel_scale must be 'htk' or 'slaney' and norm None or 'slaney'; got {mel_scale!r}, {norm!r}")
        self.n_mels, self.sample_rate, self.f_min = int(n_mels), int(sample_rate), float(f_min)
        self.f_max = float(f_max) if f_max is not None else sample_rate / 2.0
        self.norm, self.mel_scale = norm, mel_scale

    def spec(self) -> dict[str, Any]:
        return {"op": self.op, "n_mels": self.n_mels, "sample_rate": self.sample_rate, "f_min": self.f_min,
                "f_max": self.f_max, "norm": self.norm or "", "mel_scale": self.mel_scale}


class Log(Transform):
    """log(x + eps), the log-mel filterbank's last step."""

    op = "log"

    def __init__(self, eps: float = 1e-6) -> None:
        self.eps = float(eps)

    def spec(self) -> dict[str, Any]:
        return {"op": self.op, "eps": self.eps}


class FrequencyMasking(Transform):
    op = "frequency_masking"

    def __init__(self, freq_mask_param: int, count: int = 1) -> None:
        self.param, self.count = int(freq_mask_param), int(count)

    def spec(self) -> dict[str, Any]:
        return {"op": self.op, "param": self.param, "count": self.count}


class TimeMasking(Transform):
    op = "time_masking"

    def __init__(self, time_mask_param: int, count: int = 1) -> None:
        self.param, self.count = int(time_mask_param), int(count)

    def spec(self) -> dict[str, Any]:
        return {"op": self.op, "param": self.param, "count": self.count}


class FrameSplicing(Transform):
    op = "frame_splicing"

    def __init__(self, stack: int, subsample: int = 1) -> None:
        self.stack, self.subsample = int(stack), int(subsample)

    def spec(self) -> dict[str, Any]:
        return {"op": self.op, "stack": self.stack, "subsample": self.subsample}


class NormalizeFeatures(Transform):
    """Per-feature mean/std normalisation over time."""

    op = "normalize_features"

    def __init__(self, eps: float = 1e-5) -> None:
        self.eps = float(eps)

    def spec(self) -> dict[str, Any]:
        return {"op": self.op, "eps": self.eps}


# ------------------------------------------------------------------ volumes
class RandomCrop3D(Transform):
    """A (D, H, W) crop of the image and label volumes; with probability
    ``foreground_p`` centred on a random foreground voxel of the label."""

    op = "random_crop_3d"

    def __init__(self, size: Sequence[int], foreground_p: float = 0.0) -> None:
        if not (isinstance(size, Sequence) and len(size) == 3 and all(int(s) >= 1 for s in size)):
            raise ValueError(f"RandomCrop3D: size must be (d, h, w) of ints >= 1, got {size!r}")
        self.size = [int(s) for s in size]
        self.foreground_p = _prob("RandomCrop3D", foreground_p)

    def spec(self) -> dict[str, Any]:
        return {"op": self.op, "size": self.size, "foreground_p": self.foreground_p}


class RandomFlip3D(Transform):
    op = "random_flip_3d"

    def __init__(self, p: float = 0.5) -> None:
        self.p = _prob("RandomFlip3D", p)

    def spec(self) -> dict[str, Any]:
        return {"op": self.op, "p": self.p}


class RandomBrightness(Transform):
    op = "random_brightness"

    def __init__(self, factor: float = 0.3, p: float = 0.1) -> None:
        self.factor, self.p = float(factor), _prob("RandomBrightness", p)

    def spec(self) -> dict[str, Any]:
        return {"op": self.op, "factor": self.factor, "p": self.p}


class GaussianNoise(Transform):
    op = "gaussian_noise"

    def __init__(self, std: float = 0.1, p: float = 0.1) -> None:
        self.std, self.p = float(std), _prob("GaussianNoise", p)

    def spec(self) -> dict[str, Any]:
        return {"op": self.op, "std": self.std, "p": self.p}


class Cast(Transform):
    op = "cast"

    def __init__(self, dtype: str = "float32") -> None:
        self.dtype = str(dtype).replace("torch.", "")

    def spec(self) -> dict[str, Any]:
        return {"op": self.op, "dtype": self.dtype}


# ------------------------------------------------------ torchvision bridge
def from_torchvision(transform: Any) -> tuple[Compose | None, str]:
    """Translates a torchvision transform (a ``Compose`` or a single one)
    into a native Compose that computes the same thing: (compose, "") or
    (None, the reason, naming the step). See ``_tv_map`` for what counts
    as the same."""
    from ._tv_map import from_torchvision as translate

    return translate(transform)
