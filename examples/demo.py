"""A short training loop on the synthetic speech-like dataset, first fed by
minatoloader, then by torch's DataLoader doing the same per-sample work in
Python. Prints batches/s for both and minatoloader's stats.

Run with `make demo` (it creates .venv, installs the package, and runs this).
"""

from __future__ import annotations

import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
from speech import WORKLOADS, SpeechDataset  # noqa: E402  (the same per-sample work, in Python)

import minatoloader  # noqa: E402

N, BATCH, LEN, WORKERS, EPOCHS = 640, 32, 4000, 2, 2
W = WORKLOADS["speech-busy"]  # 1 ms light step on every sample, 8 ms more on every 5th


def train(loader, name: str) -> float:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(LEN, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    batches = 0
    t0 = time.perf_counter()
    for epoch in range(EPOCHS):
        for data, labels in loader:
            loss = torch.nn.functional.cross_entropy(model(data), labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
            batches += 1
    dt = time.perf_counter() - t0
    print(f"{name:28s} {batches} batches in {dt:6.2f} s = {batches / dt:7.1f} batches/s, last loss {loss.item():.3f}")
    return batches / dt


def main() -> None:
    print(f"speech-like workload: {N} samples of {LEN} float32, batch {BATCH}, {WORKERS} workers, {EPOCHS} epochs")
    ds = minatoloader.SyntheticDataset(
        N,
        shape=(LEN,),
        dtype="float32",
        light_cost_us=W["light"],
        heavy_cost_us=W["heavy"],
        heavy_every=W["every"],
        cost_kind=W["kind"],
    )
    with minatoloader.DataLoader(ds, batch_size=BATCH, shuffle=True, num_workers=WORKERS, in_order=False) as loader:
        ours = train(loader, "minatoloader.DataLoader")
        stats = loader.stats()
    g = torch.Generator()
    g.manual_seed(0)
    theirs = train(
        torch.utils.data.DataLoader(SpeechDataset(N, (LEN,), W), batch_size=BATCH, shuffle=True, num_workers=WORKERS, generator=g),
        "torch.utils.data.DataLoader",
    )
    print(f"ratio: minatoloader {ours / theirs:.2f}x torch's batches/s (one run, this machine)")
    keys = ["samples", "fast_samples", "slow_samples", "preempted_steps", "threshold_ms", "threshold_source",
            "workers", "max_workers", "slow_workers", "first_batch_s", "wait_share"]
    print("minatoloader stats:", {k: (round(stats[k], 4) if isinstance(stats[k], float) else stats[k]) for k in keys if k in stats})


if __name__ == "__main__":
    main()
