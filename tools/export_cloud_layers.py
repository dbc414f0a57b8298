#!/usr/bin/python3
"""export_cloud_layers.py — per-parameter gradient sizes and backward completion times of the 8 Srift DNNs
(srift.md §5.1, §7.5) as CSV layer lists for mlsys_cloud.h's iteration simulator.

    /usr/bin/python3 tools/export_cloud_layers.py                      # all 8 -> tests/data/cloud/
    /usr/bin/python3 tools/export_cloud_layers.py --check-only         # parameter totals only, no timing, no files
    /usr/bin/python3 tools/export_cloud_layers.py --models resnet18 --out-dir /tmp/x

Run with Debian's /usr/bin/python3 (python3-torch 1.13.1, python3-torchvision 0.14.1), not a pyenv/venv python.
Nothing is downloaded: every model is built with weights=None (inception_v3 with aux_logits=False,
init_weights=False).

Method, per DNN (CPU, torch.set_num_threads(1), torch.manual_seed(0) before building the model and the input):
  1. model.train() (dropout and BatchNorm in training mode); input torch.randn(16, 3, 224, 224) (299x299 for
     inception_v3); loss = out.sum().
  2. p.register_hook on every trainable parameter records time.perf_counter() when that parameter's gradient is
     computed, as seconds since the instant just before loss.backward() was called.
  3. One untimed warm-up forward+backward, then REPEATS (3) timed runs, each with a fresh forward. The order of the
     rows is the hook firing order (identical in every run on the single-threaded CPU engine; checked). ready_s is the
     per-parameter median over the runs; the backward time is the median over runs of (backward return - start).
  4. Medians of different parameters come from different runs, so ready_s may decrease along the firing order; the
     running maximum is taken (counted in the summary's `monotone_fixes` log line), then clamped to the backward
     time, and ready_frac = ready_s / backward_s lies in [0, 1], non-decreasing in `order`.

Outputs: <out-dir>/layers_<dnn>.csv  (order,name,numel,grad_bytes,ready_s,ready_frac; grad_bytes = numel*4, fp32)
         <out-dir>/layers_summary.csv (dnn,params,layers,backward_s_batch16)
The parameter totals are checked against srift.md §5.1 (61.10M, 11.69M, 25.56M, 143.67M, 25.03M, 1.24M, 7.39M,
23.83M at 0.01M); a mismatch exits with status 1 before anything is written. Only timings vary between runs.
"""
import argparse
import os
import statistics
import sys
import time

DNNS = ["alexnet", "resnet18", "resnet50", "vgg19", "resnext50_32x4d", "squeezenet1_1", "shufflenet_v2_x2_0",
        "inception_v3"]
# srift.md §5.1: parameter counts in millions, rounded to 0.01M (inception without aux logits).
SPEC_PARAMS_M = {"alexnet": 61.10, "resnet18": 11.69, "resnet50": 25.56, "vgg19": 143.67, "resnext50_32x4d": 25.03,
                 "squeezenet1_1": 1.24, "shufflenet_v2_x2_0": 7.39, "inception_v3": 23.83}
BATCH = 16  # batch 16: below it PyTorch 1.13 runs 1x1 convs through BLAS (netlib here), which skews the ready fractions
REPEATS = 3
DEFAULT_OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "cloud")


def build(name):
    import torchvision.models as tvm
    if name == "inception_v3":
        return tvm.inception_v3(weights=None, aux_logits=False, init_weights=False), 299
    return getattr(tvm, name)(weights=None), 224


def params_of(model):
    return [(n, p) for n, p in model.named_parameters() if p.requires_grad]


def check_totals(name, model, quiet=False):
    total = sum(p.numel() for _, p in params_of(model))
    got = round(total / 1e6, 2)
    ok = abs(got - SPEC_PARAMS_M[name]) < 1e-9
    if not quiet or not ok:
            print("%-20s params %10d = %.2fM (spec %.2fM) %s" % (name, total, got, SPEC_PARAMS_M[name],
                                                            "ok" if ok else "MISMATCH"), file=sys.stderr)
    return ok, total


def time_backward(model, x):
    """REPEATS timed runs after one warm-up. Returns (firing order of names, {name: [t...]}, [backward_s...])."""
    import torch
    named = params_of(model)
    state = {"t0": 0.0, "seq": None}

    def make_hook(pname):
        def hook(grad):
            state["seq"].append((pname, time.perf_counter() - state["t0"]))
            return None
        return hook

    handles = [p.register_hook(make_hook(n)) for n, p in named]
    orders, times, totals = [], {n: [] for n, _ in named}, []
    try:
        for rep in range(REPEATS + 1):
            model.zero_grad(set_to_none=True)
            out = model(x)
            loss = out.sum()
            state["seq"] = []
            state["t0"] = time.perf_counter()
            loss.backward()
            total = time.perf_counter() - state["t0"]
            seq = state["seq"]
            if len(seq) != len(named) or len({n for n, _ in seq}) != len(named):
                raise RuntimeError("%d hook calls for %d parameters" % (len(seq), len(named)))
            if rep == 0:                              # warm-up
                continue
            orders.append([n for n, _ in seq])
            for n, t in seq:
                times[n].append(t)
            totals.append(total)
            del out, loss
    finally:
        for h in handles:
            h.remove()
    for o in orders[1:]:
        if o != orders[0]:
            raise RuntimeError("gradient hook order differs between runs")
    return orders[0], times, totals


def export(name, out_dir):
    import torch
    torch.manual_seed(0)
    model, hw = build(name)
    ok, total = check_totals(name, model, quiet=True)
    if not ok:
        return None
    model.train()
    torch.manual_seed(0)
    x = torch.randn(BATCH, 3, hw, hw)
    order, times, totals = time_backward(model, x)
    numel = {n: p.numel() for n, p in params_of(model)}
    bwd = statistics.median(totals)
    rows, run_max, fixes = [], 0.0, 0
    for i, n in enumerate(order):
        t = statistics.median(times[n])
        if t < run_max:
            fixes += 1
            t = run_max
        t = min(t, bwd)
        run_max = t
        rows.append((i, n, numel[n], numel[n] * 4, t, t / bwd))
    path = os.path.join(out_dir, "layers_%s.csv" % name)
    with open(path, "w") as f:
        f.write("order,name,numel,grad_bytes,ready_s,ready_frac\n")
        for i, n, ne, gb, t, fr in rows:
            f.write("%d,%s,%d,%d,%.6f,%.6f\n" % (i, n, ne, gb, t, fr))
    print("%-20s layers %4d backward %.4f s (runs %s) monotone_fixes %d -> %s" % (
        name, len(rows), bwd, " ".join("%.4f" % v for v in totals), fixes, path), file=sys.stderr)
    return (name, total, len(rows), bwd)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", nargs="*", default=DNNS, choices=DNNS)
    ap.add_argument("--out-dir", default=DEFAULT_OUT)
    ap.add_argument("--check-only", action="store_true", help="check parameter totals only; write nothing")
    a = ap.parse_args()
    try:
        import torch
        import torchvision  # noqa: F401
    except ImportError as e:
        print("export_cloud_layers: cannot import torch/torchvision (%s); run with Debian's /usr/bin/python3 "
              "(apt-get install python3-torch python3-torchvision)" % e, file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    print("torch %s torchvision %s" % (torch.__version__, torchvision.__version__), file=sys.stderr)
    # Check every total first, so that a mismatch writes nothing.
    bad = []
    for name in a.models:
        torch.manual_seed(0)
        model, _ = build(name)
        if not check_totals(name, model)[0]:
            bad.append(name)
        del model
    if bad:
        print("export_cloud_layers: parameter totals differ from srift.md §5.1 for: %s" % " ".join(bad),
              file=sys.stderr)
        return 1
    if a.check_only:
        return 0
    os.makedirs(a.out_dir, exist_ok=True)
    summary = []
    for name in a.models:
        r = export(name, a.out_dir)
        if r is None:
            return 1
        summary.append(r)
    if a.models == DNNS:
        path = os.path.join(a.out_dir, "layers_summary.csv")
        with open(path, "w") as f:
            f.write("dnn,params,layers,backward_s_batch16\n")
            for name, total, layers, bwd in summary:
                f.write("%s,%d,%d,%.6f\n" % (name, total, layers, bwd))
        print("wrote %s" % path, file=sys.stderr)
    else:
        print("layers_summary.csv not written (only with all 8 DNNs)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
