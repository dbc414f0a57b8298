#!/usr/bin/env bash
# scripts/contracode-vocab.sh [CORPUS [OUTDIR]] — ContraCode's 8k unigram vocabulary (tools/contracode_js8k.model),
# trained by mlsys_contracode_sp_train on the training part of the offline corpus, and compared with Debian's
# spm_train on the same text (docs/contracode.md "Tokenizer", bench/RESULTS.md §16; spec §2.2, §3.5, §7.4 test 14).
# CORPUS: the output folder of scripts/contracode-corpus.sh (default build/contracode-corpus); OUTDIR default
# build/contracode-vocab. Needs build/mlsys (MLSYS=path overrides); spm_train/spm_encode (Debian sentencepiece) only
# for the comparison, which is skipped without them.
#
# 1. OUTDIR/train.txt and heldout.txt: the units of each split through the repo's normalize_program, one a line.
# 2. OUTDIR/contracode_js8k.model = `mlsys contracode vocab CORPUS/functions.jsonl --out …`: 8,000 pieces, identity
#    normalization, unknown piece [UNK], user-defined symbols [CLS],[SEP],[MASK],[EOL],[URL] (the ContraCode repo's
#    options; its --pad_piece=[PAD] had no effect without --pad_id, so there is no [PAD]). Deterministic: its sha256
#    is recorded below (exit 3 if it differs, e.g. after a corpus or trainer change).
# 3. OUTDIR/spm8k.model = spm_train on the same train.txt with the matching options (unigram, 8,000, identity,
#    character_coverage 1 — our trainer keeps every character —, [UNK], the same user symbols, hard_vocab_limit off,
#    sentences up to 1 MB since functions reach 8 KB before normalization, 2 threads). It took 180 s of CPU but 18
#    minutes of wall time on a loaded 2-core machine: SKIP_SPM_TRAIN=1 reuses an OUTDIR/spm8k.model already there.
# 4. Printed: both models' sizes, mean/median/p90 tokens per held-out function (Viterbi, no BOS/EOS), the pieces
#    the two vocabularies share, and the parity of `mlsys contracode tokenize` with `spm_encode --output_format=id` on
#    every held-out function for both models (must be identical: spec test 14).
set -euo pipefail
export LC_ALL=C.UTF-8 TZ=UTC

CORPUS=${1:-build/contracode-corpus}
OUT=${2:-build/contracode-vocab}
MLSYS=${MLSYS:-build/mlsys}
# recorded 2026-11-29 on the corpus of scripts/contracode-corpus.sh
EXPECT_MODEL_SHA="b4592746cea54b7e5073c2c747b51347c6bf9c1fe5496aabb23d1cf339ab030b"

[ -x "$MLSYS" ] || { echo "contracode-vocab: $MLSYS not found: run 'make build/mlsys' first (or set MLSYS)" >&2; exit 1; }
[ -f "$CORPUS/functions.jsonl" ] || { echo "contracode-vocab: $CORPUS/functions.jsonl not found: run scripts/contracode-corpus.sh first" >&2; exit 1; }
mkdir -p "$OUT"

"$MLSYS" contracode vocab "$CORPUS/functions.jsonl" --split heldout --text-out "$OUT/heldout.txt"
start=$(date +%s)
"$MLSYS" contracode vocab "$CORPUS/functions.jsonl" --split train --text-out "$OUT/train.txt" \
  --out "$OUT/contracode_js8k.model" --vocab-size 8000 --unk-piece '[UNK]' --user-symbols '[CLS],[SEP],[MASK],[EOL],[URL]'
echo "contracode-vocab: mlsys_contracode_sp_train: $(( $(date +%s) - start )) s wall"

stats() {   # ids file → "mean median p90" tokens per line
  awk '{print NF}' "$1" | sort -n | awk '{a[NR]=$1; s+=$1} END {printf "mean %.1f, median %d, p90 %d", s/NR, a[int((NR+1)/2)], a[int(NR*0.9+0.5)]}'
}
loss() {   # model, ids file → held-out Viterbi loss −Σ log p over normal pieces ([UNK] at min score − 10, as
           # SentencePiece scores it; the user symbols are one piece under both models and left out)
  spm_export_vocab --model="$1" | awk -F'\t' -v ids="$2" '
    NR == FNR { sc[NR - 1] = $2; if (NR > 8 && (min == "" || $2 < min)) min = $2; next }
    { for (i = 1; i <= NF; i++) { if ($i == 0) L -= min - 10; else if ($i > 7) L -= sc[$i] } }
    END { printf "%.0f", L }' - FS=' ' "$2"
}
"$MLSYS" contracode tokenize --model "$OUT/contracode_js8k.model" "$OUT/heldout.txt" >"$OUT/heldout.ours.mlsys.ids"
echo "contracode-vocab: ours: $(stat -c %s "$OUT/contracode_js8k.model") bytes; held-out tokens/function: $(stats "$OUT/heldout.ours.mlsys.ids")"

if command -v spm_train >/dev/null && command -v spm_encode >/dev/null; then
  start=$(date +%s)
  if [ "${SKIP_SPM_TRAIN:-0}" = 1 ] && [ -f "$OUT/spm8k.model" ]; then
    echo "contracode-vocab: SKIP_SPM_TRAIN=1: reusing $OUT/spm8k.model"
  else
    spm_train --input="$OUT/train.txt" --model_prefix="$OUT/spm8k" --vocab_size=8000 --model_type=unigram \
      --normalization_rule_name=identity --character_coverage=1.0 --unk_piece='[UNK]' \
      --user_defined_symbols='[CLS],[SEP],[MASK],[EOL],[URL]' --hard_vocab_limit=false --max_sentence_length=1000000 \
      --num_threads=2 --random_seed=1 >"$OUT/spm_train.log" 2>&1
    echo "contracode-vocab: spm_train: $(( $(date +%s) - start )) s wall"
  fi
  spm_encode --model="$OUT/contracode_js8k.model" --output_format=id <"$OUT/heldout.txt" >"$OUT/heldout.ours.spm.ids"
  spm_encode --model="$OUT/spm8k.model" --output_format=id <"$OUT/heldout.txt" >"$OUT/heldout.spm8k.spm.ids"
  "$MLSYS" contracode tokenize --model "$OUT/spm8k.model" "$OUT/heldout.txt" >"$OUT/heldout.spm8k.mlsys.ids"
  echo "contracode-vocab: spm_train's: $(stat -c %s "$OUT/spm8k.model") bytes; held-out tokens/function: $(stats "$OUT/heldout.spm8k.spm.ids")"
  echo "contracode-vocab: held-out Viterbi loss: ours $(loss "$OUT/contracode_js8k.model" "$OUT/heldout.ours.spm.ids"), spm_train's $(loss "$OUT/spm8k.model" "$OUT/heldout.spm8k.spm.ids")"
  for m in ours spm8k; do
    n=$(wc -l <"$OUT/heldout.txt")
    same=$(paste -d'\t' "$OUT/heldout.$m.mlsys.ids" "$OUT/heldout.$m.spm.ids" | awk -F'\t' '$1==$2' | wc -l)
    echo "contracode-vocab: parity on $m's model: mlsys contracode tokenize = spm_encode on $same of $n held-out functions"
    cmp -s "$OUT/heldout.$m.mlsys.ids" "$OUT/heldout.$m.spm.ids" || { echo "contracode-vocab: PARITY BROKEN on $m's model" >&2; exit 4; }
  done
  # how many pieces the two vocabularies share
  shared=$(comm -12 <(spm_export_vocab --model="$OUT/contracode_js8k.model" | cut -f1 | sort) \
                    <(spm_export_vocab --model="$OUT/spm8k.model" | cut -f1 | sort) | wc -l)
  echo "contracode-vocab: pieces in both vocabularies: $shared"
else
  echo "contracode-vocab: spm_train/spm_encode not installed (Debian: sentencepiece): comparison skipped" >&2
fi

sha=$(sha256sum "$OUT/contracode_js8k.model" | cut -d' ' -f1)
echo "$sha  $OUT/contracode_js8k.model"
if [ "$sha" = "$EXPECT_MODEL_SHA" ]; then
  echo "contracode-vocab: model identical to the recorded one (tools/contracode_js8k.model)"
else
  echo "contracode-vocab: THE MODEL DIFFERS from the recorded one ($EXPECT_MODEL_SHA): another corpus or trainer" >&2
  exit 3
fi
