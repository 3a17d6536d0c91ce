"""Per-batch cost across the C ABI and DLPack into torch.

Builds a loader over a no-op synthetic dataset with a deep prefetch queue,
lets the queue fill, then times next() on batches that are already built:
what remains is ml_loader_next + ml_batch_export + torch.from_dlpack (and
numpy.from_dlpack) + release. Target: at most 20 us per batch.

Run: make bench   (or .venv/bin/python bench/overhead.py)
"""

from __future__ import annotations

import statistics
import time

from minatoloader import NativeLoader, SyntheticDataset


def per_batch_us(output: str, batches: int = 200, batch: int = 64) -> float:
    ds = SyntheticDataset(batches * batch, shape=(4,), dtype="float32")
    runs = []
    with NativeLoader(ds, batch_size=batch, workers=2, adaptive=False, prefetch_batches=batches, output=output) as loader:
        for _ in range(3):
            it = iter(loader)
            time.sleep(0.5)  # let the whole epoch be built
            t0 = time.perf_counter()
            n = 0
            for data, labels in it:
                n += 1
            runs.append((time.perf_counter() - t0) / n * 1e6)
    return statistics.median(runs)


def main() -> None:
    for output in ("torch", "numpy"):
        print(f"ABI + DLPack per batch (data and labels), output={output}: {per_batch_us(output):.1f} us (median of 3 epochs)")


if __name__ == "__main__":
    main()
