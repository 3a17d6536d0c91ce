"""Bad arguments raise an exception that names the argument."""

import math

import pytest

import minatoloader
from minatoloader import DataLoader, InvalidArgumentError, NativeLoader, SyntheticDataset, UnsupportedArgumentError


@pytest.fixture
def ds() -> SyntheticDataset:
    return SyntheticDataset(32, shape=(4,))


def test_batch_size_zero(ds: SyntheticDataset) -> None:
    with pytest.raises(ValueError, match="batch_size"):
        DataLoader(ds, batch_size=0)
    with pytest.raises(InvalidArgumentError, match="batch_size"):
        NativeLoader(ds, 0)


def test_batch_size_none_yields_samples(ds: SyntheticDataset) -> None:
    """As torch: no automatic batching, each item is one sample, converted
    by default_convert (a list [data, label] with label an int)."""
    with DataLoader(ds, batch_size=None) as loader:
        items = list(loader)
    assert len(items) == 32
    assert all(isinstance(it, list) and tuple(it[0].shape) == (4,) and isinstance(it[1], int) for it in items)


def test_num_workers_negative(ds: SyntheticDataset) -> None:
    with pytest.raises(ValueError, match="num_workers"):
        DataLoader(ds, num_workers=-1)


def test_timeout_negative(ds: SyntheticDataset) -> None:
    with pytest.raises(ValueError, match="timeout"):
        DataLoader(ds, timeout=-1)


def test_prefetch_factor_needs_workers(ds: SyntheticDataset) -> None:
    with pytest.raises(ValueError, match="prefetch_factor"):
        DataLoader(ds, prefetch_factor=2)


def test_persistent_workers_needs_workers(ds: SyntheticDataset) -> None:
    with pytest.raises(ValueError, match="persistent_workers"):
        DataLoader(ds, persistent_workers=True)


def test_worker_init_fn_is_refused_for_native_datasets(ds: SyntheticDataset) -> None:
    """A native dataset has no Python worker processes to run it in."""
    with pytest.raises(UnsupportedArgumentError, match="worker_init_fn"):
        DataLoader(ds, num_workers=1, worker_init_fn=lambda worker_id: None)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"sampler": [3, 1, 2]},
        {"batch_sampler": [[0, 1], [5, 3, 2]]},
        {"collate_fn": lambda batch: [len(batch)], "batch_size": 5},
        {"num_workers": 1, "multiprocessing_context": "spawn"},
    ],
)
def test_torch_arguments_apply_to_native_datasets(ds: SyntheticDataset, kwargs: dict) -> None:
    """Every argument of torch's constructor works on the native path, with
    the batches torch's samplers and collate_fn give."""
    import torch

    with DataLoader(ds, **kwargs) as loader:
        got = list(loader)
        assert isinstance(loader, torch.utils.data.DataLoader)
    if "collate_fn" in kwargs:
        assert got == [[5]] * 6 + [[2]]
    else:
        sizes = [len(b[1]) for b in got]
        want = [len(b) for b in kwargs["batch_sampler"]] if "batch_sampler" in kwargs else [1] * len(
            kwargs.get("sampler", range(32)))
        assert sizes == want


def test_unsupported_is_a_value_error() -> None:
    assert issubclass(UnsupportedArgumentError, ValueError)


def test_any_python_sequence_is_a_dataset() -> None:
    """A plain list is a map-style dataset for torch; so it is here."""
    import torch

    dl = DataLoader([1, 2, 3], batch_size=2)
    assert dl.stats()["path"] == "python"
    assert [b.tolist() for b in dl] == [b.tolist() for b in torch.utils.data.DataLoader([1, 2, 3], batch_size=2)]


def test_native_dataset_is_not_indexable(ds: SyntheticDataset) -> None:
    assert len(ds) == 32
    with pytest.raises(TypeError, match="Go core"):
        ds[0]


def test_unknown_native_option(ds: SyntheticDataset) -> None:
    with pytest.raises(TypeError, match="no_such_option"):
        NativeLoader(ds, 4, no_such_option=1)  # type: ignore[call-arg]


def test_timeout_ms_negative(ds: SyntheticDataset) -> None:
    with pytest.raises(InvalidArgumentError, match="timeout_ms"):
        NativeLoader(ds, 4, timeout_ms=-1)


def test_non_finite_option(ds: SyntheticDataset) -> None:
    with pytest.raises(InvalidArgumentError, match="alpha"):
        NativeLoader(ds, 4, alpha=math.nan)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"workers": 0}, "workers"),
        ({"rank": 2, "world_size": 2}, "rank"),
        ({"quantile": 1.5}, "quantile"),
        ({"prefetch_batches": 0}, "prefetch_batches"),
        ({"batch_size": "4"}, "batch_size"),
        ({"shuffle": 1}, "shuffle"),
    ],
)
def test_native_option_errors_name_the_option(ds: SyntheticDataset, kwargs: dict, name: str) -> None:
    kwargs = dict(kwargs)
    batch_size = kwargs.pop("batch_size", 4)
    with pytest.raises(InvalidArgumentError, match=name):
        NativeLoader(ds, batch_size, **kwargs)


def test_dataset_option_errors_name_the_option() -> None:
    with pytest.raises(InvalidArgumentError, match="dtype"):
        NativeLoader(SyntheticDataset(8, dtype="complex64"), 2)
    with pytest.raises(InvalidArgumentError, match="cost_kind"):
        NativeLoader(SyntheticDataset(8, cost_kind="spin"), 2)
    with pytest.raises(ValueError, match="length"):
        SyntheticDataset(-1)


def test_output_must_be_known(ds: SyntheticDataset) -> None:
    with pytest.raises(InvalidArgumentError, match="output"):
        NativeLoader(ds, 4, output="jax")


def test_set_epoch_validates(ds: SyntheticDataset) -> None:
    with NativeLoader(ds, 4) as loader:
        with pytest.raises(InvalidArgumentError, match="epoch"):
            loader.set_epoch(-1)


def test_error_status_attribute(ds: SyntheticDataset) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        NativeLoader(ds, 4, workers=0)
    assert info.value.status == -1
    assert isinstance(info.value, minatoloader.Error)
