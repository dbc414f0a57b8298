#!/usr/bin/python3
"""xgb_fixtures.py — synthetic allreduce probe data and XGBoost 1.7 models for mlsys_cloud.h's GBDT
(srift.md §3.3, §7.4 item 11). The committed outputs let tests/test_cloud_gbdt.c check our loader and trainer
against XGBoost without XGBoost being installed at test time.

    /usr/bin/python3 tools/xgb_fixtures.py                              # -> tests/data/cloud/xgb/
    /usr/bin/python3 tools/xgb_fixtures.py --out-dir /tmp/x --rounds 30

Run with Debian's /usr/bin/python3 (python3-xgboost 1.7.4, python3-numpy), not a pyenv/venv python.

Data (α-β ring model with noise, our reading of srift.md §7.4 item 11):
    t = 2(n-1)·α + 2(n-1)/n · s·k/β_type · L,     L ~ lognormal(0, 0.1)   (the spec's "(1+ε)")
    α ~ uniform(20, 60) µs per probe (placement/latency variance: what makes small transfers noisy),
    k = n_async concurrent transfers sharing the link, β_type = Table 2 means 11.2 / 11.9 / 20.3 Gbps,
    s = 4 B .. 512 MiB (2^2 .. 2^29), n in {2,4,8,16,32,64}, k in {1,2,4}, REPEATS probes per grid point.
    label = bus bandwidth b_bus = 2s(n-1)/(n t), in Gbps (1e9 bit/s).
Features (7, as floats): type code (0 p3.8xlarge, 1 g3.8xlarge, 2 g4dn.4xlarge), cpu cores, memory GiB, rated Gbps
(the last three constant per type), log2(s), n, n_async.
Split: stratified by (type, n, log2 s) as srift.md §3.3 proposes; in each stratum (9 rows) one row, chosen by the
seeded RNG, goes to the test set (a 8/1 ≈ 9/1 split).

Models (XGBoost 1.7, tree_method=hist, max_bin=256, max_depth=6, eta=0.3, lambda=1, gamma=0, nthread=1):
    large:  reg:squarederror on s > MTU (9001 B), min_child_weight 1, base_score = median(y)
    small:  reg:pseudohubererror on s <= MTU, min_child_weight 0, base_score = median(y), huber_slope = median(y)
            (in label units: the pseudo-Huber fix of srift.md §3.3)
    single: reg:squarederror on every row, min_child_weight 1, base_score = median(y)
Outputs (all small; the whole directory stays under 1 MB):
    train.csv, test.csv        type,cores,mem_gib,rated_gbps,log2s,n,n_async,busbw_gbps  (%.9g)
    <model>.json               Booster.save_model (XGBoost's JSON model)
    <model>.dump.txt           Booster.dump_model (text dump, no statistics)
    params.csv                 model,objective,rounds,max_depth,eta,lambda,gamma,min_child_weight,max_bin,
                               huber_slope,base_score  (the exact hyperparameters, for our trainer)
    test_pred.csv              XGBoost's predictions on every test row: large,small,single (%.9g of the float32)
    missing.csv                MISSING_ROWS test rows with some features set to NaN ("nan") + the three models'
                               predictions: checks the learned default directions
"""
import argparse
import os
import sys

import numpy as np

TYPES = [  # name, cores, mem GiB, rated Gbps, beta Gbps (Table 2 mean)
    ("p3.8xlarge", 32, 244.0, 10.0, 11.2),
    ("g3.8xlarge", 32, 244.0, 10.0, 11.9),
    ("g4dn.4xlarge", 16, 64.0, 25.0, 20.3),
]
NS = [2, 4, 8, 16, 32, 64]
ASYNC = [1, 2, 4]
LOG2S = list(range(2, 30))
REPEATS = 3
MTU = 9001
COLS = ["type", "cores", "mem_gib", "rated_gbps", "log2s", "n", "n_async"]
MISSING_ROWS = 60


def gen_rows(rng):
    rows = []
    for ti, (_, cores, mem, rated, beta) in enumerate(TYPES):
        for l2 in LOG2S:
            s = float(2 ** l2)
            for n in NS:
                for k in ASYNC:
                    for _ in range(REPEATS):
                        alpha = rng.uniform(20e-6, 60e-6)
                        noise = rng.lognormal(0.0, 0.1)
                        t = 2 * (n - 1) * alpha + 2.0 * (n - 1) / n * s * k / (beta * 1e9 / 8) * noise
                        busbw = 2 * s * (n - 1) / (n * t) * 8 / 1e9
                        rows.append([ti, cores, mem, rated, l2, n, k, busbw])
    return np.array(rows, dtype=np.float64)


def split(rows, rng):
    strata = {}
    for i, r in enumerate(rows):
        strata.setdefault((int(r[0]), int(r[5]), int(r[4])), []).append(i)
    test = set()
    for key in sorted(strata):
        idx = strata[key]
        test.add(idx[int(rng.integers(len(idx)))])
    te = np.array(sorted(test))
    tr = np.array([i for i in range(len(rows)) if i not in test])
    return rows[tr], rows[te]


def write_csv(path, header, data):
    with open(path, "w") as f:
        f.write(",".join(header) + "\n")
        for r in data:
            f.write(",".join("nan" if np.isnan(v) else "%.9g" % v for v in r) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out-dir", default="tests/data/cloud/xgb")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--seed", type=int, default=20201129)
    a = ap.parse_args()
    import xgboost as xgb
    if not xgb.__version__.startswith("1.7"):
        print("warning: xgboost %s, the fixtures were made with 1.7.4" % xgb.__version__, file=sys.stderr)
    os.makedirs(a.out_dir, exist_ok=True)
    rng = np.random.default_rng(a.seed)
    # rows are rounded to float32 first: XGBoost and our C trainer then see exactly the same numbers
    rows = gen_rows(rng).astype(np.float32).astype(np.float64)
    train, test = split(rows, rng)
    write_csv(os.path.join(a.out_dir, "train.csv"), COLS + ["busbw_gbps"], train)
    write_csv(os.path.join(a.out_dir, "test.csv"), COLS + ["busbw_gbps"], test)

    mtu_l2 = np.log2(MTU)
    subsets = {
        "large": train[train[:, 4] > mtu_l2],
        "small": train[train[:, 4] <= mtu_l2],
        "single": train,
    }
    preds, params_rows, models = {}, [], {}
    Xte = test[:, :7].astype(np.float32)
    for name in ["large", "small", "single"]:
        d = subsets[name]
        y = d[:, 7].astype(np.float32)
        med = float(np.median(y))
        p = {"tree_method": "hist", "max_bin": 256, "max_depth": 6, "eta": 0.3, "lambda": 1.0, "gamma": 0.0,
             "nthread": 1, "seed": 0, "base_score": med}
        if name == "small":
            p.update({"objective": "reg:pseudohubererror", "min_child_weight": 0.0, "huber_slope": med})
        else:
            p.update({"objective": "reg:squarederror", "min_child_weight": 1.0})
        dm = xgb.DMatrix(d[:, :7].astype(np.float32), label=y)
        bst = xgb.train(p, dm, num_boost_round=a.rounds)
        bst.save_model(os.path.join(a.out_dir, name + ".json"))
        bst.dump_model(os.path.join(a.out_dir, name + ".dump.txt"))
        preds[name] = bst.predict(xgb.DMatrix(Xte))
        models[name] = bst
        params_rows.append([name, p["objective"], a.rounds, 6, 0.3, 1.0, 0.0, p["min_child_weight"], 256,
                            p.get("huber_slope", 0.0), med])
    with open(os.path.join(a.out_dir, "params.csv"), "w") as f:
        f.write("model,objective,rounds,max_depth,eta,lambda,gamma,min_child_weight,max_bin,huber_slope,base_score\n")
        for r in params_rows:
            f.write("%s,%s,%d,%d,%.9g,%.9g,%.9g,%.9g,%d,%.17g,%.17g\n" % tuple(r))
    write_csv(os.path.join(a.out_dir, "test_pred.csv"), ["large", "small", "single"],
              np.stack([preds["large"], preds["small"], preds["single"]], axis=1).astype(np.float64))
    # rows with missing features: XGBoost's default directions decide them
    mrng = np.random.default_rng(a.seed + 1)
    pick = mrng.choice(len(test), MISSING_ROWS, replace=False)
    Xm = Xte[pick].copy()
    for i in range(MISSING_ROWS):
        nmiss = 1 + int(mrng.integers(3))
        Xm[i, mrng.choice(7, nmiss, replace=False)] = np.nan
    pm = [models[m].predict(xgb.DMatrix(Xm, missing=np.nan)) for m in ["large", "small", "single"]]
    write_csv(os.path.join(a.out_dir, "missing.csv"), COLS + ["large", "small", "single"],
              np.concatenate([Xm.astype(np.float64), np.stack(pm, axis=1).astype(np.float64)], axis=1))

    def mape(p, yv):
        return float(np.mean(np.abs(p - yv) / yv))
    yte = test[:, 7]
    sm, lg = test[:, 4] <= mtu_l2, test[:, 4] > mtu_l2
    print("xgboost %s: rows train %d test %d" % (xgb.__version__, len(train), len(test)))
    print("test MAPE large model on s>MTU %.4f, small model on s<=MTU %.4f" %
          (mape(preds["large"][lg], yte[lg]), mape(preds["small"][sm], yte[sm])))
    print("single model: s>MTU %.4f, s<=MTU %.4f (negative predictions on s<=MTU: %d)" %
          (mape(preds["single"][lg], yte[lg]), mape(preds["single"][sm], yte[sm]), int(np.sum(preds["single"][sm] < 0))))


if __name__ == "__main__":
    main()
