"""Speech-like workload: minatoloader side by side with torch DataLoader.

Each sample costs a light step; heavy samples cost more (the MinatoLoader
paper's Speech-3s/10s, scaled down). Both loaders do the same per-sample work:
minatoloader in its Go core, torch in a Python Dataset (the same CPU time,
spun with time.thread_time(), or the same sleep). Every measurement runs in a
fresh subprocess so that peak RSS and start-up are its own.

Metrics per (workload, loader, workers):
  epoch_s        loader alone, one epoch, no consumer
  samples_s      samples per second of that epoch
  first_batch_s  time from creating the iterator to the first batch
  consumer_s     one epoch with a fixed-step consumer (sleeps step_s per batch,
                 a stand-in for the GPU step)
  wait_share     share of that epoch the consumer spent waiting for data
  wait_share_own the same, with the step set so that this loader's own
                 measured throughput (samples_s) is 1.2x the consumer's demand
  peak_rss_mb    peak RSS of the process tree (main + workers)

Run: make bench   (or .venv/bin/python bench/speech.py [--quick])
Absolute times from this 2-core CPU machine are not quoted as results; the
ratios in the last table are, since both loaders ran in the same run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))

WORKLOADS = {
    # name: light_us, heavy_us, heavy_every, heavy_fraction, kind
    "speech-busy": dict(light=1000, heavy=8000, every=5, frac=0.0, kind="busy"),
    "longtail-busy": dict(light=1000, heavy=50000, every=100, frac=0.0, kind="busy"),
    "uniform-busy": dict(light=2000, heavy=0, every=0, frac=0.0, kind="busy"),
    "speech-sleep": dict(light=1000, heavy=8000, every=5, frac=0.0, kind="sleep"),
    "longtail-sleep": dict(light=1000, heavy=50000, every=100, frac=0.0, kind="sleep"),
}


def mean_cost_s(w: dict) -> float:
    heavy_share = (1.0 / w["every"] if w["every"] else 0.0) + w["frac"]
    return (w["light"] + heavy_share * w["heavy"]) / 1e6


# --------------------------------------------------------------- torch side
def spend(us: float, kind: str) -> None:
    if us <= 0:
        return
    if kind == "sleep":
        time.sleep(us / 1e6)
        return
    end = time.thread_time() + us / 1e6
    x = 1
    while time.thread_time() < end:
        for i in range(200):
            x = (x * 6364136223846793005 + i) & 0xFFFFFFFFFFFFFFFF


class SpeechDataset:
    """The same per-sample work as minatoloader's SyntheticDataset."""

    def __init__(self, n: int, shape, w: dict):
        self.n, self.shape, self.w = n, tuple(shape), w

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int):
        import numpy as np
        import torch

        w = self.w
        rng = np.random.default_rng(index)
        x = rng.random(self.shape, dtype=np.float32)
        spend(w["light"], w["kind"])
        x = 2 * x - 1
        heavy = (w["every"] and index % w["every"] == 0) or (w["frac"] and rng.random() < w["frac"])
        if heavy and w["heavy"]:
            spend(w["heavy"], w["kind"])
            x += rng.random(self.shape, dtype=np.float32) * 0.01
        return torch.from_numpy(x), int(index % 10)


# ------------------------------------------------------------ measurement
class RSSSampler(threading.Thread):
    """Samples the RSS of this process and its children every 20 ms."""

    def __init__(self):
        super().__init__(daemon=True)
        import psutil

        self.proc = psutil.Process()
        self.peak = 0
        self.stop = threading.Event()

    def run(self):
        import psutil

        while not self.stop.is_set():
            total = 0
            try:
                total = self.proc.memory_info().rss
                for c in self.proc.children(recursive=True):
                    try:
                        total += c.memory_info().rss
                    except psutil.Error:
                        pass
            except psutil.Error:
                pass
            self.peak = max(self.peak, total)
            time.sleep(0.02)


def make_loader(loader: str, workers: int, n: int, batch: int, shape, w: dict, seed: int):
    if loader == "torch":
        import torch

        g = torch.Generator()
        g.manual_seed(seed)
        return torch.utils.data.DataLoader(
            SpeechDataset(n, shape, w),
            batch_size=batch,
            shuffle=True,
            num_workers=workers,
            generator=g,
            persistent_workers=False,
            prefetch_factor=2 if workers > 0 else None,
        )
    from minatoloader import NativeLoader, SyntheticDataset

    ds = SyntheticDataset(
        n,
        shape=shape,
        dtype="float32",
        light_cost_us=w["light"],
        heavy_cost_us=w["heavy"],
        heavy_every=w["every"],
        heavy_fraction=w["frac"],
        cost_kind=w["kind"],
    )
    return NativeLoader(
        ds,
        batch_size=batch,
        shuffle=True,
        seed=seed,
        in_order=False,
        workers=workers,
        adaptive=False,
        output="torch",
    )


def one_run(args) -> dict:
    """Runs in a child process: builds one loader, measures, prints JSON."""
    import torch  # noqa: F401  (a training script has it imported already)

    w = WORKLOADS[args.workload]
    shape = [args.sample_len]
    rss = RSSSampler()
    rss.start()
    out = {}
    loader = make_loader(args.loader, args.workers, args.n, args.batch, shape, w, seed=1)

    # Loader alone: one epoch, time to first batch.
    t0 = time.perf_counter()
    it = iter(loader)
    first = None
    count = 0
    for data, labels in it:
        if first is None:
            first = time.perf_counter() - t0
        count += int(data.shape[0])
    epoch_s = time.perf_counter() - t0
    assert count == args.n, f"{args.loader} delivered {count} samples, want {args.n}"

    def consume(step_s: float) -> tuple:
        """One epoch with a consumer that sleeps step_s per batch (a GPU step
        does not use the CPU); returns (epoch time, share spent in next())."""
        waited = 0.0
        t0 = time.perf_counter()
        it = iter(loader)
        count = 0
        while True:
            a = time.perf_counter()
            try:
                data, labels = next(it)
            except StopIteration:
                break
            waited += time.perf_counter() - a
            count += int(data.shape[0])
            time.sleep(step_s)
        total = time.perf_counter() - t0
        assert count == args.n
        return total, waited / total

    # The same step for both loaders (capacity bound = 1.2x demand)...
    consumer_s, wait_share = consume(args.step_ms / 1000)
    # ...and a step at which this loader's own measured throughput is 1.2x
    # the demand (the consumer-wait target).
    _, wait_share_own = consume(1.2 * args.batch / (args.n / epoch_s))
    if hasattr(loader, "close"):
        loader.close()
    rss.stop.set()
    rss.join()
    out.update(
        epoch_s=epoch_s,
        samples_s=args.n / epoch_s,
        first_batch_s=first,
        consumer_s=consumer_s,
        wait_share=wait_share,
        wait_share_own=wait_share_own,
        peak_rss_mb=rss.peak / 2**20,
    )
    return out


def spawn(loader: str, workload: str, workers: int, a) -> dict:
    cmd = [
        sys.executable,
        os.path.abspath(__file__),
        "--child",
        "--loader", loader,
        "--workload", workload,
        "--workers", str(workers),
        "--n", str(a.n),
        "--batch", str(a.batch),
        "--sample-len", str(a.sample_len),
        "--step-ms", str(a.step_ms_for[workload]),
    ]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        raise SystemExit(f"{loader} {workload} w={workers} failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--loader", default="minato")
    ap.add_argument("--workload", default="speech-busy")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--sample-len", type=int, default=4000)
    ap.add_argument("--step-ms", type=float, default=50)
    ap.add_argument("--quick", action="store_true", help="fewer workloads and worker counts")
    ap.add_argument("--workloads", default="")
    ap.add_argument("--sweep", default="1,2,4,8")
    a = ap.parse_args()
    if a.child:
        print(json.dumps(one_run(a)))
        return

    cores = os.cpu_count() or 1
    names = a.workloads.split(",") if a.workloads else list(WORKLOADS)
    sweep = [int(x) for x in a.sweep.split(",")]
    if a.quick:
        names, sweep, a.n = ["speech-busy", "longtail-busy"], [2, 4], 512
    # The consumer's demand is set so that the loader's capacity bound is
    # 1.2x it: capacity = cores / mean cost (busy) or workers / mean cost
    # (sleep, at the smallest worker count of the sweep).
    a.step_ms_for = {}
    for name in names:
        w = WORKLOADS[name]
        par = cores if w["kind"] == "busy" else min(sweep)
        capacity = par / mean_cost_s(w)  # samples/s
        a.step_ms_for[name] = 1.2 * a.batch / capacity * 1000
    print(f"# {cores} cores, n={a.n}, batch={a.batch}, sample={a.sample_len} float32, sweep={sweep}")
    print(f"# consumer step per batch (ms): " + ", ".join(f"{k}={v:.1f}" for k, v in a.step_ms_for.items()))
    hdr = f"{'workload':15} {'loader':7} {'w':>2} {'epoch_s':>8} {'samp/s':>8} {'1st_s':>7} {'cons_s':>7} {'wait%':>6} {'wait%own':>8} {'rssMB':>7}"
    print(hdr)
    results = {}
    for name in names:
        for loader in ("minato", "torch"):
            for wk in sweep:
                r = spawn(loader, name, wk, a)
                results[(name, loader, wk)] = r
                print(
                    f"{name:15} {loader:7} {wk:2d} {r['epoch_s']:8.3f} {r['samples_s']:8.1f} "
                    f"{r['first_batch_s']:7.3f} {r['consumer_s']:7.3f} {100*r['wait_share']:6.1f} {100*r['wait_share_own']:8.1f} {r['peak_rss_mb']:7.0f}",
                    flush=True,
                )
    print()
    print("# ratios torch/minatoloader, each at its best worker count of the sweep (higher = minatoloader better)")
    print(f"{'workload':15} {'epoch':>7} {'consumer-epoch':>15} {'first-batch@max_w':>18} {'peak-rss':>9} {'minato wait%':>13} {'wait%own':>9} {'capacity%':>10}")
    for name in names:
        def best(loader, key):
            return min((results[(name, loader, wk)][key], wk) for wk in sweep)

        m_ep, _ = best("minato", "epoch_s")
        t_ep, _ = best("torch", "epoch_s")
        m_c, mw = best("minato", "consumer_s")
        t_c, _ = best("torch", "consumer_s")
        wmax = max(sweep)
        fb = results[(name, "torch", wmax)]["first_batch_s"] / results[(name, "minato", wmax)]["first_batch_s"]
        rss = results[(name, "torch", mw)]["peak_rss_mb"] / results[(name, "minato", mw)]["peak_rss_mb"]
        w = WORKLOADS[name]
        best_sps = max(results[(name, "minato", wk)]["samples_s"] / ((cores if w["kind"] == "busy" else wk) / mean_cost_s(w)) for wk in sweep)
        print(
            f"{name:15} {t_ep/m_ep:7.2f} {t_c/m_c:15.2f} {fb:18.1f} {rss:9.2f} "
            f"{100*results[(name, 'minato', mw)]['wait_share']:13.1f} {100*results[(name, 'minato', mw)]['wait_share_own']:9.1f} {100*best_sps:10.0f}"
        )


if __name__ == "__main__":
    main()
