#!/usr/bin/env python3
"""Peer check: run the DTR authors' simulator (simrd, uwsampl/dtr-prototype) on
the DTR logs and print a markdown table. simrd is imported from a path given on
the command line; no simrd code lives here.

usage: peer_simrd.py SIMRD_DIR LOG_DIR [ratio ...] [--only NAME ...]
  SIMRD_DIR: directory containing the `simrd` package (dtr-prototype/simrd)
  LOG_DIR:   directory with the *.log files (unzip of tests/data/dtr/logs.zip)
Budget = int(ratio * max_memory of an infinite-budget RuntimeV1 run), exactly as
simrd_experiments/eval/pareto/run.py does. Runtime = RuntimeV2EagerOptimized,
heuristic = DTREqClass, no remat (thrash) limit.
"""
import sys, os, glob, math, time, json, signal

class _Timeout(Exception):
    pass

def _alarm(signum, frame):
    raise _Timeout()

LIMIT_S = int(os.environ.get('SIMRD_LIMIT_S', '180'))  # skip a run over 3 minutes

def main():
    args = sys.argv[1:]
    only = []
    if '--only' in args:
        i = args.index('--only'); only = args[i+1:]; args = args[:i]
    simrd_dir, log_dir = args[0], args[1]
    ratios = [float(r) for r in args[2:]] or [0.5, 0.3]
    sys.path.insert(0, simrd_dir)
    from simrd.runtime import RuntimeV1, RuntimeV2EagerOptimized
    from simrd.heuristic import Heuristic, DTREqClass
    from simrd.parse import parse_file

    class Counting(RuntimeV2EagerOptimized):
        n_remat = 0
        def _T_compute(self, t, rematerialize, direct):
            if rematerialize and direct:
                self.n_remat += 1
            super()._T_compute(t, rematerialize, direct)

    short_names = ['unet-6', 'resnet32-56', 'inceptionv4-64', 'transformer-10',
                   'tv_densenet121-84', 'treelstm-6', 'lstm-128', 'unroll_gan-512']
    print('| log | ratio | peak (simrd max_memory, B) | const B | budget B | slowdown (clock/base) | remats | OOM | sim s |')
    print('|---|---|---|---|---|---|---|---|---|')
    for name in short_names:
        if only and name not in only: continue
        logs = glob.glob(os.path.join(log_dir, name + '-*.log'))
        if not logs: continue
        with open(logs[0]) as f:
            graph = parse_file(f, start=True)
        cb = graph.get_closure()
        rt = RuntimeV1(math.inf, Heuristic(), stats=False, trace=False)
        cb(rt)
        peak = rt.telemetry.summary['max_memory']
        base = rt.telemetry.summary['model_compute']
        const = rt.telemetry.summary['model_const_memory']
        for r in ratios:
            budget = int(peak * r)
            rt = Counting(budget, DTREqClass(), stats=False, trace=False)
            t = time.time(); oom = False
            signal.signal(signal.SIGALRM, _alarm); signal.alarm(LIMIT_S)
            try:
                cb(rt)
            except MemoryError:
                oom = True
            except _Timeout:
                print('| {} | {} | {} | {} | {} | skipped (> {} s) | | | |'.format(
                    name, r, peak, const, budget, LIMIT_S), flush=True)
                continue
            finally:
                signal.alarm(0)
            dt = time.time() - t
            print('| {} | {} | {} | {} | {} | {:.4f} | {} | {} | {:.1f} |'.format(
                name, r, peak, const, budget, rt.clock / base, rt.n_remat,
                'OOM' if oom else 'no', dt), flush=True)

if __name__ == '__main__':
    main()
