"""The C ABI's constants, structures and prototypes (include/minatoloader.h),
as ctypes declares them; ``_native`` loads the library and wraps the calls."""

from __future__ import annotations

import ctypes
from ctypes import (
    POINTER,
    Structure,
    c_char_p,
    c_int,
    c_int32,
    c_int64,
    c_size_t,
    c_uint8,
    c_uint16,
    c_uint32,
    c_uint64,
    c_void_p,
)

ABI_VERSION = 5
LIBRARY_ENV = "MINATOLOADER_LIBRARY"
LIBRARY_NAME = "libminatoloader.so"


# ml_status
OK = 0
END_OF_EPOCH = 1
TIMEOUT = 2
ERR_INVALID_ARGUMENT = -1
ERR_INVALID_HANDLE = -2
ERR_SAMPLE = -3
ERR_CLOSED = -4
ERR_FORKED = -5
ERR_NO_MEMORY = -6
ERR_INTERNAL = -7
ERR_STATE = -8

STATUS_NAMES = {
    OK: "ML_OK",
    END_OF_EPOCH: "ML_END_OF_EPOCH",
    TIMEOUT: "ML_TIMEOUT",
    ERR_INVALID_ARGUMENT: "ML_ERR_INVALID_ARGUMENT",
    ERR_INVALID_HANDLE: "ML_ERR_INVALID_HANDLE",
    ERR_SAMPLE: "ML_ERR_SAMPLE",
    ERR_CLOSED: "ML_ERR_CLOSED",
    ERR_FORKED: "ML_ERR_FORKED",
    ERR_NO_MEMORY: "ML_ERR_NO_MEMORY",
    ERR_INTERNAL: "ML_ERR_INTERNAL",
    ERR_STATE: "ML_ERR_STATE",
}


# ml_field
FIELD_DATA = 0
FIELD_LABELS = 1
FIELD_INDICES = -1

MAX_NDIM = 8

# DLDeviceType
DL_CPU = 1
DL_CUDA = 2
DL_CUDA_HOST = 3


class DLDataType(Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class DLDevice(Structure):
    _fields_ = [("device_type", c_int), ("device_id", c_int32)]


class DLTensor(Structure):
    _fields_ = [
        ("data", c_void_p),
        ("device", DLDevice),
        ("ndim", c_int32),
        ("dtype", DLDataType),
        ("shape", POINTER(c_int64)),
        ("strides", POINTER(c_int64)),
        ("byte_offset", c_uint64),
    ]


class DLManagedTensor(Structure):
    pass


DLManagedTensor._fields_ = [
    ("dl_tensor", DLTensor),
    ("manager_ctx", c_void_p),
    ("deleter", ctypes.CFUNCTYPE(None, POINTER(DLManagedTensor))),
]


class DLPackVersion(Structure):
    _fields_ = [("major", c_uint32), ("minor", c_uint32)]


class DLManagedTensorVersioned(Structure):
    pass


DLManagedTensorVersioned._fields_ = [
    ("version", DLPackVersion),
    ("manager_ctx", c_void_p),
    ("deleter", ctypes.CFUNCTYPE(None, POINTER(DLManagedTensorVersioned))),
    ("flags", c_uint64),
    ("dl_tensor", DLTensor),
]


class BatchInfo(Structure):
    """ml_batch_info_t."""

    _fields_ = [
        ("epoch", c_int64),
        ("seq", c_int64),
        ("num_samples", c_int64),
        ("num_slow", c_int64),
        ("num_fields", c_int32),
        ("device", DLDevice),
        ("indices", POINTER(c_int64)),
    ]


class FieldInfo(Structure):
    """ml_field_info_t."""

    _fields_ = [
        ("name", ctypes.c_char_p),
        ("ndim", c_int32),
        ("shape", c_int64 * MAX_NDIM),
        ("dtype", DLDataType),
        ("device", DLDevice),
        ("data", c_void_p),
        ("bytes", c_uint64),
    ]


class Counters(Structure):
    """ml_counters_t."""

    _fields_ = [
        ("live_loaders", c_int64),
        ("live_batches", c_int64),
        ("live_buffers", c_int64),
        ("live_buffer_bytes", c_int64),
        ("live_goroutines", c_int64),
        ("total_buffers", c_int64),
    ]


_PROTOTYPES: dict[str, tuple[object, list[object]]] = {
    "ml_abi_version": (c_int, []),
    "ml_last_error": (c_int, [c_char_p, c_size_t, POINTER(c_size_t)]),
    "ml_last_error_detail": (c_int, [c_char_p, c_size_t, POINTER(c_size_t)]),
    "ml_loader_create": (c_int, [c_char_p, POINTER(c_uint64)]),
    "ml_loader_len": (c_int, [c_uint64, POINTER(c_int64), POINTER(c_int64)]),
    "ml_loader_progress": (c_int, [c_uint64, POINTER(c_int64), POINTER(c_int64)]),
    "ml_loader_start_epoch": (c_int, [c_uint64, c_int64]),
    "ml_loader_feed": (c_int, [c_uint64, c_void_p, c_int64, c_void_p, c_int64, c_int32]),
    "ml_loader_next": (c_int, [c_uint64, c_int64, POINTER(c_uint64)]),
    "ml_loader_stats": (c_int, [c_uint64, c_char_p, c_size_t, POINTER(c_size_t)]),
    "ml_dataset_info": (c_int, [c_char_p, c_char_p, c_size_t, POINTER(c_size_t)]),
    "ml_loader_close": (c_int, [c_uint64]),
    "ml_batch_info": (c_int, [c_uint64, POINTER(BatchInfo)]),
    "ml_batch_field": (c_int, [c_uint64, c_int32, POINTER(FieldInfo)]),
    "ml_batch_export": (c_int, [c_uint64, c_int, c_int, c_int64, POINTER(c_void_p)]),
    "ml_batch_release": (c_int, [c_uint64]),
    "ml_dlpack_capsule_destructor": (None, [c_void_p]),
    "ml_counters": (c_int, [POINTER(Counters)]),
}
