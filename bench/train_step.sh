#!/usr/bin/env bash
# berth's training step vs the HF-equivalent PyTorch model (bench/train_step.py), interleaved in one run:
# ROUNDS rounds of (berth, python) per preset, both with OMP_WAIT_POLICY=PASSIVE and the same threads; prints
# each round's samples/s and the median over rounds of the per-round ratio berth/python.
# UNFUSED=1 adds a third run per round, berth with BERTH_FUSED_KERNELS=0, and its ratio (the kernels' gain).
# Usage: [ROUNDS=3] [STEPS=10] [THREADS=2] [PRESETS="bert-mini bert-base"] [BATCH=8] [SEQ=128] [UNFUSED=1]
#        bench/train_step.sh [berth]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
berth=${1:-$here/../build/bin/berth}
rounds=${ROUNDS:-3}
steps=${STEPS:-10}
threads=${THREADS:-$(nproc)}
presets=${PRESETS:-bert-mini}
batch=${BATCH:-8}
seq=${SEQ:-128}
export OMP_WAIT_POLICY=PASSIVE
# shellcheck source=bench/json_fields.sh
source "$here/json_fields.sh"
for preset in $presets; do
  args=(--model-preset "$preset" --batch-size "$batch" --seq-len "$seq" --steps "$steps" --threads "$threads")
  ratios=""
  min_ratios=""
  unfused_ratios=""
  unfused_min_ratios=""
  for ((r = 0; r < rounds; r++)); do
    b=$("$berth" benchmark "${args[@]}")
    p=$(/usr/bin/python3 "$here/train_step.py" "${args[@]}")
    echo "round $r berth:  $b"
    echo "round $r python: $p"
    ratios+="$(awk -v x="$(field samples_per_second "$b")" -v y="$(field samples_per_second "$p")" 'BEGIN{print x/y}') "
    min_ratios+="$(awk -v x="$(field min_step_ms "$b")" -v y="$(field min_step_ms "$p")" 'BEGIN{print y/x}') "
    if [ "${UNFUSED:-0}" = 1 ]; then
      u=$(BERTH_FUSED_KERNELS=0 "$berth" benchmark "${args[@]}")
      echo "round $r berth, BERTH_FUSED_KERNELS=0: $u"
      unfused_ratios+="$(awk -v x="$(field samples_per_second "$u")" -v y="$(field samples_per_second "$p")" 'BEGIN{print x/y}') "
      unfused_min_ratios+="$(awk -v x="$(field min_step_ms "$u")" -v y="$(field min_step_ms "$p")" 'BEGIN{print y/x}') "
    fi
  done
  printf '%s: berth/python samples/s ratio, median of %d rounds: %.3f   (per round: %s)\n' \
    "$preset" "$rounds" "$(median "$ratios")" "${ratios% }"
  printf '%s: same, from each run'"'"'s fastest step: %.3f   (per round: %s)\n' \
    "$preset" "$(median "$min_ratios")" "${min_ratios% }"
  if [ -n "$unfused_ratios" ]; then
    printf '%s: berth without fused kernels/python, median of %d rounds: %.3f   (per round: %s)\n' \
      "$preset" "$rounds" "$(median "$unfused_ratios")" "${unfused_ratios% }"
    printf '%s: same, from each run'"'"'s fastest step: %.3f   (per round: %s)\n' \
      "$preset" "$(median "$unfused_min_ratios")" "${unfused_min_ratios% }"
  fi
done
