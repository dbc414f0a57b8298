#!/usr/bin/python3
"""xgb_train_bench.py — XGBoost 1.7's single-threaded hist training time on Srift's bandwidth-probe workload, the
peer of `build/bench_cloud gbdt DIR` (mlsys_cloud.h's GBDT trainer, bench/RESULTS.md §13.4).

    /usr/bin/python3 bench/peers/xgb_train_bench.py DIR [--regen] [--rounds 300] [--repeat 3]
    taskset -c 1 /usr/bin/python3 bench/peers/xgb_train_bench.py /tmp/gbdt-bench   # then: build/bench_cloud gbdt DIR

Run with Debian's /usr/bin/python3 (python3-xgboost 1.7.4, python3-numpy), not a pyenv/venv python.

Data: DIR/train.csv (40,000 rows) and DIR/test.csv (4,000 rows), written on the first run (or with --regen) and read
back on later ones, so both sides train on the same bytes. The rows come from tools/xgb_fixtures.py's generator
(α-β ring model with lognormal noise, the same 7 features and label, rounded to float32) with 51 probes per grid
point instead of 3, kept where s > MTU (the large, squared-error model of the two: 44,064 rows); a seeded
permutation then picks 4,000 test rows and 40,000 training rows.

Training: xgb.train with tree_method=hist, max_depth 6, max_bin 256, eta 0.3, lambda 1, gamma 0, min_child_weight 1,
reg:squarederror, base_score = median(y) (as the fixtures, and our default base_score = NaN), nthread 1, 300 rounds.
Only xgb.train is timed (the DMatrix is built before the timer), best of --repeat runs. The first xgb.train also
builds the DMatrix's quantile bins (about 20 ms here) and later ones reuse them, so the best run leaves XGBoost's
binning out, while mlsys_cloud_gbdt_train bins in every run. Then Booster.inplace_predict on the test rows (a numpy array: Booster.predict on a DMatrix it has seen returns
cached predictions), 25 times per run, best of 3. Prints one JSON line:
    {"impl": "xgboost", "version": ..., "rows": ..., "test_rows": ..., "trees": ..., "train_s": best,
     "train_s_all": [...], "predict_s": best, "test_mape": ...}
"""
import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import xgb_fixtures as fx  # noqa: E402  (the generator and CSV writer of the committed fixtures)

NTRAIN, NTEST, REPEATS, SEED = 40000, 4000, 51, 20201129


def make_data(out_dir):
    fx.REPEATS = REPEATS
    rng = np.random.default_rng(SEED)
    rows = fx.gen_rows(rng).astype(np.float32).astype(np.float64)
    rows = rows[rows[:, 4] > np.log2(fx.MTU)]
    perm = rng.permutation(len(rows))
    test, train = rows[perm[:NTEST]], rows[perm[NTEST:NTEST + NTRAIN]]
    os.makedirs(out_dir, exist_ok=True)
    fx.write_csv(os.path.join(out_dir, "train.csv"), fx.COLS + ["busbw_gbps"], train)
    fx.write_csv(os.path.join(out_dir, "test.csv"), fx.COLS + ["busbw_gbps"], test)


def read_csv(path):
    return np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.float64)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir", help="where train.csv and test.csv are (written when missing)")
    ap.add_argument("--regen", action="store_true", help="write the CSVs even when they exist")
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    import xgboost as xgb
    tr_path, te_path = os.path.join(a.dir, "train.csv"), os.path.join(a.dir, "test.csv")
    if a.regen or not (os.path.exists(tr_path) and os.path.exists(te_path)):
        make_data(a.dir)
    train, test = read_csv(tr_path), read_csv(te_path)
    X, y = train[:, :-1].astype(np.float32), train[:, -1].astype(np.float32)
    Xte, yte = test[:, :-1].astype(np.float32), test[:, -1]
    p = {"tree_method": "hist", "max_depth": 6, "max_bin": 256, "eta": 0.3, "lambda": 1.0, "gamma": 0.0,
         "min_child_weight": 1.0, "nthread": 1, "seed": 0, "objective": "reg:squarederror",
         "base_score": float(np.median(y))}
    dm = xgb.DMatrix(X, label=y, nthread=1)
    dte = xgb.DMatrix(Xte, nthread=1)
    times, bst = [], None
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        bst = xgb.train(p, dm, num_boost_round=a.rounds)
        times.append(time.perf_counter() - t0)
    pred = bst.predict(dte).astype(np.float64)
    ptimes = []
    for _ in range(3):  # prediction of the test rows, 25 times per run, as bench_cloud gbdt does
        t0 = time.perf_counter()
        for _ in range(25):  # inplace_predict: Booster.predict would serve a DMatrix's cached predictions
            bst.inplace_predict(Xte)
        ptimes.append((time.perf_counter() - t0) / 25)
    ok = yte != 0
    mape = float(np.mean(np.abs(pred[ok] - yte[ok]) / np.abs(yte[ok])))
    print(json.dumps({"impl": "xgboost", "version": xgb.__version__, "rows": len(y), "test_rows": len(yte),
                      "trees": a.rounds, "train_s": round(min(times), 4),
                      "train_s_all": [round(t, 4) for t in times], "predict_s": round(min(ptimes), 6),
                      "test_mape": round(mape, 6)}))


if __name__ == "__main__":
    main()
