"""A Python Dataset (user code): torch DataLoader side by side with
minatoloader.DataLoader, same constructor arguments, equal num_workers.

The dataset is what most users have: a map-style torch Dataset whose
__getitem__ opens a JPEG with PIL, converts it to RGB and runs torchvision's
RandomResizedCrop(224), RandomHorizontalFlip, ToTensor, Normalize; it returns
(image, label, index) with label = index % 10. Workloads:

  uniform         no tail
  longtail-sleep  1% of indices (index % 100 == 37) also sleep 49x the median
                  sample time (I/O-like; the median is measured once, up front,
                  in this process on one thread), so they cost ~50x the median
  longtail-busy   the same indices load and transform their image 49 more
                  times (CPU-bound; ~50x the cost of that image)

Both loaders get the same arguments: batch_size, shuffle=True, num_workers,
a torch.Generator with the same seed, drop_last=False, in_order=False (torch
has in_order since 2.6: it may then hand out a finished batch before an
earlier one), prefetch_factor and persistent_workers left at their defaults.

Every measurement runs in a fresh subprocess (so peak RSS and start-up are its
own), torch and minatoloader alternately, at each worker count; --repeats runs
the whole set again and each metric keeps its best. In each subprocess:

  images/s      a fresh loader, one epoch, the consumer does nothing; the
                clock starts before the loader is constructed, so worker
                start-up counts
  first batch   from constructing the loader (iter() and worker start-up
                included) to the first batch of that epoch
  consumer      a second fresh loader, one epoch with a consumer that sleeps
                `step` per batch (a GPU stand-in): epoch time (from
                construction), and the share of it spent waiting (constructing
                the loader, and in next()); `step` is 0.8 x batch / torch's
                images/s on the uniform workload at that worker count
                (measured first, in its own subprocesses; or --step-ms), so on
                uniform data torch's consumer would be ~80% busy
  peak RSS      the process plus its children (workers), sampled every 20 ms

Every epoch is checked: each index delivered exactly once, labels = index % 10,
images 3x224x224.

Run: .venv/bin/python bench/pydataset.py [--quick] [--workers 2,4] [--repeats 3]
Absolute times from a 2-core CPU machine are not results; the ratios are, since
both loaders ran in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import torch
from torch.utils.data import Dataset

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
WORKLOADS = ("uniform", "longtail-sleep", "longtail-busy")
TAIL_EVERY, TAIL_AT, TAIL_FACTOR = 100, 37, 50  # 1% of indices cost 50x the median
LOADERS = ("torch", "ours")
NAMES = {"torch": "torch", "ours": "minatoloader"}
# Targets, printed next to the ratios (>= 1: minatoloader better).
TARGETS = {"throughput": ("uniform", 1.0), "consumer": ("longtail", 1.5), "first": ("", 1.0)}


# ------------------------------------------------------------------- data
def list_jpegs(root: str) -> list[str]:
    return sorted(os.path.join(root, f) for f in os.listdir(root) if f.endswith(".jpg")) if os.path.isdir(root) else []


def make_jpegs(root: str, n: int) -> None:
    """n JPEGs of 160..640 x 160..640: smooth gradients plus noise, q90."""
    import numpy as np
    from PIL import Image

    if len(list_jpegs(root)) >= n:
        return
    os.makedirs(root, exist_ok=True)
    rng = np.random.default_rng(0)
    for k in range(n):
        h, w = int(rng.integers(160, 641)), int(rng.integers(160, 641))
        y, x = np.mgrid[0:h, 0:w].astype(np.float32)
        a, b = rng.uniform(0.2, 1.0, 2)
        img = np.stack([x * 255 / w * a, y * 255 / h * b, (x + y) * 255 / (w + h)], -1)
        img += rng.normal(0, 12, (h, w, 3))
        Image.fromarray(np.clip(img, 0, 255).astype(np.uint8)).save(os.path.join(root, f"{k:05d}.jpg"), quality=90)


class JpegDataset(Dataset):
    """A user's map-style Dataset: PIL decode + torchvision transforms."""

    def __init__(self, files: list[str], tail: str = "", tail_sleep_s: float = 0.0):
        from torchvision import transforms as tvt

        self.files = list(files)
        self.tail = tail  # "", "sleep" or "busy"
        self.tail_sleep_s = tail_sleep_s
        self.tf = tvt.Compose([tvt.RandomResizedCrop(224), tvt.RandomHorizontalFlip(), tvt.ToTensor(), tvt.Normalize(MEAN, STD)])

    def __len__(self) -> int:
        return len(self.files)

    def load(self, index: int) -> torch.Tensor:
        from PIL import Image

        with Image.open(self.files[index]) as im:
            return self.tf(im.convert("RGB"))

    def __getitem__(self, index: int):
        x = self.load(index)
        if self.tail and index % TAIL_EVERY == TAIL_AT:
            if self.tail == "sleep":
                time.sleep(self.tail_sleep_s)
            else:
                for _ in range(TAIL_FACTOR - 1):
                    self.load(index)
        return x, index % 10, index


def median_sample_s(files: list[str], k: int = 48) -> float:
    """Median time of one uniform sample, on one thread (as in a worker)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    ds = JpegDataset(files)
    for i in range(min(4, len(ds))):  # warm-up (imports, page cache)
        ds[i]
    times = []
    for i in range(min(k, len(ds))):
        t0 = time.perf_counter()
        ds[i]
        times.append(time.perf_counter() - t0)
    torch.set_num_threads(threads)
    return statistics.median(times)


# ------------------------------------------------------------ measurement
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from speech import RSSSampler  # noqa: E402  (the same sampler as the speech benchmark)


def make_loader(a, ds):
    g = torch.Generator()
    g.manual_seed(a.seed)
    in_order = a.in_order or (a.loader == "torch" and a.torch_in_order)
    kwargs = dict(batch_size=a.batch, shuffle=True, num_workers=a.workers, generator=g, drop_last=False,
                  in_order=in_order)
    if a.loader == "torch":
        return torch.utils.data.DataLoader(ds, **kwargs)
    from minatoloader import DataLoader as MLDataLoader

    return MLDataLoader(ds, **kwargs)


def close(loader) -> None:
    if hasattr(loader, "close"):
        loader.close()


def epoch(a, ds, step_s: float | None) -> dict:
    """One epoch of a fresh loader; step_s None: no consumer."""
    seen: list[int] = []
    t0 = time.perf_counter()
    loader = make_loader(a, ds)
    built = time.perf_counter() - t0
    it = iter(loader)
    first = None
    waited = built  # constructing the loader is waiting for data too
    while True:
        t = time.perf_counter()
        try:
            batch = next(it)
        except StopIteration:
            break
        waited += time.perf_counter() - t
        if first is None:
            first = time.perf_counter() - t0
        x, labels, idx = batch
        idx = [int(i) for i in idx]
        assert tuple(x.shape[1:]) == (3, 224, 224), f"{a.loader}: image batch of shape {tuple(x.shape)}"
        assert [int(v) for v in labels] == [i % 10 for i in idx], f"{a.loader}: labels do not match indices"
        seen.extend(idx)
        if step_s:
            time.sleep(step_s)
    end = time.perf_counter()
    del it
    close(loader)
    if sorted(seen) != list(range(len(ds))):
        missing = len(set(range(len(ds))) - set(seen))
        raise AssertionError(f"{a.loader}: epoch delivered {len(seen)} samples, {len(set(seen))} distinct, "
                             f"{missing} missing, want each of {len(ds)} once")
    return {"total_s": end - t0, "built_s": built, "first_s": first, "wait_share": waited / (end - t0)}


def one_run(a) -> dict:
    """Runs in a child process: measures one (loader, workload, workers)."""
    if a.loader == "ours":
        import minatoloader  # noqa: F401  (imported up front, as torch is: not timed)
    files = list_jpegs(a.data)[: a.n]
    tail = {"uniform": "", "longtail-sleep": "sleep", "longtail-busy": "busy"}[a.workload]
    ds = JpegDataset(files, tail=tail, tail_sleep_s=a.tail_sleep_ms / 1000)
    rss = RSSSampler()
    rss.start()
    alone = epoch(a, ds, None)
    out = {"images_s": len(ds) / alone["total_s"], "first_batch_s": alone["first_s"], "built_s": alone["built_s"]}
    if a.step_ms is not None:
        cons = epoch(a, ds, a.step_ms / 1000)
        out.update(consumer_s=cons["total_s"], wait_share=cons["wait_share"])
    rss.stop.set()
    rss.join()
    out["peak_rss_mb"] = rss.peak / 2**20
    return out


def spawn(a, loader: str, workload: str, workers: int, step_ms: float | None) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--loader", loader, "--workload", workload,
           "--workers", str(workers), "--n", str(a.n), "--batch", str(a.batch), "--data", a.data,
           "--seed", str(a.seed), "--tail-sleep-ms", repr(a.tail_sleep_ms)]
    if step_ms is not None:
        cmd += ["--step-ms", repr(step_ms)]
    if a.in_order:
        cmd += ["--in-order"]
    if a.torch_in_order:
        cmd += ["--torch-in-order"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if p.returncode != 0:
        return {"error": (p.stderr or p.stdout)[-3000:]}
    return json.loads(p.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------- report
def best(runs: list[dict]) -> dict:
    """Each metric's best over the repeats (wait share with the best consumer epoch)."""
    ok = [r for r in runs if "error" not in r]
    if not ok:
        return runs[-1]
    out = {"images_s": max(r["images_s"] for r in ok), "first_batch_s": min(r["first_batch_s"] for r in ok),
           "peak_rss_mb": min(r["peak_rss_mb"] for r in ok)}
    c = min(ok, key=lambda r: r["consumer_s"])
    out.update(consumer_s=c["consumer_s"], wait_share=c["wait_share"])
    return out


def target_note(kind: str, workload: str, ratio: float) -> str:
    applies, want = TARGETS[kind]
    if not workload.startswith(applies):
        return ""
    return f"   (target >= {want:.1f}: {'met' if ratio >= want else 'NOT met'})"


def report(workload: str, res: dict, loaders: tuple, workers: list[int], steps: dict) -> None:
    print(f"\n### {workload}\n")
    print("| loader | workers | images/s | consumer epoch (s) | consumer wait | first batch (s) | peak RSS (MB) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for w in workers:
        for ld in loaders:
            r = res[(workload, ld, w)]
            if "error" in r:
                print(f"| {NAMES[ld]} | {w} | failed | | | | |")
                continue
            print(f"| {NAMES[ld]} | {w} | {r['images_s']:.1f} | {r['consumer_s']:.3f} | {100 * r['wait_share']:.1f}% "
                  f"| {r['first_batch_s']:.3f} | {r['peak_rss_mb']:.0f} |")
    if len(loaders) < 2:
        return
    print()
    for w in workers:
        t, m = res[(workload, "torch", w)], res[(workload, "ours", w)]
        if "error" in t or "error" in m:
            print(f"- workers {w}: no ratios (a run failed)")
            continue
        thr = m["images_s"] / t["images_s"]
        con = t["consumer_s"] / m["consumer_s"]
        fb = t["first_batch_s"] / m["first_batch_s"]
        rss = t["peak_rss_mb"] / m["peak_rss_mb"]
        print(f"- workers {w} (step {steps[w]:.1f} ms):")
        print(f"  - throughput ours/torch {thr:.2f}{target_note('throughput', workload, thr)}")
        print(f"  - consumer epoch time torch/ours {con:.2f}{target_note('consumer', workload, con)}")
        print(f"  - first batch torch/ours {fb:.2f}{target_note('first', workload, fb)}")
        print(f"  - peak RSS torch/ours {rss:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--loader", default="ours", help=argparse.SUPPRESS)
    ap.add_argument("--workload", default="uniform", help=argparse.SUPPRESS)
    ap.add_argument("--tail-sleep-ms", type=float, default=0.0, help=argparse.SUPPRESS)
    ap.add_argument("--workers", default="2,4", help="num_workers values, comma-separated (default 2,4)")
    ap.add_argument("--workloads", default=",".join(WORKLOADS), help=f"comma-separated subset of {','.join(WORKLOADS)}")
    ap.add_argument("--n", type=int, default=512, help="number of JPEGs (default 512)")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seed", type=int, default=0, help="torch.Generator seed given to both loaders")
    ap.add_argument("--repeats", type=int, default=1, help="run everything this many times, keep each metric's best")
    ap.add_argument("--data", default="", help="JPEG directory to reuse (generated there if it has fewer than --n)")
    ap.add_argument("--step-ms", type=float, default=None,
                    help="consumer step per batch; default 0.8 x batch / torch's uniform images/s, per worker count")
    ap.add_argument("--calib-runs", type=int, default=2, help="torch uniform runs per worker count to set the step (best)")
    ap.add_argument("--in-order", action="store_true", help="in_order=True for both loaders (default False)")
    ap.add_argument("--torch-in-order", action="store_true",
                    help="torch keeps its default in_order=True (ours stays in_order=False): what a user "
                         "switching loaders sees")
    ap.add_argument("--torch-only", action="store_true")
    ap.add_argument("--ours-only", action="store_true")
    ap.add_argument("--quick", action="store_true", help="smoke run: n=64, workers 2, longtail-sleep, one calibration run")
    a = ap.parse_args()
    if a.child:
        a.workers = int(a.workers)
        print(json.dumps(one_run(a)))
        return

    if a.torch_only and a.ours_only:
        ap.error("--torch-only and --ours-only exclude each other")
    if a.quick:
        a.n, a.workers, a.calib_runs = 64, "2", 1
        if a.workloads == ",".join(WORKLOADS):
            a.workloads = "longtail-sleep"
    workers = [int(x) for x in a.workers.split(",")]
    names = a.workloads.split(",")
    for nm in names:
        if nm not in WORKLOADS:
            ap.error(f"unknown workload {nm!r}; choose from {', '.join(WORKLOADS)}")
    loaders = ("torch",) if a.torch_only else ("ours",) if a.ours_only else LOADERS

    tmp = None
    if not a.data:
        tmp = a.data = tempfile.mkdtemp(prefix="minatoloader-pydataset-")
    try:
        run(a, workers, names, loaders)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


def run(a, workers: list[int], names: list[str], loaders: tuple) -> None:
    print(f"# command: {shlex.join([sys.executable, *sys.argv])}")
    make_jpegs(a.data, a.n)
    files = list_jpegs(a.data)[: a.n]
    if len(files) < a.n:
        raise SystemExit(f"{a.data}: {len(files)} JPEGs, want {a.n}")
    med = median_sample_s(files)
    a.tail_sleep_ms = (TAIL_FACTOR - 1) * med * 1000
    cores = os.cpu_count() or 1
    tails = sum(1 for i in range(a.n) if i % TAIL_EVERY == TAIL_AT)
    print(f"# {cores} cores, {a.n} JPEGs (160-640 x 160-640, q90) in {a.data}, batch {a.batch}, workers {workers}, "
          f"repeats {a.repeats}, in_order={a.in_order}{' (torch: True)' if a.torch_in_order else ''}; load average {os.getloadavg()[0]:.2f} (other work skews times)")
    print(f"# median sample (decode + transforms, 1 thread): {med * 1000:.2f} ms; long tail: {tails} of {a.n} indices "
          f"(index % {TAIL_EVERY} == {TAIL_AT}), sleep {a.tail_sleep_ms:.1f} ms or {TAIL_FACTOR - 1} extra loads", flush=True)

    # The consumer's step: torch's uniform throughput at each worker count.
    if a.step_ms is not None:
        steps = {w: a.step_ms for w in workers}
    else:
        steps = {}
        for w in workers:
            got = []
            for _ in range(a.calib_runs):
                r = spawn(a, "torch", "uniform", w, None)
                if "error" in r:
                    raise SystemExit(f"calibration (torch, uniform, workers {w}) failed:\n{r['error']}")
                got.append(r["images_s"])
            steps[w] = 0.8 * a.batch / max(got) * 1000
            print(f"# calibration: torch uniform workers {w}: {', '.join(f'{g:.1f}' for g in got)} images/s "
                  f"(best of {len(got)})", flush=True)
    batches = -(-a.n // a.batch)
    print("# consumer step per batch (ms): " + ", ".join(f"workers {w}: {s:.1f}" for w, s in steps.items())
          + f"; with free data a consumer epoch takes {batches} x step: "
          + ", ".join(f"{batches * s / 1000:.3f} s" for s in steps.values()))
    print("# progress: workload loader workers repeat images/s consumer_s wait% first_s rssMB", flush=True)

    runs: dict[tuple, list[dict]] = {}
    for rep in range(a.repeats):
        for nm in names:
            for w in workers:
                for ld in loaders:  # alternately
                    r = spawn(a, ld, nm, w, steps[w])
                    runs.setdefault((nm, ld, w), []).append(r)
                    if "error" in r:
                        print(f"# {nm} {NAMES[ld]} {w} {rep + 1}: FAILED", flush=True)
                    else:
                        print(f"# {nm} {NAMES[ld]} {w} {rep + 1}: {r['images_s']:.1f} {r['consumer_s']:.3f} "
                              f"{100 * r['wait_share']:.1f} {r['first_batch_s']:.3f} {r['peak_rss_mb']:.0f}", flush=True)
    res = {k: best(v) for k, v in runs.items()}
    for nm in names:
        report(nm, res, loaders, workers, steps)
    failed = [(k, r["error"]) for k, r in res.items() if "error" in r]
    for (nm, ld, w), err in failed:
        print(f"\n# {NAMES[ld]} failed on {nm}, workers {w}:\n{err}")
    if failed:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
