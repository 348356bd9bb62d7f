#!/usr/bin/env bash
# berth's training step vs transformers' BertForSequenceClassification (bench/train_step.py), interleaved in
# one run: ROUNDS rounds of (berth, python) per preset, the order swapped every other round, both with
# OMP_WAIT_POLICY=PASSIVE and the same threads; prints each round's JSON and the median over rounds of the
# per-round ratio berth/python samples/s, with its spread (smallest-largest round).
# UNFUSED=1 adds a third run per round, berth with BERTH_FUSED_KERNELS=0, and its ratio (the kernels' gain).
# PY_ARGS goes to train_step.py only (e.g. "--attn eager", "--adamw foreach", "--bf16"), BERTH_ARGS to berth
# only.
# Usage: [ROUNDS=3] [STEPS=10] [THREADS=2] [PRESETS="bert-mini bert-base"] [BATCH=8] [SEQ=128] [UNFUSED=1]
#        [PY_ARGS=...] [BERTH_ARGS=...] bench/train_step.sh [berth]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
berth=${1:-$here/../build/bin/berth}
rounds=${ROUNDS:-3}
steps=${STEPS:-10}
threads=${THREADS:-$(nproc)}
presets=${PRESETS:-bert-mini}
batch=${BATCH:-8}
seq=${SEQ:-128}
read -r -a py_args <<<"${PY_ARGS:-}"
read -r -a berth_args <<<"${BERTH_ARGS:-}"
export OMP_WAIT_POLICY=PASSIVE
# shellcheck source=bench/json_fields.sh
source "$here/json_fields.sh"
echo "torch/transformers: $("$here/../scripts/python" -c 'import torch, transformers; print(torch.__version__, transformers.__version__)'); threads $threads; load average $(cut -d' ' -f1-3 /proc/loadavg)"
for preset in $presets; do
  args=(--model-preset "$preset" --batch-size "$batch" --seq-len "$seq" --steps "$steps" --threads "$threads")
  run_berth() { "$berth" benchmark "${args[@]}" ${berth_args[@]+"${berth_args[@]}"}; }
  run_python() { "$here/../scripts/python" "$here/train_step.py" "${args[@]}" ${py_args[@]+"${py_args[@]}"}; }
  ratios=""
  min_ratios=""
  unfused_ratios=""
  unfused_min_ratios=""
  for ((r = 0; r < rounds; r++)); do
    interleaved_round "$r"
    ratios+="$(ratio "$(field samples_per_second "$b")" "$(field samples_per_second "$p")") "
    min_ratios+="$(ratio "$(field min_step_ms "$p")" "$(field min_step_ms "$b")") "
    if [ "${UNFUSED:-0}" = 1 ]; then
      u=$(BERTH_FUSED_KERNELS=0 run_berth)
      echo "round $r berth, BERTH_FUSED_KERNELS=0: $u"
      unfused_ratios+="$(ratio "$(field samples_per_second "$u")" "$(field samples_per_second "$p")") "
      unfused_min_ratios+="$(ratio "$(field min_step_ms "$p")" "$(field min_step_ms "$u")") "
    fi
  done
  printf '%s: berth/python samples/s ratio, median of %d rounds: %.3f   spread %s   (per round: %s)\n' \
    "$preset" "$rounds" "$(median "$ratios")" "$(spread "$ratios")" "${ratios% }"
  printf '%s: same, from each run'"'"'s fastest step: %.3f   spread %s   (per round: %s)\n' \
    "$preset" "$(median "$min_ratios")" "$(spread "$min_ratios")" "${min_ratios% }"
  if [ -n "$unfused_ratios" ]; then
    printf '%s: berth without fused kernels/python, median of %d rounds: %.3f   spread %s   (per round: %s)\n' \
      "$preset" "$rounds" "$(median "$unfused_ratios")" "$(spread "$unfused_ratios")" "${unfused_ratios% }"
    printf '%s: same, from each run'"'"'s fastest step: %.3f   (per round: %s)\n' \
      "$preset" "$(median "$unfused_min_ratios")" "${unfused_min_ratios% }"
  fi
done
