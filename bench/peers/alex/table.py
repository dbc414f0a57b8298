#!/usr/bin/env python3
"""bench/peers/alex/table.py — the RESULTS tables from grid.sh's JSON lines (one `mlsys index bench --peer alex
--json` per cell): MAPLE against the faster of real ALEX's two settings, per key set and insert fraction, with the
issue's targets, our in-repo ALEX against real ALEX at the same expected insert fraction, and memory.
   python3 bench/peers/alex/table.py build/alex-grid.jsonl"""
import json
import sys

TARGET = {1.0: 1.5, 0.85: 1.1, 0.15: 0.95, 0.0: 0.95}
NAME = {1.0: "write-only", 0.85: "write-heavy", 0.15: "read-heavy", 0.0: "read-only"}


def main(path):
    rows = [json.loads(l) for l in open(path) if l.strip()]
    print("| key set | workload | ops | MAPLE's pick (%s) | MAPLE Mops/s | real ALEX eif 1 | real ALEX eif F | "
          "MAPLE / best ALEX | target | our ALEX / real ALEX (eif F) | B+tree | memory MAPLE / ALEX |"
          % ("predictor: " + ", ".join(sorted({r["predictor"] for r in rows}))))
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    met = tot = within = 0
    for r in rows:
        p = r["peer"]
        f = r["insert_frac"]
        sp = r["speedup_vs_peer"]
        ok = sp >= TARGET[f]
        met += ok
        tot += 1
        within += abs(r["mine_vs_peer"] - 1) <= 0.15
        print("| %s | %s | %s%s | %s | %.3f | %.3f | %.3f | **%.2fx** | %.2fx %s | %.2f | %.3f | %.2f |" % (
            r["keys"], NAME[f], r["ops"], " (keys ran out)" if r["exhausted"] else "", r["config"], r["mops"],
            p["alex"], p["alex_eif"], sp, TARGET[f], "met" if ok else "**not met**", r["mine_vs_peer"],
            r["baselines"]["btree"], r["memory_vs_peer"]))
    print()
    print("%d of %d cells meet the throughput target; our ALEX is within 15 %% of real ALEX on %d of %d; "
          "real ALEX commit %s, %s rounds per cell." % (met, tot, within, tot, rows[0]["peer"]["alex_commit"][:7],
                                                       rows[0]["peer"]["reps"]))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "build/alex-grid.jsonl")
