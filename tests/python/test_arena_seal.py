"""A worker arena is sealed against shrinking: a worker (user code) that
truncates it cannot make the main process (Python or Go) die of SIGBUS."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import minatoloader
from minatoloader._shm import create_arena


def test_arena_cannot_shrink_through_any_open_file() -> None:
    fd = create_arena(1 << 20)
    try:
        assert fcntl.fcntl(fd, fcntl.F_GET_SEALS) & fcntl.F_SEAL_SHRINK
        with pytest.raises(PermissionError):
            os.ftruncate(fd, 4096)
        # A worker opens the arena through /proc: a new open file, same seals.
        other = os.open(f"/proc/self/fd/{fd}", os.O_RDWR)
        try:
            with pytest.raises(PermissionError):
                os.ftruncate(other, 0)
            with pytest.raises(PermissionError):  # nor can the seals be changed
                fcntl.fcntl(other, fcntl.F_ADD_SEALS, fcntl.F_SEAL_WRITE)
        finally:
            os.close(other)
        assert os.fstat(fd).st_size == 1 << 20
    finally:
        os.close(fd)


_SCRIPT = textwrap.dedent(
    """
    import os, sys
    import numpy as np
    from torch.utils.data import Dataset
    import minatoloader

    SWALLOW = sys.argv[1] == "swallow"

    def arena_paths():
        for d in ("/proc/self/fd", f"/proc/{os.getppid()}/fd"):
            out = []
            for name in os.listdir(d):
                try:
                    if "memfd:minatoloader-arena" in os.readlink(f"{d}/{name}"):
                        out.append(f"{d}/{name}")
                except OSError:
                    pass
            if out:
                return out
        raise AssertionError("no arena found")

    class Shrinker(Dataset):
        def __len__(self):
            return 24

        def __getitem__(self, i):
            if i == 5:
                for path in arena_paths():
                    fd = os.open(path, os.O_RDWR)
                    try:
                        os.ftruncate(fd, 4096)
                    except PermissionError:
                        if not SWALLOW:
                            raise
                    finally:
                        os.close(fd)
            return np.full(1 << 20, i % 251, np.uint8)

    dl = minatoloader.DataLoader(Shrinker(), batch_size=None, num_workers=2)
    got = {}
    try:
        for n, x in enumerate(dl):
            assert x.shape == (1 << 20,) and int(x.min()) == int(x.max()), n
            got[n] = int(x[0])
    except PermissionError as e:
        assert "sample 5" in str(e), str(e)
        print("PermissionError", sorted(got.values()))
    else:
        assert got == {n: n % 251 for n in range(24)}, got
        print("complete")
    dl.close()
    """
)


@pytest.mark.parametrize("dataset_mode", ["raise", "swallow"])
def test_worker_that_shrinks_its_arena_does_not_kill_the_main_process(
    library: str, tmp_path: Path, dataset_mode: str
) -> None:
    script = tmp_path / "shrink.py"
    script.write_text(_SCRIPT)
    env = dict(os.environ)
    env["MINATOLOADER_LIBRARY"] = library
    env["PYTHONPATH"] = os.pathsep.join([str(Path(minatoloader.__file__).parents[1]), env.get("PYTHONPATH", "")])
    r = subprocess.run(
        [sys.executable, str(script), dataset_mode], env=env, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, f"rc {r.returncode}\n{r.stdout}\n{r.stderr[-3000:]}"
    if dataset_mode == "raise":
        assert r.stdout.startswith("PermissionError"), r.stdout
    else:
        assert r.stdout.strip() == "complete", r.stdout
