"""One large batch of small samples, minatoloader.DataLoader and torch's
side by side in one run: wall time and CPU seconds of the process tree
(getrusage: self + reaped children) per loader.

    python bench/large_batch.py --n 8192 40960

It measures the per-sample cost of the Python path (one GET per sample to
a worker, one arena block, one unpickle), which a large batch multiplies.
"""

from __future__ import annotations

import argparse
import resource
import time

import torch

from minatoloader import DataLoader


class Small(torch.utils.data.Dataset):
    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):  # type: ignore[no-untyped-def]
        return torch.full((4,), float(i)), i


def cpu() -> float:
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def one(cls: type, n: int, workers: int) -> tuple[float, float]:
    c0, t0 = cpu(), time.perf_counter()
    loader = cls(Small(n), batch_size=n, num_workers=workers)
    x, y = next(iter(loader))
    assert y.tolist() == list(range(n))
    del loader  # stops (and reaps) the workers, so their CPU is counted
    return time.perf_counter() - t0, cpu() - c0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, nargs="+", default=[8192, 40960])
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    for n in args.n:
        tw, tc = one(torch.utils.data.DataLoader, n, args.workers)
        mw, mc = one(DataLoader, n, args.workers)
        print(f"batch of {n}: torch {tw:.2f} s wall {tc:.2f} s CPU; minatoloader {mw:.2f} s wall {mc:.2f} s CPU; "
              f"ratio {mw / tw:.1f}x wall, {mc / tc:.1f}x CPU")


if __name__ == "__main__":
    main()
