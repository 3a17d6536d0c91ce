"""Native file datasets: samples read from disk and transformed in the Go core.

Each dataset is a description checked by the library when it is created
(a bad root, an empty class, an unknown transform or a chain whose output
size is not fixed raise :class:`InvalidArgumentError` naming the cause); its
``len()``, ``classes`` and output ``fields`` come from the library.

=============== ===================================== ==========================
dataset         samples                               fields, in order
=============== ===================================== ==========================
ImageFolder     root/<class>/.../<image>              image, label
FileList        a .csv (path,label) or .jsonl file    image, label
AudioFolder     root/<class>/.../<file>.wav           features, length, label
NpyPairs        root/<case>_x.npy + <case>_y.npy      image, label (volumes)
=============== ===================================== ==========================
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any, Optional, Union

from . import _native
from .dataset import Dataset
from .transforms import Compose, Transform, specs_of

__all__ = ["FileDataset", "ImageFolder", "FileList", "AudioFolder", "NpyPairs"]

TransformArg = Optional[Union[Compose, Transform, Sequence[Transform]]]


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

    def __init__(self, root: str | os.PathLike[str], transform: TransformArg = None, **kwargs: Any) -> None:
        super().__init__(transform, root=os.fspath(root), **kwargs)


class FileList(FileDataset):
    """Images listed in a .csv (header ``path,label``) or .jsonl
    (``{"path": ..., "label": ...}`` per line); relative paths are relative
    to the list's folder."""

    kind = "file_list"

    def __init__(self, list_file: str | os.PathLike[str], transform: TransformArg = None, **kwargs: Any) -> None:
        super().__init__(transform, list=os.fspath(list_file), **kwargs)


class AudioFolder(FileDataset):
    """WAV files in root/<class>/...; the chain turns each into fixed-size
    features (e.g. Resample, PadTrim, Spectrogram, MelScale, Log)."""

    kind = "audio_folder"

    def __init__(self, root: str | os.PathLike[str], transform: TransformArg = None, **kwargs: Any) -> None:
        super().__init__(transform, root=os.fspath(root), **kwargs)


class NpyPairs(FileDataset):
    """KiTS19-style volume pairs root/<case>_x.npy (image) and
    root/<case>_y.npy (label), as the MLPerf 3D-UNet reference stores them."""

    kind = "npy_pairs"

    def __init__(self, root: str | os.PathLike[str], transform: TransformArg = None, **kwargs: Any) -> None:
        super().__init__(transform, root=os.fspath(root), **kwargs)
