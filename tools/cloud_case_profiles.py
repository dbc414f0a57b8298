#!/usr/bin/env python3
"""tools/cloud_case_profiles.py — writes the four Srift profiles behind `mlsys cloud plan --dnn NAME`, the case-study
benchmarks (bench/bench_cloud.c), `make demo` and the CLI tests, one per experiment of the seed paper (arXiv 2011.14243
v1, §5.2 and §5.4):

  tests/data/cloud/profile_inception_v3_case1.json   case study 1, minimise time       (Inception v3, g4dn.8xlarge)
  tests/data/cloud/profile_vgg19_case2.json          case study 2, minimise cost       (VGG19, g4dn.8xlarge, g3.8xlarge)
  tests/data/cloud/profile_shufflenet_case3.json     case study 3, time limit + budget (ShuffleNet v2 x2.0, three types)
  tests/data/cloud/profile_resnet50_s54.json         the §5.4 interruption run         (ResNet50, three types)

The seed publishes no t(B) curves, only predicted times (or costs) of a few mixes. Each type gets a linear profile,
t_fw + t_bw = A + c*B with A = 5 ms and the forward a third, and its slope c is found by bisection so that our
simulator, run through `mlsys cloud simulate`, predicts one of the seed's figures. Every case keeps at least one
printed figure out of the calibration, so the search's plan (and, in cases 1, 3 and §5.4, its time) is a prediction:

  case 1  g4dn  <- CAP = TAP 8g4dn@64 at 1.776 s/iter;  Srift's 16g4dn@32 (0.914 s/iter) is predicted
  case 2  g4dn  <- TAP = Srift 8g4dn@128 at 0.321 cents/iter (2.006 s at 8 x $0.72/h)
          g3    <- CAP 16g3@64 at 0.393 cents/iter (1.282 s at 16 x $0.69/h);  the search's choice is predicted
  case 3  g4dn  <- TAP 4p3@1024 + 8g4dn@256 at 0.742 s/iter;  g3 <- CAP 2p3@1024 + 8g3@256 + 8g4dn@256 at 0.751;
          p3.8xlarge set to 0.30 s at 1024 (an assumption: a V100 about 2.5x a T4, four of them);
          Srift's 4p3@1024 + 8g3@128 + 8g4dn@128 (0.378 s/iter) is predicted
  §5.4    p3    <- 2p3@512 at 0.38 s/iter;  g3 <- 1p3@512 + 8g3@64 at 0.50 s/iter, with g4dn at g3's slope times
          case 3's calibrated g4dn/g3 ratio;  the eager search's plans before and after the preemption are predicted

Case 1 as printed is inconsistent (its mixes hold 512 samples, not the stated 1024, and CAP's batch 64 is below
Table 4's Bmax of 128 for Inception on g4dn.8xlarge). The one reading under which CAP's rule gives the printed
8g4dn@64 is a global batch of 512 with Bmax 64, and that is what the profile uses (docs/cloud.md §6).

Everything else is real: Bmax from the seed's Table 4, straggler scales from Table 1 (p3.2xl, g3.4xl, g4dn.4xl: the
nearest types it measured), and the layer lists (gradient bytes, backward completion order and ready fractions)
exported from torchvision (tests/data/cloud/layers_*.csv, tools/export_cloud_layers.py).

  python3 tools/cloud_case_profiles.py [--mlsys build/mlsys] [--only NAME]
"""
import argparse
import csv
import json
import os
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
DATA = os.path.join(ROOT, "tests", "data", "cloud")
SIGMA = {"p3.8xlarge": 0.052, "g3.8xlarge": 0.043, "g4dn.8xlarge": 0.067}  # Table 1
A = 0.005  # fixed per-iteration overhead, seconds
SPOT = {"p3.8xlarge": 3.68, "g3.8xlarge": 0.69, "g4dn.8xlarge": 0.72}  # Table 4, $/h


def points(bmax):
    # mlsys_cloud_pwl_points: 1, round(bmax/3), round(2bmax/3), bmax
    c = [1, int(bmax / 3.0 + 0.5), int(2.0 * bmax / 3.0 + 0.5), bmax]
    out = []
    for x in c:
        x = max(1, x)
        if out and x <= out[-1]:
            continue
        out.append(x)
    return out


def profile(dnn, bmax, slopes, layers):
    types = {}
    for name, c in slopes.items():
        b = points(bmax[name])
        tot = [A + c * x for x in b]
        types[name] = {"bmax": bmax[name], "t_fw": [round(t / 3, 9) for t in tot],
                       "t_bw": [round(2 * t / 3, 9) for t in tot], "sigma_rel": SIGMA[name]}
    return {"dnn": dnn, "layers": layers, "types": types}


def simulate(mlsys, prof, config, out):
    path = out + ".tmp"
    with open(path, "w") as f:
        json.dump(prof, f)
    r = subprocess.run([mlsys, "cloud", "simulate", "--profile", path, "--spot", "--config", config, "--json"],
                       capture_output=True, text=True, check=True)
    os.remove(path)
    return json.loads(r.stdout)["t_iter"]


def bisect(f, lo, hi, want):
    for _ in range(60):
        mid = (lo + hi) / 2
        if f(mid) < want:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def layers_of(dnn):
    gb, rf = [], []
    with open(os.path.join(DATA, "layers_%s.csv" % dnn)) as f:
        for row in csv.DictReader(f):
            gb.append(int(row["grad_bytes"]))
            rf.append(float(row["ready_frac"]))
    return {"grad_bytes": gb, "ready_frac": rf}


def calibrate(mlsys, dnn, bmax, slopes, steps, out):
    """steps: (types set to the slope, config, target s/iter), in order; each fixes its types' slopes."""
    layers = layers_of(dnn)
    slopes = dict(slopes)
    for names, config, want in steps:
        def f(c):
            s = dict(slopes)
            for n, ratio in names:
                s[n] = c * ratio
            return simulate(mlsys, profile(dnn, bmax, s, layers), config, out)
        c = bisect(f, 1e-6, 0.05, want)
        for n, ratio in names:
            slopes[n] = c * ratio
    return profile(dnn, bmax, slopes, layers), slopes


def write(prof, out):
    with open(out, "w") as f:
        json.dump(prof, f, indent=1)
        f.write("\n")
    print("wrote %s" % os.path.relpath(out, ROOT))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mlsys", default=os.path.join(ROOT, "build", "mlsys"))
    ap.add_argument("--only", help="one of inception_v3, vgg19, shufflenet, resnet50")
    a = ap.parse_args()
    m = a.mlsys
    cost_s = lambda cents, counts: cents / 100 / (sum(SPOT[t] * n for t, n in counts) / 3600)

    # case 3 first: §5.4 borrows its g4dn/g3 ratio
    out = os.path.join(DATA, "profile_shufflenet_case3.json")
    bmax = {"p3.8xlarge": 1024, "g3.8xlarge": 256, "g4dn.8xlarge": 256}
    prof, s3 = calibrate(m, "shufflenet_v2_x2_0", bmax,
                         {"p3.8xlarge": (0.30 - A) / 1024, "g3.8xlarge": 0.0, "g4dn.8xlarge": 0.0},
                         [((("g4dn.8xlarge", 1), ("g3.8xlarge", 1)), "4xp3.8xlarge@1024+8xg4dn.8xlarge@256", 0.742),
                          ((("g3.8xlarge", 1),), "2xp3.8xlarge@1024+8xg3.8xlarge@256+8xg4dn.8xlarge@256", 0.751)],
                         out)
    if a.only in (None, "shufflenet"):
        write(prof, out)
        print("  case 3: Srift's mix predicted %.4f s/iter (the seed: 0.378)" %
              simulate(m, prof, "4xp3.8xlarge@1024+8xg3.8xlarge@128+8xg4dn.8xlarge@128", out))
    ratio = s3["g4dn.8xlarge"] / s3["g3.8xlarge"]

    if a.only in (None, "inception_v3"):
        out = os.path.join(DATA, "profile_inception_v3_case1.json")
        prof, _ = calibrate(m, "inception_v3", {"g4dn.8xlarge": 64}, {"g4dn.8xlarge": 0.0},
                            [((("g4dn.8xlarge", 1),), "8xg4dn.8xlarge@64", 1.776)], out)
        write(prof, out)
        print("  case 1: 16g4dn@32 predicted %.4f s/iter (the seed: 0.914)" % simulate(m, prof, "16xg4dn.8xlarge@32", out))

    if a.only in (None, "vgg19"):
        out = os.path.join(DATA, "profile_vgg19_case2.json")
        prof, _ = calibrate(m, "vgg19", {"g4dn.8xlarge": 128, "g3.8xlarge": 64},
                            {"g4dn.8xlarge": 0.0, "g3.8xlarge": 0.0},
                            [((("g4dn.8xlarge", 1),), "8xg4dn.8xlarge@128", cost_s(0.321, [("g4dn.8xlarge", 8)])),
                             ((("g3.8xlarge", 1),), "16xg3.8xlarge@64", cost_s(0.393, [("g3.8xlarge", 16)]))], out)
        write(prof, out)

    if a.only in (None, "resnet50"):
        out = os.path.join(DATA, "profile_resnet50_s54.json")
        prof, _ = calibrate(m, "resnet50", {"p3.8xlarge": 512, "g3.8xlarge": 64, "g4dn.8xlarge": 64},
                            {"p3.8xlarge": 0.0, "g3.8xlarge": 0.0, "g4dn.8xlarge": 0.0},
                            [((("p3.8xlarge", 1),), "2xp3.8xlarge@512", 0.38),
                             ((("g3.8xlarge", 1), ("g4dn.8xlarge", ratio)), "1xp3.8xlarge@512+8xg3.8xlarge@64", 0.50)],
                            out)
        write(prof, out)


if __name__ == "__main__":
    sys.exit(main())
