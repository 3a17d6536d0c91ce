"""Native file datasets: samples read from disk and transformed in the Go core.

Each dataset is a description checked by the library when it is created
(a bad root, an empty class, an unknown transform or a chain whose output
size is not fixed raise :class:`InvalidArgumentError` naming the cause); its
``len()``, ``classes`` and output ``fields`` come from the library.

=============== ===================================== ==========================
dataset         samples                               fields, in order
=============== ===================================== ==========================
ImageFolder     root/<class>/.../<image>              image, label
FileList        a .csv/.jsonl file, or (path, label)s image, label
AudioFolder     root/<class>/.../<file>.wav           features, length, label
NpyPairs        root/<case>_x.npy + <case>_y.npy      image, label (volumes)
=============== ===================================== ==========================
"""

from __future__ import annotations

import base64
import json
import numbers
import os
from collections.abc import Sequence
from typing import Any, Optional, Union

from . import _native
from .dataset import Dataset
from .transforms import Compose, Transform, specs_of

__all__ = ["FileDataset", "ImageFolder", "FileList", "AudioFolder", "NpyPairs"]

TransformArg = Optional[Union[Compose, Transform, Sequence[Transform]]]


def _path_option(key: str, path: str | bytes | os.PathLike[Any]) -> dict[str, str]:
    """The config entries for a file name: ``{key: name}`` as a str, and
    when the name's bytes are not UTF-8 (a str holding surrogate escapes,
    or bytes), also ``{key + "_bytes": base64 of the bytes}``, which the
    library uses in its place: JSON strings cannot carry such a name
    losslessly."""
    raw = os.fsencode(path)
    name = os.fsdecode(raw)
    try:
        if name.encode("utf-8") == raw:
            return {key: name}
    except UnicodeEncodeError:
        pass
    return {key: name, key + "_bytes": base64.b64encode(raw).decode("ascii")}


class FileDataset(Dataset[Any]):
    """Base of the native file datasets."""

    kind = ""

    def __init__(
        self,
        transform: TransformArg = None,
        *,
        extensions: Sequence[str] | None = None,
        max_pixels: int | None = None,
        max_file_bytes: int | None = None,
        max_sample_bytes: int | None = None,
        decode_scale: bool = False,
        collate: str = "stack",
        **source: Any,
    ) -> None:
        self.transform = transform
        self._config: dict[str, Any] = {"kind": self.kind, **source, "transforms": specs_of(transform)}
        if extensions is not None:
            self._config["extensions"] = [str(e) for e in extensions]
        if max_pixels is not None:
            self._config["max_pixels"] = int(max_pixels)
        if max_file_bytes is not None:
            self._config["max_file_bytes"] = int(max_file_bytes)
        if max_sample_bytes is not None:
            # Bounds what a transform that can grow a sample makes of it
            # (Resample, Spectrogram, FrameSplicing, Resize, a padded 3D
            # crop); 0 or None: 256 MiB.
            self._config["max_sample_bytes"] = int(max_sample_bytes)
        if collate != "stack":
            # "pad": sizes the chain leaves variable are zero-padded to the
            # largest sample of each batch (audio without PadTrim, images
            # without a crop); the field's shape then varies per batch.
            self._config["collate"] = collate
        if decode_scale:
            # Fused image chains decode JPEGs at a reduced DCT scale that
            # still covers the output: faster, pixels close to (not equal
            # to) torchvision's; random parameters are unchanged.
            self._config["decode_scale"] = True
        info = json.loads(_native.dataset_info(json.dumps(self._config)))
        self._len = int(info["length"])
        self.fields: list[dict[str, Any]] = info["fields"]
        self.classes: list[str] = info.get("classes") or []
        if info.get("classes_bytes"):
            # Names that are not UTF-8, as torchvision has them (os.fsdecode).
            self.classes = [os.fsdecode(base64.b64decode(c)) for c in info["classes_bytes"]]
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}
        # "libjpeg-turbo" or "image/jpeg" for image datasets, else None.
        self.jpeg_decoder: str | None = info.get("jpeg_decoder")

    def config(self) -> dict[str, Any]:
        return json.loads(json.dumps(self._config))

    def __len__(self) -> int:
        return self._len

    def __repr__(self) -> str:
        where = self._config.get("root") or self._config.get("list")
        return f"{type(self).__name__}({where!r}, {len(self)} samples, fields={[f['name'] for f in self.fields]})"


class ImageFolder(FileDataset):
    """torchvision.datasets.ImageFolder, decoded and transformed natively.
    The chain must end in ToTensor or PILToTensor (optionally Normalize) and
    give every image the same size (e.g. RandomResizedCrop or CenterCrop)."""

    kind = "image_folder"

    def __init__(self, root: str | bytes | os.PathLike[Any], transform: TransformArg = None, **kwargs: Any) -> None:
        super().__init__(transform, **_path_option("root", root), **kwargs)


def _sample_path(path: str | bytes | os.PathLike[Any]) -> str | dict[str, str]:
    """A ``dataset.samples`` path: the name as a str, or ``{"bytes": base64}``
    when its bytes are not UTF-8 (as _path_option)."""
    option = _path_option("p", path)
    return {"bytes": option["p_bytes"]} if "p_bytes" in option else option["p"]


class FileList(FileDataset):
    """Images listed in a .csv (header ``path,label``) or .jsonl
    (``{"path": ..., "label": ...}`` per line); relative paths are relative
    to the list's folder.

    Or, with ``samples=[(path, label), ...]`` in place of the list file, the
    pairs themselves (as torchvision's ``DatasetFolder.samples``), sent to
    the library in memory and used as given: in order, duplicates kept,
    relative paths relative to the working directory."""

    kind = "file_list"

    def __init__(
        self,
        list_file: str | bytes | os.PathLike[Any] | None = None,
        transform: TransformArg = None,
        *,
        samples: Sequence[tuple[str | bytes | os.PathLike[Any], int]] | None = None,
        **kwargs: Any,
    ) -> None:
        if (list_file is None) == (samples is None):
            raise TypeError("FileList: give either list_file or samples")
        if samples is not None:
            rows: list[list[Any]] = []
            for k, entry in enumerate(samples):
                try:
                    path, label = entry
                except (TypeError, ValueError):
                    raise TypeError(f"FileList: samples[{k}] is not a (path, label) pair") from None
                if isinstance(label, bool) or not isinstance(label, numbers.Integral):
                    raise TypeError(f"FileList: samples[{k}]'s label is a {type(label).__name__}, not an int")
                rows.append([_sample_path(path), int(label)])
            super().__init__(transform, samples=rows, **kwargs)
        else:
            assert list_file is not None
            super().__init__(transform, **_path_option("list", list_file), **kwargs)

    def __repr__(self) -> str:
        if "samples" in self._config:
            return f"FileList(samples=<{len(self)} pairs>, fields={[f['name'] for f in self.fields]})"
        return super().__repr__()


class AudioFolder(FileDataset):
    """WAV files in root/<class>/...; the chain turns each into fixed-size
    features (e.g. Resample, PadTrim, Spectrogram, MelScale, Log)."""

    kind = "audio_folder"

    def __init__(self, root: str | bytes | os.PathLike[Any], transform: TransformArg = None, **kwargs: Any) -> None:
        super().__init__(transform, **_path_option("root", root), **kwargs)


class NpyPairs(FileDataset):
    """KiTS19-style volume pairs root/<case>_x.npy (image) and
    root/<case>_y.npy (label), as the MLPerf 3D-UNet reference stores them."""

    kind = "npy_pairs"

    def __init__(self, root: str | bytes | os.PathLike[Any], transform: TransformArg = None, **kwargs: Any) -> None:
        super().__init__(transform, **_path_option("root", root), **kwargs)
