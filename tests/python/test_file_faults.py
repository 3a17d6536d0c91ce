"""File faults of native datasets (issue 9): files that are not regular
(a FIFO, a link to /dev/zero), roots whose names are not UTF-8, outputs a
transform grows out of proportion to the input (measured as the peak RSS
of a child process)."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import threading
import textwrap

import numpy as np
import pytest
from PIL import Image

from minatoloader import NativeLoader, SampleError
from minatoloader import datasets as mds
from minatoloader import transforms as T

CHAIN = [T.CenterCrop(4), T.ToTensor()]


def _png(path: str, seed: int = 0) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    arr = np.random.default_rng(seed).integers(0, 256, (6, 7, 3), dtype=np.uint8)
    Image.fromarray(arr).save(path, format="PNG")


def _wav(path: str, rate: int, n: int) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    data = (np.arange(n, dtype=np.int64) * 37 % 65536).astype("<u2").tobytes()
    fmt = struct.pack("<HHIIHH", 1, 1, rate, (2 * rate) & 0xFFFFFFFF, 2, 16)
    body = b"WAVEfmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(data)) + data
    with open(path, "wb") as f:
        f.write(b"RIFF" + struct.pack("<I", len(body)) + body)


def _epoch_error(ds: mds.FileDataset) -> str:
    with NativeLoader(ds, 1) as loader:
        with pytest.raises(SampleError) as info:
            for _ in loader:
                pass
    return str(info.value)


def test_fifo_is_refused_without_being_opened(tmp_path) -> None:
    _png(str(tmp_path / "a" / "ok.png"))
    fifo = str(tmp_path / "a" / "x.jpg")
    os.mkfifo(fifo)
    opened: list[bool] = []
    stop = threading.Event()

    def unblock() -> None:
        # A reader blocked in open() on the FIFO gets a writer (and EOF), so
        # the test ends either way; the fix never opens the FIFO.
        while not stop.wait(0.005):
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                continue
            os.close(fd)
            opened.append(True)

    t = threading.Thread(target=unblock)
    t.start()
    try:
        msg = _epoch_error(mds.ImageFolder(str(tmp_path), CHAIN))
    finally:
        stop.set()
        t.join()
    assert not opened, "the FIFO was opened for reading: with no writer that open blocks"
    assert "not a regular file (a FIFO)" in msg and fifo in msg, msg


def test_link_to_dev_zero_is_refused(tmp_path) -> None:
    _png(str(tmp_path / "a" / "ok.png"))
    link = str(tmp_path / "a" / "x.jpg")
    os.symlink("/dev/zero", link)
    msg = _epoch_error(mds.ImageFolder(str(tmp_path), CHAIN, max_file_bytes=1 << 20))
    assert "not a regular file (a device)" in msg and link in msg, msg


def _non_utf8_root(tmp_path) -> str:
    root = os.path.join(os.fsencode(tmp_path), b"\xff\xfe")
    for cls in (b"a", b"b\xe9"):
        for k in range(2):
            _png(os.fsdecode(os.path.join(root, cls, b"%d.png" % k)), seed=k)
    return os.fsdecode(root)  # a str with surrogate escapes


@pytest.mark.parametrize("as_bytes", [False, True])
def test_non_utf8_root_loads_as_torchvision(tmp_path, as_bytes: bool) -> None:
    torchvision = pytest.importorskip("torchvision")
    root = _non_utf8_root(tmp_path)
    ref = torchvision.datasets.ImageFolder(root)
    ds = mds.ImageFolder(os.fsencode(root) if as_bytes else root, CHAIN)
    assert len(ds) == len(ref) == 4
    assert ds.classes == ref.classes
    with NativeLoader(ds, 2, output="numpy") as loader:
        labels = np.concatenate([y for _, y in loader])
    assert sorted(labels.tolist()) == sorted(t for _, t in ref.samples)


def test_non_utf8_path_in_error_is_printable(tmp_path) -> None:
    root = _non_utf8_root(tmp_path)
    with open(os.path.join(root, "a", "0.png"), "wb") as f:
        f.write(b"not an image")
    msg = _epoch_error(mds.ImageFolder(root, CHAIN))
    assert "\\xff\\xfe/a/0.png" in msg and "\ufffd" not in msg, msg


def test_wav_rate_error_names_file_and_step(tmp_path) -> None:
    path = str(tmp_path / "a" / "odd.wav")
    _wav(path, 2**31 - 1, 100)
    msg = _epoch_error(mds.AudioFolder(str(tmp_path), [T.Resample(16000), T.PadTrim(16000)]))
    assert path in msg and '"resample"' in msg and "2147483647" in msg, msg


_CHILD = textwrap.dedent(
    """
    import resource, sys
    from minatoloader import NativeLoader, SampleError
    from minatoloader import datasets as mds
    from minatoloader import transforms as T
    ds = mds.AudioFolder(sys.argv[1], [T.Resample(16000), T.PadTrim(16000)])
    err = ""
    try:
        for _ in NativeLoader(ds, 1, workers=1):
            pass
    except SampleError as e:
        err = str(e)
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
    print(err)
    """
)


def _child_peak(root: str) -> tuple[int, str]:
    out = subprocess.run([sys.executable, "-c", _CHILD, root], capture_output=True, text=True, check=True).stdout
    peak, _, err = out.partition("\n")
    return int(peak), err.strip()


def test_resample_of_a_slow_header_is_bounded(tmp_path) -> None:
    # 390 KB claiming 16 Hz: resampled to 16 kHz it would be 780 MB of
    # float32. The same bytes at 16 kHz are the baseline.
    slow, same = str(tmp_path / "slow"), str(tmp_path / "same")
    _wav(os.path.join(slow, "a", "x.wav"), 16, 195_000)
    _wav(os.path.join(same, "a", "x.wav"), 16000, 195_000)
    base, base_err = _child_peak(same)
    peak, err = _child_peak(slow)
    assert base_err == "", base_err
    assert "max_sample_bytes" in err and "x.wav" in err and '"resample"' in err, err
    assert peak - base < 64 << 20, f"peak RSS {peak >> 20} MiB, baseline {base >> 20} MiB"
