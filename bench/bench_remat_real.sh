#!/bin/bash
# bench/bench_remat_real.sh — Checkmate on the real exported graphs: overhead-vs-budget sweeps for every method
# (the thesis's Fig. 3.5), LP rounding against the best known schedule, and the maximum batch size in 16 GiB
# (Fig. 3.6). Prints markdown on stdout (bench/RESULTS.md quotes it); SVG plots go to bench/plots/.
#   usage: bench/bench_remat_real.sh [time-limit-seconds]        (make bench runs it; ~30 min on 2 cores)
set -u
cd "$(dirname "$0")/.."
M=${MLSYS_BIN:-build/mlsys}
T=${1:-60}
D=tests/data/graphs
mkdir -p bench/plots
echo "## Real graphs ($(date -u +%Y-%m-%d), $(uname -m) $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), time limit ${T} s per solve)"
echo
BASE=checkpoint-all,chen,chen-greedy,griewank,ap-sqrtn,ap-greedy,lin-greedy
for g in ${GRAPHS:-alexnet_b32 vgg16_b2 vgg19_b2 unet_b2 resnet50_b2 mobilenet_v2_b2 gpt2_b4}; do
  n=$(grep -c '"kind"' $D/$g.json)
  if [ "$n" -le 100 ]; then methods=$BASE,lp,milp; pts=5; else methods=$BASE,lp; pts=4; fi
  echo "### $g (n = $n; methods $methods)"
  echo
  echo '```'
  /usr/bin/time -f "wall %e s" $M remat sweep --graph $D/$g.json --points $pts --methods $methods --time-limit $T \
    --svg bench/plots/sweep_$g.svg 2>&1 | grep -v '^\[' 
  echo '```'
  echo
done
echo "### Maximum batch size in 16 GiB (cost at most one extra forward pass)"
echo
for g in ${BATCH_GRAPHS:-vgg16_b2 vgg19_b2 resnet50_b2 mobilenet_v2_b2 unet_b2}; do
  n=$(grep -c '"kind"' $D/$g.json)
  if [ "$n" -le 100 ]; then methods=$BASE,lp,milp; else methods=$BASE; fi
  echo '```'
  /usr/bin/time -f "wall %e s" $M remat max-batch --graph $D/$g.json --memory 16GiB --methods $methods --time-limit $T 2>&1 | grep -v '^\['
  echo '```'
done
