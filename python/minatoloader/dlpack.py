"""Batches and their DLPack-exportable fields.

A :class:`Batch` owns one batch handle of the library. Each of its fields
(``data``, ``labels``, ``indices``) is a :class:`Tensor` that implements the
DLPack protocol (``__dlpack__`` / ``__dlpack_device__``), so
``torch.from_dlpack(batch.data)`` or ``numpy.from_dlpack(batch.data)`` views
the batch memory without a copy.

Every ``__dlpack__`` call exports a new DLPack tensor that keeps the batch
memory alive on its own (the library counts references), so a batch may be
closed as soon as its fields have been imported; the memory is freed when the
last consumer lets go. A capsule that is never consumed frees its tensor when
it is garbage collected (the capsule destructor is the library's own C
function ``ml_dlpack_capsule_destructor``).
"""

from __future__ import annotations

import ctypes
from ctypes import POINTER, c_char_p, c_void_p, py_object
from typing import Any

from . import _native
from ._handle import NativeHandle

# Capsule names: PyCapsule keeps the pointer, not a copy, so these bytes
# objects must outlive every capsule; module globals do.
_CAPSULE_NAME = b"dltensor"
_CAPSULE_NAME_VERSIONED = b"dltensor_versioned"

# A private prototype of PyCapsule_New (ctypes.pythonapi's shared function
# object is left untouched). PYFUNCTYPE holds the GIL and raises the Python
# error when the call fails.
_PyCapsule_New = ctypes.PYFUNCTYPE(py_object, c_void_p, c_char_p, c_void_p)(("PyCapsule_New", ctypes.pythonapi))

DTYPE_NAMES = {
    (0, 8): "int8",
    (0, 16): "int16",
    (0, 32): "int32",
    (0, 64): "int64",
    (1, 8): "uint8",
    (1, 16): "uint16",
    (1, 32): "uint32",
    (1, 64): "uint64",
    (2, 16): "float16",
    (2, 32): "float32",
    (2, 64): "float64",
    (4, 16): "bfloat16",
    (6, 8): "bool",
}



def _delete_exported(address: int, versioned: bool) -> None:
    """Calls the deleter of a tensor that no capsule took ownership of."""
    if versioned:
        vptr = ctypes.cast(c_void_p(address), POINTER(_native.DLManagedTensorVersioned))
        if vptr.contents.deleter:
            vptr.contents.deleter(vptr)
    else:
        lptr = ctypes.cast(c_void_p(address), POINTER(_native.DLManagedTensor))
        if lptr.contents.deleter:
            lptr.contents.deleter(lptr)


def export_capsule(handle: int, field: int, versioned: bool, stream: int = -1) -> Any:
    """Exports one field of the batch handle as a new DLPack capsule
    ("dltensor_versioned" or legacy "dltensor"). The capsule keeps the batch
    memory alive on its own; an unconsumed capsule frees it when collected."""
    address = _native.batch_export(handle, field, versioned, stream)
    try:
        return _PyCapsule_New(
            address,
            _CAPSULE_NAME_VERSIONED if versioned else _CAPSULE_NAME,
            _native.capsule_destructor(),
        )
    except BaseException:
        _delete_exported(address, versioned)
        raise


class Tensor:
    """One field of a batch, exportable through DLPack without a copy.

    ``shape``, ``dtype`` (numpy spelling), ``device`` (DLPack device tuple)
    and ``data_ptr`` (address of the first element) describe it; ``batch`` is
    the :class:`Batch` it belongs to, which stays open while this object is
    alive unless closed explicitly.
    """

    __slots__ = ("batch", "field", "shape", "dtype", "device", "data_ptr")

    def __init__(
        self,
        batch: Batch,
        field: int,
        shape: tuple[int, ...],
        dtype: str,
        device: tuple[int, int],
        data_ptr: int,
    ) -> None:
        self.batch = batch
        self.field = field
        self.shape = shape
        self.dtype = dtype
        self.device = device
        self.data_ptr = data_ptr

    @property
    def name(self) -> str:
        """The field's name ("indices" for FIELD_INDICES)."""
        return self.batch._fields[self.field][0]

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device

    def __dlpack__(
        self,
        *,
        stream: int | None = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> Any:
        """Exports this field as a DLPack capsule: "dltensor_versioned"
        (DLPack >= 1.0) when ``max_version[0] >= 1``, else the legacy
        "dltensor". The export never copies: ``copy=True`` raises BufferError,
        as does a ``dl_device`` other than the batch's own device."""
        if copy:
            raise BufferError("minatoloader: copy=True is not supported: batches are exported without a copy")
        if dl_device is not None and tuple(dl_device) != self.device:
            raise BufferError(
                f"minatoloader: cannot export to device {tuple(dl_device)}: the batch is on device {self.device}"
            )
        versioned = max_version is not None and int(max_version[0]) >= 1
        handle = self.batch._live_handle()
        return export_capsule(handle, self.field, versioned, -1 if stream is None else int(stream))

    def __repr__(self) -> str:
        return f"<minatoloader.Tensor {self.name} shape={self.shape} dtype={self.dtype} device={self.device}>"


class Batch(NativeHandle):
    """A batch handed out by the library. Release it with ``close()`` (or a
    ``with`` block, or by dropping every reference); tensors imported from
    its fields stay valid after that.

    ``names`` lists the dataset's fields in order (a SyntheticDataset has
    "data" and "label"); ``field(i)`` or ``fields[name]`` gives one as a
    :class:`Tensor`, ``indices`` the dataset index of each row."""

    _kind = "batch"

    def __init__(self, handle: int) -> None:
        super().__init__(handle, _native.batch_release)
        try:
            info = _native.batch_info(handle)
            specs = [_native.batch_field(handle, f) for f in range(info.num_fields)]
            specs.append(_native.batch_field(handle, _native.FIELD_INDICES))
        except BaseException:
            self.close()
            raise
        self.epoch = int(info.epoch)
        self.seq = int(info.seq)
        self.num_samples = int(info.num_samples)
        self.num_slow = int(info.num_slow)
        self.device = (int(info.device.device_type), int(info.device.device_id))
        # Field descriptions, not Tensor objects: a Tensor refers to its
        # batch, and storing it here would make a cycle that delays release
        # until the cyclic garbage collector runs.
        self._fields: dict[int, tuple[str, tuple[int, ...], str, int]] = {}
        for number, fi in zip([*range(info.num_fields), _native.FIELD_INDICES], specs):
            key = (int(fi.dtype.code), int(fi.dtype.bits))
            dtype = DTYPE_NAMES.get(key, f"dlpack(code={key[0]}, bits={key[1]})")
            shape = tuple(int(fi.shape[i]) for i in range(fi.ndim))
            self._fields[number] = (fi.name.decode(), shape, dtype, int(fi.data or 0))
        self.names = tuple(self._fields[f][0] for f in range(info.num_fields))

    def field(self, field: int) -> Tensor:
        """The Tensor of field number ``field`` (0..len(names)-1, or
        FIELD_INDICES)."""
        try:
            _, shape, dtype, address = self._fields[field]
        except KeyError:
            raise IndexError(
                f"minatoloader: the batch has fields 0..{len(self.names) - 1} {self.names} and FIELD_INDICES; "
                f"got {field!r}"
            ) from None
        return Tensor(self, field, shape, dtype, self.device, address)

    @property
    def fields(self) -> dict[str, Tensor]:
        """Every field by name, in the dataset's order."""
        return {name: self.field(f) for f, name in enumerate(self.names)}

    @property
    def data(self) -> Tensor:
        """Field 0 (a SyntheticDataset's "data": [num_samples, *shape])."""
        return self.field(_native.FIELD_DATA)

    @property
    def labels(self) -> Tensor:
        """Field 1 (a SyntheticDataset's "label": [num_samples] int64)."""
        return self.field(_native.FIELD_LABELS)

    @property
    def indices(self) -> Tensor:
        """The dataset index of each row: [num_samples] int64."""
        return self.field(_native.FIELD_INDICES)

    def __len__(self) -> int:
        return self.num_samples

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        shapes = ", ".join(f"{name}={self._fields[f][1]}" for f, name in enumerate(self.names))
        return (
            f"<minatoloader.Batch epoch={self.epoch} seq={self.seq} samples={self.num_samples} "
            f"slow={self.num_slow} {shapes} {state}>"
        )
