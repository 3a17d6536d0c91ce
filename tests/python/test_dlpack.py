"""DLPack export: zero copy into torch and numpy, both capsule versions, no leaks."""

import ctypes
import gc

import numpy as np
import pytest
import torch

import minatoloader
from minatoloader import NativeLoader, SyntheticDataset

_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_is_valid.restype = ctypes.c_int
_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]


class _CapsuleHolder:
    """Hands a prepared capsule to a consumer (numpy/torch from_dlpack)."""

    def __init__(self, capsule: object, device: tuple) -> None:
        self.capsule = capsule
        self.device = device

    def __dlpack__(self, **kwargs: object) -> object:
        return self.capsule

    def __dlpack_device__(self) -> tuple:
        return self.device


def _first_batch(**kwargs: object):  # type: ignore[no-untyped-def]
    loader = NativeLoader(
        SyntheticDataset(20, shape=(3, 5), dtype=kwargs.pop("dtype", "float32")),
        4,
        output="dlpack",
        return_indices=True,
        **kwargs,
    )
    return loader, next(iter(loader))


def test_fields_describe_the_batch() -> None:
    loader, (data, labels, indices) = _first_batch()
    with loader:
        assert data.shape == (4, 3, 5) and data.dtype == "float32"
        assert labels.shape == (4,) and labels.dtype == "int64"
        assert indices.shape == (4,)
        assert data.__dlpack_device__() == (1, 0)
        assert data.batch is labels.batch
        assert data.batch.num_samples == 4 and data.batch.epoch == 0 and data.batch.seq == 0
        del data, labels, indices


def test_zero_copy_into_torch() -> None:
    loader, (data, labels, indices) = _first_batch()
    with loader:
        t = torch.from_dlpack(data)
        assert t.data_ptr() == data.data_ptr
        assert t.shape == (4, 3, 5) and t.dtype == torch.float32
        lt = torch.from_dlpack(labels)
        assert lt.data_ptr() == labels.data_ptr and lt.dtype == torch.int64
        del data, labels, indices, t, lt


def test_zero_copy_into_numpy() -> None:
    loader, (data, labels, indices) = _first_batch(dtype="int16")
    with loader:
        a = np.from_dlpack(data)
        assert a.__array_interface__["data"][0] == data.data_ptr
        assert a.dtype == np.int16 and a.shape == (4, 3, 5)
        i = np.from_dlpack(indices)
        assert i.__array_interface__["data"][0] == indices.data_ptr
        assert i.tolist() == [0, 1, 2, 3]
        del data, labels, indices, a, i


def test_torch_and_numpy_outputs_are_views() -> None:
    for output, ptr in (("torch", lambda x: x.data_ptr()), ("numpy", lambda x: x.__array_interface__["data"][0])):
        with NativeLoader(SyntheticDataset(8), 4, output=output) as loader:
            data, labels = next(iter(loader))
            assert ptr(data) % 256 == 0  # batch memory, 256-byte aligned
            del data, labels


@pytest.mark.parametrize("versioned", [True, False])
def test_capsule_versions(versioned: bool) -> None:
    loader, (data, labels, indices) = _first_batch()
    with loader:
        if versioned:
            capsule = data.__dlpack__(max_version=(1, 0))
            assert _is_valid(capsule, b"dltensor_versioned")
        else:
            capsule = data.__dlpack__()
            assert _is_valid(capsule, b"dltensor")
        expected = np.from_dlpack(data).copy()
        arr = np.from_dlpack(_CapsuleHolder(capsule, data.__dlpack_device__()))
        assert arr.__array_interface__["data"][0] == data.data_ptr
        np.testing.assert_array_equal(arr, expected)
        t = torch.from_dlpack(
            _CapsuleHolder(data.__dlpack__(max_version=(1, 0) if versioned else None), data.__dlpack_device__())
        )
        assert t.data_ptr() == data.data_ptr
        del data, labels, indices, capsule, arr, t


def test_legacy_when_max_version_is_old() -> None:
    loader, (data, labels, indices) = _first_batch()
    with loader:
        assert _is_valid(data.__dlpack__(max_version=(0, 8)), b"dltensor")
        del data, labels, indices


def test_unconsumed_capsules_free_their_tensors() -> None:
    loader, (data, labels, indices) = _first_batch()
    with loader:
        total_before = minatoloader.counters()["total_buffers"]
        capsules = [data.__dlpack__(max_version=(1, 0)), data.__dlpack__(), labels.__dlpack__()]
        data.batch.close()
        del data, labels, indices
        gc.collect()
        assert minatoloader.counters()["live_batches"] == 0
        assert minatoloader.counters()["live_buffers"] >= 1  # the capsules hold the memory
        del capsules
        gc.collect()
        assert minatoloader.counters()["total_buffers"] >= total_before
    # no_leaks (conftest) checks that live_buffers is back to 0


def test_tensor_outlives_batch_and_loader() -> None:
    with NativeLoader(SyntheticDataset(8, shape=(2,)), 4, output="dlpack", return_indices=True) as loader:
        data, labels, indices = next(iter(loader))
        batch = data.batch
        t = torch.from_dlpack(data)
        expected = t.clone()
        a = np.from_dlpack(indices)
        batch.close()
        assert batch.closed
        with pytest.raises(minatoloader.ClosedError):
            data.__dlpack__()
        del data, labels, indices, batch
    gc.collect()
    c = minatoloader.counters()
    assert c["live_batches"] == 0 and c["live_loaders"] == 0 and c["live_buffers"] == 1
    assert torch.equal(t, expected)
    assert a.tolist() == [0, 1, 2, 3]
    del t, a


def test_copy_true_and_foreign_device_refused() -> None:
    loader, (data, labels, indices) = _first_batch()
    with loader:
        with pytest.raises(BufferError):
            data.__dlpack__(copy=True)
        with pytest.raises(BufferError):
            data.__dlpack__(dl_device=(2, 0))
        data.__dlpack__(dl_device=(1, 0), copy=False)
        del data, labels, indices


def test_batch_release_is_idempotent() -> None:
    loader, (data, labels, indices) = _first_batch()
    with loader:
        batch = data.batch
        del data, labels, indices
        batch.close()
        batch.close()
        with batch:
            pass
        assert batch.closed
