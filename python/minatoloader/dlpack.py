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

_FIELD_NAMES = {_native.FIELD_DATA: "data", _native.FIELD_LABELS: "labels", _native.FIELD_INDICES: "indices"}


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
        """ "data", "labels" or "indices"."""
        return _FIELD_NAMES.get(self.field, str(self.field))

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
    its fields stay valid after that."""

    _kind = "batch"

    def __init__(self, handle: int) -> None:
        super().__init__(handle, _native.batch_release)
        try:
            info = _native.batch_info(handle)
        except BaseException:
            self.close()
            raise
        self.epoch = int(info.epoch)
        self.seq = int(info.seq)
        self.num_samples = int(info.num_samples)
        self.num_slow = int(info.num_slow)
        device = (int(info.device.device_type), int(info.device.device_id))
        key = (int(info.dtype.code), int(info.dtype.bits))
        dtype = DTYPE_NAMES.get(key, f"dlpack(code={key[0]}, bits={key[1]})")
        shape = tuple(int(info.shape[i]) for i in range(info.ndim))
        n = self.num_samples
        labels_ptr = ctypes.cast(info.labels, c_void_p).value or 0
        indices_ptr = ctypes.cast(info.indices, c_void_p).value or 0
        # Field descriptions, not Tensor objects: a Tensor refers to its
        # batch, and storing it here would make a cycle that delays release
        # until the cyclic garbage collector runs.
        self._fields = {
            _native.FIELD_DATA: (shape, dtype, int(info.data or 0)),
            _native.FIELD_LABELS: ((n,), "int64", int(labels_ptr)),
            _native.FIELD_INDICES: ((n,), "int64", int(indices_ptr)),
        }
        self.device = device

    def field(self, field: int) -> Tensor:
        """The Tensor of one field (FIELD_DATA, FIELD_LABELS, FIELD_INDICES)."""
        shape, dtype, address = self._fields[field]
        return Tensor(self, field, shape, dtype, self.device, address)

    @property
    def data(self) -> Tensor:
        """The samples: [num_samples, *sample_shape] of the dataset's dtype."""
        return self.field(_native.FIELD_DATA)

    @property
    def labels(self) -> Tensor:
        """The labels: [num_samples] int64."""
        return self.field(_native.FIELD_LABELS)

    @property
    def indices(self) -> Tensor:
        """The dataset index of each row: [num_samples] int64."""
        return self.field(_native.FIELD_INDICES)

    def __len__(self) -> int:
        return self.num_samples

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return (
            f"<minatoloader.Batch epoch={self.epoch} seq={self.seq} samples={self.num_samples} "
            f"slow={self.num_slow} shape={self._fields[_native.FIELD_DATA][0]} {state}>"
        )
