"""A numpy-only install: DataLoader runs native datasets without torch."""

import subprocess
import sys
import textwrap
from pathlib import Path

CHILD = textwrap.dedent(
    """
    import sys
    sys.modules["torch"] = None  # import torch raises ImportError, as without torch
    import numpy as np
    import minatoloader
    from minatoloader import DataLoader, SyntheticDataset
    assert "torch" not in [m for m in sys.modules if sys.modules[m] is not None]
    loader = DataLoader(SyntheticDataset(10, shape=(3,)), batch_size=4, shuffle=True)
    it = iter(loader)
    batches = [next(it), next(it)]
    state = loader.state_dict()
    batches += list(it)
    assert [len(y) for _, y in batches] == [4, 4, 2], batches
    assert all(isinstance(x, np.ndarray) and x.shape[1:] == (3,) for x, _ in batches)
    assert state["num_yielded"] == 2 and len(set(state["delivered"])) == 8, state
    fresh = DataLoader(SyntheticDataset(10, shape=(3,)), batch_size=4, shuffle=True)
    fresh.load_state_dict(state)
    rest = [y.tolist() for _, y in fresh]
    assert rest == [batches[2][1].tolist()], (rest, batches)
    try:
        DataLoader([1, 2, 3])
    except TypeError as e:
        assert "needs torch" in str(e), e
    else:
        raise AssertionError("a Python dataset was accepted without torch")
    loader.close()
    print("ok")
    """
)


def test_numpy_only_install_runs_native_datasets() -> None:
    proc = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).parent)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]
