#!/usr/bin/env bash
# bf16 on the CPU: transformers with torch.autocast(bfloat16) vs fp32 (bench/train_step.py and
# bench/eval_step.py with and without --bf16), and berth's fp32 `berth benchmark` (plus `--bf16` when its
# --help lists the flag), interleaved in one run: ROUNDS rounds of (berth fp32, [berth bf16], python fp32,
# python bf16) per preset, for MODE train (a full training step) or inference (a forward, as eval_step.sh).
# Prints the median over rounds, with the spread, of python bf16 / python fp32 and berth / python bf16.
# Usage: [MODE=train|inference] [ROUNDS=3] [STEPS=10] [THREADS=2] [PRESETS=bert-mini] [BATCH=8] [SEQ=128]
#        bench/bf16_step.sh [berth]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
berth=${1:-$here/../build/bin/berth}
mode=${MODE:-train}
rounds=${ROUNDS:-3}
steps=${STEPS:-10}
threads=${THREADS:-$(nproc)}
presets=${PRESETS:-bert-mini}
batch=${BATCH:-8}
seq=${SEQ:-128}
export OMP_WAIT_POLICY=PASSIVE
# shellcheck source=bench/json_fields.sh
source "$here/json_fields.sh"
if [ "$mode" = inference ]; then script=eval_step.py; berth_mode=(--inference); else script=train_step.py; berth_mode=(); fi
berth_bf16=0
if "$berth" benchmark --help | grep -q -- '--bf16'; then berth_bf16=1; else echo "berth benchmark has no --bf16: berth runs fp32 only"; fi
echo "mode $mode; torch/transformers: $("$here/../scripts/python" -c 'import torch, transformers; print(torch.__version__, transformers.__version__)'); threads $threads; load average $(cut -d' ' -f1-3 /proc/loadavg)"
for preset in $presets; do
  args=(--model-preset "$preset" --batch-size "$batch" --seq-len "$seq" --steps "$steps" --threads "$threads")
  py_gain="" berth_vs_bf16="" berth_bf16_gain=""
  for ((r = 0; r < rounds; r++)); do
    b=$("$berth" benchmark ${berth_mode[@]+"${berth_mode[@]}"} "${args[@]}")
    echo "round $r berth fp32:  $b"
    if [ "$berth_bf16" = 1 ]; then
      bb=$("$berth" benchmark ${berth_mode[@]+"${berth_mode[@]}"} "${args[@]}" --bf16)
      echo "round $r berth bf16:  $bb"
      berth_bf16_gain+="$(ratio "$(field samples_per_second "$bb")" "$(field samples_per_second "$b")") "
    fi
    p=$("$here/../scripts/python" "$here/$script" "${args[@]}")
    echo "round $r python fp32: $p"
    pb=$("$here/../scripts/python" "$here/$script" "${args[@]}" --bf16)
    echo "round $r python bf16: $pb"
    py_gain+="$(ratio "$(field samples_per_second "$pb")" "$(field samples_per_second "$p")") "
    berth_vs_bf16+="$(ratio "$(field samples_per_second "$b")" "$(field samples_per_second "$pb")") "
  done
  printf '%s %s: python bf16/python fp32 samples/s, median of %d rounds: %.3f   spread %s   (per round: %s)\n' \
    "$preset" "$mode" "$rounds" "$(median "$py_gain")" "$(spread "$py_gain")" "${py_gain% }"
  printf '%s %s: berth fp32/python bf16: %.3f   spread %s   (per round: %s)\n' \
    "$preset" "$mode" "$(median "$berth_vs_bf16")" "$(spread "$berth_vs_bf16")" "${berth_vs_bf16% }"
  if [ -n "$berth_bf16_gain" ]; then
    printf '%s %s: berth bf16/berth fp32: %.3f   spread %s   (per round: %s)\n' \
      "$preset" "$mode" "$(median "$berth_bf16_gain")" "$(spread "$berth_bf16_gain")" "${berth_bf16_gain% }"
  fi
done
