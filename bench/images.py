"""ImageNet-style chain: minatoloader's native ImageFolder side by side with
torch DataLoader + torchvision/PIL, on the same JPEGs, at equal worker counts.

Chain: decode, RandomResizedCrop(224), RandomHorizontalFlip, ToTensor,
Normalize. minatoloader runs twice: pixel-exact (the default) and with
decode_scale=True (DCT-scaled JPEG decoding, same random parameters). Each configuration runs in a fresh subprocess; each loader runs one
warm-up epoch then the measured epoch. Reported: images/s and images/s per
core (this machine's cores), and the per-image cost on one worker against the
C bound (PIL's libjpeg-turbo decode plus one PIL resize to 224x224, one
thread, measured in the same run).

Run: make bench   (or .venv/bin/python bench/images.py [--n 512])
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def make_jpegs(root: str, n: int) -> None:
    import numpy as np
    from PIL import Image

    if os.path.isdir(root) and sum(len(f) for _, _, f in os.walk(root)) >= n:
        return
    rng = np.random.default_rng(0)
    for k in range(n):
        cls = f"c{k % 10}"
        os.makedirs(os.path.join(root, cls), exist_ok=True)
        h, w = int(rng.integers(300, 520)), int(rng.integers(360, 640))
        y, x = np.mgrid[0:h, 0:w]
        img = np.stack([(x * 255 // w), (y * 255 // h), ((x ^ y) & 255)], -1)
        img = np.clip(img + rng.integers(-30, 31, (h, w, 3)), 0, 255).astype(np.uint8)
        Image.fromarray(img).save(os.path.join(root, cls, f"{k:05d}.jpg"), quality=90)


def child(args: argparse.Namespace) -> dict:
    import torch
    import torchvision
    from torchvision import transforms as tvt

    if args.loader == "torch":
        tf = tvt.Compose([tvt.RandomResizedCrop(224), tvt.RandomHorizontalFlip(), tvt.ToTensor(), tvt.Normalize(MEAN, STD)])
        ds = torchvision.datasets.ImageFolder(args.root, transform=tf)
        g = torch.Generator()
        g.manual_seed(0)
        loader = torch.utils.data.DataLoader(ds, batch_size=args.batch, shuffle=True, num_workers=args.workers, generator=g)
    else:
        from minatoloader import NativeLoader
        from minatoloader import datasets as mds
        from minatoloader import transforms as T

        tf = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(), T.Normalize(MEAN, STD)])
        ds = mds.ImageFolder(args.root, transform=tf, decode_scale=args.loader == "minato-dct")
        loader = NativeLoader(ds, args.batch, shuffle=True, seed=0, in_order=False, workers=args.workers,
                              adaptive=False, output="torch")
    n = 0
    for x, _ in loader:  # warm-up epoch (page cache, worker start)
        n += x.shape[0]
    t0 = time.perf_counter()
    n = 0
    for x, _ in loader:
        n += x.shape[0]
    dt = time.perf_counter() - t0
    return {"images_s": n / dt, "n": n}


def c_bound_ms(root: str, k: int = 64) -> float:
    """PIL (libjpeg-turbo) decode + one bilinear resize to 224x224, one thread."""
    from PIL import Image

    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs)[:k]
    t0 = time.perf_counter()
    for f in files:
        with Image.open(f) as im:
            im.convert("RGB").resize((224, 224), Image.BILINEAR)
    return (time.perf_counter() - t0) / len(files) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--loader", default="minato")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--n", type=int, default=512)
    ap.add_argument("--root", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "minatoloader-bench-jpegs"))
    ap.add_argument("--sweep", default="1,2,4")
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(a)))
        return
    make_jpegs(a.root, a.n)
    cores = os.cpu_count() or 1
    print(f"# {cores} cores, {a.n} JPEGs (300-520 x 360-640, q90) in {a.root}, batch {a.batch}")
    print(f"{'loader':7} {'w':>2} {'images/s':>9} {'per core':>9}")
    best = {}
    for loader in ("minato", "minato-dct", "torch"):
        for w in [int(x) for x in a.sweep.split(",")]:
            cmd = [sys.executable, __file__, "--child", "--loader", loader, "--workers", str(w),
                   "--batch", str(a.batch), "--root", a.root]
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
            if p.returncode != 0:
                raise SystemExit(p.stderr[-3000:])
            r = json.loads(p.stdout.strip().splitlines()[-1])
            best[loader] = max(best.get(loader, 0.0), r["images_s"])
            print(f"{loader:7} {w:2d} {r['images_s']:9.1f} {r['images_s'] / cores:9.1f}", flush=True)
    bound = c_bound_ms(a.root)
    print()
    print(f"best images/s: minatoloader {best['minato']:.1f} (pixel-exact), {best['minato-dct']:.1f} (decode_scale=True), "
          f"torch+torchvision {best['torch']:.1f}: ratios {best['minato'] / best['torch']:.2f}x, "
          f"{best['minato-dct'] / best['torch']:.2f}x")
    ours_ms = 1e3 * cores / best["minato"]  # core time per image at the best setting (pixel-exact)
    print(f"per image, CPU-time bound: minatoloader {ours_ms:.2f} ms of core time; C bound (PIL decode + one resize, "
          f"1 thread) {bound:.2f} ms: ratio {ours_ms / bound:.2f}")


if __name__ == "__main__":
    main()
