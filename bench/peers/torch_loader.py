#!/usr/bin/env python3
"""bench/peers/torch_loader.py — the JPEG training pipeline of bench_pipeline (mlsys_pipeline.h, RESULTS §6.1) in
PyTorch's DataLoader, the loader most users would otherwise pick (issue 21): PIL decode, RandomResizedCrop(224),
RandomHorizontalFlip, ToTensor, Normalize, batch 32, over the same opencv-doc photographs, for each num_workers.

   /usr/bin/python3 bench/peers/torch_loader.py [--images DIR] [--batches N] [--workers 0,1,2,3,4] [--runs R] [--json]

Needs Debian's python3-torch, python3-torchvision and python3-pil (bench/peers/torch-install.sh; `make bench` runs it,
`make test` does not). Per run: a fresh DataLoader (shuffled, with replacement, so any N works), --batches batches
read; batches/s is measured from the end of the 5th batch to the last (steady state: worker start-up excluded), CPU
seconds per batch over the whole run (this process and its reaped workers, start-up included). One intra-op thread
per process, as our pipeline's operators are single-threaded. Prints a markdown table (and JSON lines with --json).
"""
import argparse
import json
import os
import resource
import sys
import time


def cpu_seconds():
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--images", default="/usr/share/doc/opencv-doc")
    ap.add_argument("--batches", type=int, default=200)
    ap.add_argument("--workers", default="0,1,2,3,4")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    try:
        import torch
        import torchvision
        from PIL import Image
        from torch.utils.data import DataLoader, Dataset, RandomSampler
        from torchvision import transforms
    except ImportError as e:
        sys.exit("torch_loader.py: %s (install python3-torch python3-torchvision python3-pil: "
                 "bash bench/peers/torch-install.sh)" % e)
    torch.set_num_threads(1)
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(a.images) for f in fs
                   if f.lower().endswith((".jpg", ".jpeg")))
    if not files:
        sys.exit("torch_loader.py: no JPEG under %s" % a.images)

    tf = transforms.Compose([
        transforms.RandomResizedCrop(224),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
    ])

    class Photos(Dataset):
        def __len__(self):
            return len(files)

        def __getitem__(self, i):
            with Image.open(files[i]) as im:
                return tf(im.convert("RGB")), 0

    def init_worker(_):
        torch.set_num_threads(1)

    ds = Photos()
    rows = []
    for w in [int(x) for x in a.workers.split(",")]:
        for r in range(a.runs):
            sampler = RandomSampler(ds, replacement=True, num_samples=a.batches * 32)
            c0, t0 = cpu_seconds(), time.perf_counter()
            dl = DataLoader(ds, batch_size=32, sampler=sampler, num_workers=w, drop_last=True,
                            worker_init_fn=init_worker if w else None)
            it = iter(dl)
            n = 0
            t5 = None
            for x, _ in it:
                assert tuple(x.shape) == (32, 3, 224, 224)
                n += 1
                if n == 5:
                    t5 = time.perf_counter()
            t1 = time.perf_counter()
            del it, dl   # workers shut down and are reaped: their CPU time is in RUSAGE_CHILDREN
            c1 = cpu_seconds()
            row = {"peer": "torch.utils.data.DataLoader", "torch": torch.__version__,
                   "torchvision": torchvision.__version__, "num_workers": w, "run": r, "batches": n,
                   "batches_per_s": (n - 5) / (t1 - t5), "wall_s": t1 - t0, "cpu_s_per_batch": (c1 - c0) / n}
            rows.append(row)
            if a.json:
                print(json.dumps(row), flush=True)
            print("num_workers %d run %d: %.2f batches/s, %.3f CPU-s per batch" %
                  (w, r, row["batches_per_s"], row["cpu_s_per_batch"]), file=sys.stderr)
    print("| num_workers | batches/s (median of %d) | CPU-s per batch | images/s |" % a.runs)
    print("|---|---|---|---|")
    for w in sorted({r["num_workers"] for r in rows}):
        rs = sorted(rows_w["batches_per_s"] for rows_w in rows if rows_w["num_workers"] == w)
        cs = sorted(rows_w["cpu_s_per_batch"] for rows_w in rows if rows_w["num_workers"] == w)
        med, cmed = rs[len(rs) // 2], cs[len(cs) // 2]
        print("| %d | %.2f | %.3f | %.0f |" % (w, med, cmed, med * 32))
    print("\n%d photographs from %s; torch %s, torchvision %s, Pillow %s" % (
        len(files), a.images, torch.__version__, torchvision.__version__, Image.__version__ if hasattr(Image, "__version__") else "?"))


if __name__ == "__main__":
    main()
