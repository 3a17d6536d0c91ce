"""Issue 9, cases 1 and 3: sizes that reach an allocation are bounded (no
abort of the host process), and a sample whose dtype or shape cannot be
batched is a sample failure that on_error="skip" skips.

The cases that used to abort the interpreter (Go's "fatal error: out of
memory", SIGABRT) run in a child process, so a regression fails the test
instead of killing pytest.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import minatoloader
from minatoloader import InvalidArgumentError, NativeLoader, SampleError
from minatoloader import datasets as mds
from minatoloader import transforms as T


def _child(code: str) -> subprocess.CompletedProcess[str]:
    """Runs code in a fresh interpreter of this environment."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120,
        env=dict(os.environ),
    )


def _ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, f"child exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr[-3000:]}"
    return proc.stdout


def test_huge_batch_size_over_a_list_matches_torch() -> None:
    out = _ok(_child("""
        import torch
        from minatoloader import DataLoader
        # (torch's own BatchSampler raises MemoryError for drop_last=True
        # with 2**40: it builds a list of batch_size iterators.)
        kw = {"batch_size": 2**40}
        ours = [b.tolist() for b in DataLoader(list(range(10)), num_workers=1, **kw)]
        theirs = [b.tolist() for b in torch.utils.data.DataLoader(list(range(10)), num_workers=1, **kw)]
        assert ours == theirs, (kw, ours, theirs)
        print(kw, ours)
        # torch itself loops prefetch_factor * num_workers times to prime its
        # workers, so 2**40 never starts there; ours gives torch's batches
        # for the default prefetch.
        ours = [b.tolist() for b in DataLoader(list(range(10)), batch_size=3, num_workers=1, prefetch_factor=2**40)]
        theirs = [b.tolist() for b in torch.utils.data.DataLoader(list(range(10)), batch_size=3, num_workers=1)]
        assert ours == theirs, (ours, theirs)
        print("prefetch", ours)
    """))
    assert "[[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]]" in out and "prefetch [[0, 1, 2]" in out


def test_huge_sizes_on_the_native_path() -> None:
    out = _ok(_child("""
        import minatoloader
        from minatoloader import DataLoader, NativeLoader, SyntheticDataset, InvalidArgumentError
        ds = SyntheticDataset(10, shape=(2,), dtype="float32")
        # The drop-in takes torch's semantics: one batch of all, or none with drop_last.
        assert [len(x) for x, _ in DataLoader(ds, batch_size=2**40)] == [10]
        assert list(DataLoader(ds, batch_size=2**40, drop_last=True)) == []
        assert [len(x) for x, _ in DataLoader(ds, batch_size=4, num_workers=1, prefetch_factor=2**40)] == [4, 4, 2]
        # The native API names the option that is past its bound.
        for kw, name in (({"batch_size": 2**40}, "batch_size"), ({"prefetch_batches": 2**40}, "prefetch_batches"),
                         ({"max_inflight": 2**40}, "max_inflight"), ({"workers": 2**40}, "workers")):
            try:
                NativeLoader(ds, **kw)
            except InvalidArgumentError as e:
                assert name in str(e), (kw, e)
                print("refused", name)
            else:
                raise AssertionError(f"{kw} accepted")
        for shape, dtype in (((2**31,), "float64"), ((2**16, 2**16), "float32")):
            try:
                NativeLoader(SyntheticDataset(4, shape=shape, dtype=dtype))
            except InvalidArgumentError as e:
                assert "dataset.shape" in str(e) and "bytes" in str(e), e
                print("refused shape", shape)
            else:
                raise AssertionError(f"a sample of shape {shape} {dtype} accepted")
    """))
    assert out.count("refused") == 6


def _pairs(root: str, n: int, odd: dict[int, np.ndarray]) -> None:
    rng = np.random.default_rng(3)
    for k in range(n):
        image = rng.standard_normal((1, 6, 6, 6)).astype(np.float32)
        label = odd.get(k, (rng.random((1, 6, 6, 6)) > 0.5).astype(np.uint8))
        np.save(os.path.join(root, f"case_{k:05d}_x.npy"), image)
        np.save(os.path.join(root, f"case_{k:05d}_y.npy"), label)


@pytest.mark.parametrize("in_order", [True, False])
def test_odd_dtype_or_shape_is_skipped(tmp_path, in_order: bool) -> None:
    root = str(tmp_path)
    odd = {
        3: np.zeros((1, 6, 6, 6), dtype=np.float32),  # a float32 label among uint8 ones
        6: np.zeros((2, 6, 6, 6), dtype=np.uint8),  # two channels where one is declared
    }
    _pairs(root, 10, odd)
    ds = mds.NpyPairs(root, transform=[T.RandomCrop3D((4, 4, 4))])
    with NativeLoader(ds, 3, on_error="skip", in_order=in_order, output="numpy", return_indices=True) as loader:
        for epoch in range(2):
            got = sorted(int(i) for _img, _lbl, idx in loader for i in idx)
            assert got == [0, 1, 2, 4, 5, 7, 8, 9], f"epoch {epoch}: {got}"
            assert sorted(loader.stats()["epoch_skipped"]) == [3, 6]


def test_odd_dtype_error_names_file_and_dtypes(tmp_path) -> None:
    root = str(tmp_path)
    _pairs(root, 6, {3: np.zeros((1, 6, 6, 6), dtype=np.float32)})
    ds = mds.NpyPairs(root, transform=[T.RandomCrop3D((4, 4, 4))])
    with NativeLoader(ds, 2) as loader, pytest.raises(SampleError) as info:
        list(loader)
    msg = str(info.value)
    assert "case_00003_y.npy" in msg and "float32" in msg and "uint8" in msg, msg


def test_skip_budget_applies_to_batching_checks(tmp_path) -> None:
    root = str(tmp_path)
    _pairs(root, 8, {k: np.zeros((1, 6, 6, 6), dtype=np.int16) for k in (1, 2, 5)})
    ds = mds.NpyPairs(root, transform=[T.RandomCrop3D((4, 4, 4))])
    with NativeLoader(ds, 2, on_error="skip", max_skipped=2) as loader, pytest.raises(SampleError, match="more than 2"):
        list(loader)


def test_native_options_are_checked() -> None:
    ds = minatoloader.SyntheticDataset(4)
    with pytest.raises(InvalidArgumentError, match="on_error"):
        NativeLoader(ds, on_error="ignore")
    with pytest.raises(InvalidArgumentError, match="stop_timeout_ms"):
        NativeLoader(ds, stop_timeout_ms=0)


def test_samples_in_flight_beyond_the_address_space_limit_are_refused() -> None:
    # Under `ulimit -v`, 1 GiB samples used to abort the process when their
    # buffers were allocated (Go cannot recover from a failed allocation).
    out = _ok(_child("""
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))
        from minatoloader import NativeLoader, SyntheticDataset, InvalidArgumentError
        ds = SyntheticDataset(4, shape=(2**27,), dtype="float64")  # 1 GiB a sample
        try:
            with NativeLoader(ds, 1, output="numpy") as loader:
                for _ in loader:
                    pass
        except InvalidArgumentError as e:
            assert "max_inflight" in str(e), e
            print("refused")
    """))
    assert "refused" in out
