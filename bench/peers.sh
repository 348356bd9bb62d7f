#!/usr/bin/env bash
# berth against every peer an HF user would pick, side by side in one run (issue 30's table): for MODE train a
# full training step (berth fp32 and bf16; transformers fp32 SDPA, bf16 autocast, bf16 autocast +
# torch.compile), for MODE inference a forward (the same, plus ONNX Runtime fp32 with its BERT fusions, from
# bench/setup-peers). ROUNDS rounds per preset, each running every variant once in an order rotated every
# round; prints every JSON line, then each variant's median samples/s and, for berth fp32 and bf16, the median
# over rounds of the per-round ratio against each peer, with its spread (smallest-largest round).
# Usage: [MODE=train|inference] [ROUNDS=3] [STEPS=10] [WARMUP=2] [THREADS=nproc] [PRESETS=bert-mini]
#        [BATCH=8] [SEQ=128] [SKIP="compile ort"] bench/peers.sh [berth]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
berth=${1:-$here/../build/bin/berth}
mode=${MODE:-train}
rounds=${ROUNDS:-3}
steps=${STEPS:-10}
warmup=${WARMUP:-2}
threads=${THREADS:-$(nproc)}
presets=${PRESETS:-bert-mini}
batch=${BATCH:-8}
seq=${SEQ:-128}
skip=" ${SKIP:-} "
export OMP_WAIT_POLICY=PASSIVE
# shellcheck source=bench/json_fields.sh
source "$here/json_fields.sh"
py="$here/../scripts/python"
if [ "$mode" = inference ]; then script=eval_step.py; berth_mode=(--inference); else script=train_step.py; berth_mode=(); fi
variants=(berth-fp32 berth-bf16 hf-fp32 hf-bf16)
[[ "$skip" == *" compile "* ]] || variants+=(hf-bf16-compile)
if [ "$mode" = inference ] && [[ "$skip" != *" ort "* ]]; then
  peers_path=$("$here/setup-peers")
  variants+=(ort-fp32)
fi
echo "mode $mode; $(lscpu | sed -n 's/^Model name: *//p'); torch/transformers: $("$py" -c 'import torch, transformers; print(torch.__version__, transformers.__version__)'); threads $threads; load average $(cut -d' ' -f1-3 /proc/loadavg)"

run_variant() {  # VARIANT ARGS...
  local variant=$1
  shift
  case $variant in
    berth-fp32) "$berth" benchmark ${berth_mode[@]+"${berth_mode[@]}"} "$@" ;;
    berth-bf16) "$berth" benchmark ${berth_mode[@]+"${berth_mode[@]}"} "$@" --bf16 ;;
    hf-fp32) "$py" "$here/$script" "$@" ;;
    hf-bf16) "$py" "$here/$script" "$@" --bf16 ;;
    hf-bf16-compile) "$py" "$here/$script" "$@" --bf16 --compile --warmup $((warmup + 3)) ;;
    ort-fp32) PYTHONPATH="$peers_path" "$py" "$here/ort_step.py" "$@" ;;
  esac
}

for preset in $presets; do
  args=(--model-preset "$preset" --batch-size "$batch" --seq-len "$seq" --steps "$steps" --warmup "$warmup"
    --threads "$threads")
  declare -A speeds=()
  n=${#variants[@]}
  for ((r = 0; r < rounds; r++)); do
    for ((i = 0; i < n; i++)); do
      v=${variants[$(((i + r) % n))]}
      line=$(run_variant "$v" "${args[@]}")
      echo "round $r $v: $line"
      speeds[$v]+="$(field samples_per_second "$line") "
    done
  done
  for v in "${variants[@]}"; do
    printf '%s %s %s: samples/s median %.2f   spread %s\n' "$preset" "$mode" "$v" "$(median "${speeds[$v]}")" \
      "$(spread "${speeds[$v]}")"
  done
  for mine in berth-fp32 berth-bf16; do
    for v in "${variants[@]}"; do
      [[ "$v" == berth-* ]] && continue
      read -r -a a <<<"${speeds[$mine]}"
      read -r -a c <<<"${speeds[$v]}"
      ratios=""
      for ((r = 0; r < rounds; r++)); do ratios+="$(ratio "${a[$r]}" "${c[$r]}") "; done
      printf '%s %s: %s / %s samples/s, median of %d rounds: %.3f   spread %s\n' "$preset" "$mode" "$mine" "$v" \
        "$rounds" "$(median "$ratios")" "$(spread "$ratios")"
    done
  done
  unset speeds
done
