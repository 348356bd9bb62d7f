#!/usr/bin/env bash
# The main job's candidate recipes, each a full run on the SpamAssassin split with its test accuracy and wall
# time (the table in README's "The main job"): the demo's recipe (bert-tiny from scratch), the same after one
# epoch of masked-LM pretraining on the training split, and all-MiniLM-L6-v2 (pretrained) fine-tuned.
# Usage: bench/demo_recipes.sh [OUT_DIR] [RECIPE...]   (recipes: scratch mlm minilm; default all). Needs a build.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-runs/demo-recipes}"
shift || true
RECIPES=("${@:-scratch mlm minilm}")
BERTH=./build/bin/berth
export OMP_WAIT_POLICY=PASSIVE
mkdir -p "$OUT"
"$BERTH" data spamassassin --output "$OUT/data" > /dev/null
[ -f "$OUT/tokenizer/vocab.txt" ] ||
  "$BERTH" tokenizer train --input "$OUT/data/train.jsonl" --vocab-size 16000 --lowercase --output "$OUT/tokenizer" > /dev/null
# The demo's fine-tuning arguments (scripts/demo).
FINETUNE=(--data spamassassin --overwrite-output-dir --max-length 256 --truncation-keep-head 128
  --per-device-train-batch-size 16 --per-device-eval-batch-size 64 --num-train-epochs 3 --learning-rate 1e-3
  --warmup-ratio 0.1 --weight-decay 0.01 --eval-strategy no --save-strategy no --logging-steps 100)

accuracy() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['test_accuracy'])" "$1/test_results.json"; }

for recipe in ${RECIPES[*]}; do
  start=$(date +%s)
  case $recipe in
    scratch)
      "$BERTH" train --model-preset bert-tiny --tokenizer "$OUT/tokenizer" --output-dir "$OUT/scratch" "${FINETUNE[@]}" \
        > "$OUT/scratch.log" 2>&1 ;;
    mlm)
      "$BERTH" train --model-preset bert-tiny --tokenizer "$OUT/tokenizer" --task masked-lm --data spamassassin \
        --output-dir "$OUT/mlm-pretrain" --overwrite-output-dir --max-length 256 --truncation-keep-head 128 \
        --per-device-train-batch-size 16 --num-train-epochs 1 --learning-rate 1e-3 --warmup-ratio 0.1 \
        --weight-decay 0.01 --eval-strategy no --save-strategy no --logging-steps 100 > "$OUT/mlm-pretrain.log" 2>&1
      "$BERTH" train --model "$OUT/mlm-pretrain" --task sequence-classification --output-dir "$OUT/mlm" \
        "${FINETUNE[@]}" > "$OUT/mlm.log" 2>&1 ;;
    minilm)
      "$BERTH" train --model .cache/models/all-MiniLM-L6-v2 --output-dir "$OUT/minilm" --data spamassassin \
        --overwrite-output-dir --max-length 128 --truncation-keep-head 64 --per-device-train-batch-size 16 \
        --per-device-eval-batch-size 64 --num-train-epochs 1 --learning-rate 1e-4 --warmup-ratio 0.1 \
        --weight-decay 0.01 --eval-strategy no --save-strategy no --logging-steps 100 > "$OUT/minilm.log" 2>&1 ;;
    *) echo "demo_recipes: unknown recipe '$recipe' (scratch, mlm, minilm)" >&2; exit 2 ;;
  esac
  echo "$recipe: test_accuracy $(accuracy "$OUT/$recipe") in $(( $(date +%s) - start )) s"
done
