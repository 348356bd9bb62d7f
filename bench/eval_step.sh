#!/usr/bin/env bash
# berth's evaluation forward (`berth benchmark --inference`: eval mode, no grad, no labels, as `berth eval`
# runs the model) vs transformers' BertForSequenceClassification forward under torch.inference_mode
# (bench/eval_step.py), interleaved in one run: ROUNDS rounds of (berth, python) per preset, the order swapped
# every other round, both with OMP_WAIT_POLICY=PASSIVE and the same threads; prints each round's JSON and the
# median over rounds of the per-round ratio berth/python samples/s, with its spread (smallest-largest round).
# PY_ARGS goes to eval_step.py only (e.g. "--attn eager", "--grad-mode no_grad", "--bf16"), BERTH_ARGS to
# berth only.
# Usage: [ROUNDS=3] [STEPS=10] [THREADS=2] [PRESETS="bert-tiny bert-mini"] [BATCH=32] [SEQ=256]
#        [PY_ARGS=...] [BERTH_ARGS=...] bench/eval_step.sh [berth]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
berth=${1:-$here/../build/bin/berth}
rounds=${ROUNDS:-3}
steps=${STEPS:-10}
threads=${THREADS:-$(nproc)}
presets=${PRESETS:-bert-tiny bert-mini}
batch=${BATCH:-32}
seq=${SEQ:-256}
read -r -a py_args <<<"${PY_ARGS:-}"
read -r -a berth_args <<<"${BERTH_ARGS:-}"
export OMP_WAIT_POLICY=PASSIVE
# shellcheck source=bench/json_fields.sh
source "$here/json_fields.sh"
echo "torch/transformers: $("$here/../scripts/python" -c 'import torch, transformers; print(torch.__version__, transformers.__version__)'); threads $threads; load average $(cut -d' ' -f1-3 /proc/loadavg)"
for preset in $presets; do
  args=(--model-preset "$preset" --batch-size "$batch" --seq-len "$seq" --steps "$steps" --threads "$threads")
  run_berth() { "$berth" benchmark --inference "${args[@]}" ${berth_args[@]+"${berth_args[@]}"}; }
  run_python() { "$here/../scripts/python" "$here/eval_step.py" "${args[@]}" ${py_args[@]+"${py_args[@]}"}; }
  ratios=""
  min_ratios=""
  for ((r = 0; r < rounds; r++)); do
    interleaved_round "$r"
    ratios+="$(ratio "$(field samples_per_second "$b")" "$(field samples_per_second "$p")") "
    min_ratios+="$(ratio "$(field min_step_ms "$p")" "$(field min_step_ms "$b")") "
  done
  printf '%s: berth/python inference samples/s ratio, median of %d rounds: %.3f   spread %s   (per round: %s)\n' \
    "$preset" "$rounds" "$(median "$ratios")" "$(spread "$ratios")" "${ratios% }"
  printf '%s: same, from each run'"'"'s fastest forward: %.3f   spread %s   (per round: %s)\n' \
    "$preset" "$(median "$min_ratios")" "$(spread "$min_ratios")" "${min_ratios% }"
done
