"""Native datasets: described in Python, read by the Go core.

A native dataset is a description (a JSON object, the "dataset" option of the
loader); its samples are produced and batched inside the library, off the
GIL. Indexing one from Python is therefore not possible.
"""

from __future__ import annotations

import abc
import numbers
from collections.abc import Iterable
from typing import Any, Generic, TypeVar

_T_co = TypeVar("_T_co", covariant=True)


def _int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"SyntheticDataset: {name} must be an int, got {type(value).__name__} ({value!r})")
    return int(value)


def _float(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"SyntheticDataset: {name} must be a number, got {type(value).__name__} ({value!r})")
    return float(value)


def _dtype_name(value: Any) -> str:
    """numpy/torch spelling of a dtype given as a str, numpy dtype or torch dtype."""
    if isinstance(value, str):
        return value
    text = str(value)
    if text.startswith("torch."):
        return text[len("torch.") :]
    import numpy

    try:
        return str(numpy.dtype(value).name)
    except TypeError as exc:
        raise TypeError(f"SyntheticDataset: dtype must be a dtype name such as 'float32', got {value!r}") from exc


class Dataset(Generic[_T_co], abc.ABC):
    """Base class of native datasets. ``config()`` returns the JSON object the
    library reads; ``len()`` is the number of samples."""

    @abc.abstractmethod
    def config(self) -> dict[str, Any]:
        """The "dataset" option of the loader's JSON configuration."""

    @abc.abstractmethod
    def __len__(self) -> int:
        """The number of samples."""

    def __getitem__(self, index: int) -> _T_co:
        raise TypeError(
            f"{type(self).__name__} is a native dataset: its samples are produced and batched in the "
            "Go core of minatoloader, so they cannot be indexed from Python. Iterate over a "
            "minatoloader.DataLoader or NativeLoader built on it instead."
        )


class SyntheticDataset(Dataset[tuple[Any, int]]):
    """A synthetic, speech-like source: ``length`` samples of ``shape`` and
    ``dtype`` with an integer label in ``[0, num_classes)``.

    Its cost model stands in for preprocessing: every sample costs
    ``light_cost_us`` microseconds; a heavy sample costs ``heavy_cost_us``
    more. Heavy samples are every ``heavy_every``-th index (0: none) and a
    ``heavy_fraction`` of the samples chosen at random (by index, so the same
    samples every epoch). ``cost_kind`` is "busy" (spins a CPU) or "sleep"
    (waits, like I/O). A sample whose index is in ``fail_indices`` fails,
    which raises :class:`minatoloader.SampleError` naming the index.

    Values are checked by the library when a loader is created; the error
    names the option as "dataset.<argument>".
    """

    def __init__(
        self,
        length: int,
        shape: Iterable[int] = (16,),
        dtype: Any = "float32",
        light_cost_us: float = 0.0,
        heavy_cost_us: float = 0.0,
        heavy_every: int = 0,
        heavy_fraction: float = 0.0,
        cost_kind: str = "busy",
        num_classes: int = 10,
        fail_indices: Iterable[int] = (),
    ) -> None:
        self.length = _int("length", length)
        if self.length < 0:
            raise ValueError(f"SyntheticDataset: length must be >= 0, got {self.length}")
        dims: Iterable[Any] = (shape,) if isinstance(shape, numbers.Integral) else shape
        self.shape = tuple(_int("shape", s) for s in dims)
        self.dtype = _dtype_name(dtype)
        self.light_cost_us = _float("light_cost_us", light_cost_us)
        self.heavy_cost_us = _float("heavy_cost_us", heavy_cost_us)
        self.heavy_every = _int("heavy_every", heavy_every)
        self.heavy_fraction = _float("heavy_fraction", heavy_fraction)
        if not isinstance(cost_kind, str):
            raise TypeError(f"SyntheticDataset: cost_kind must be 'busy' or 'sleep', got {cost_kind!r}")
        self.cost_kind = cost_kind
        self.num_classes = _int("num_classes", num_classes)
        self.fail_indices = tuple(_int("fail_indices", i) for i in fail_indices)

    def config(self) -> dict[str, Any]:
        return {
            "kind": "synthetic",
            "length": self.length,
            "shape": list(self.shape),
            "dtype": self.dtype,
            "light_cost_us": self.light_cost_us,
            "heavy_cost_us": self.heavy_cost_us,
            "heavy_every": self.heavy_every,
            "heavy_fraction": self.heavy_fraction,
            "cost_kind": self.cost_kind,
            "num_classes": self.num_classes,
            "fail_indices": list(self.fail_indices),
        }

    def __len__(self) -> int:
        return self.length

    def __repr__(self) -> str:
        return (
            f"SyntheticDataset(length={self.length}, shape={self.shape}, dtype={self.dtype!r}, "
            f"light_cost_us={self.light_cost_us}, heavy_cost_us={self.heavy_cost_us}, "
            f"heavy_every={self.heavy_every}, heavy_fraction={self.heavy_fraction}, "
            f"cost_kind={self.cost_kind!r}, num_classes={self.num_classes}, "
            f"fail_indices={self.fail_indices})"
        )
