#!/usr/bin/env bash
# DDP on one machine: 2 ranks x 1 thread (berth launch) vs 1 rank x 2 threads, same per-rank batch, on
# synthetic tokens (berth benchmark), interleaved in one run; and how much of the gradient all-reduce hides
# behind backward: hidden = 1 - exposed / alone, where "alone" all-reduces the same buckets with no backward
# running and "exposed" is what rank 0 still waits for after backward once the other rank has finished its
# own backward (the skew between the ranks' backward ends, read from the shared monotonic clock, is reported
# apart: it is load imbalance, not communication). Prints each round's JSON and the medians.
# Usage: [ROUNDS=3] [STEPS=8] [PRESETS="bert-mini bert-base"] [BATCH=8] [SEQ=128] [BUCKET_MB=25]
#        bench/ddp_step.sh [berth]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
berth=${1:-$here/../build/bin/berth}
rounds=${ROUNDS:-3}
steps=${STEPS:-8}
presets=${PRESETS:-bert-mini}
batch=${BATCH:-8}
seq=${SEQ:-128}
export OMP_WAIT_POLICY=PASSIVE
# shellcheck source=bench/json_fields.sh
source "$here/json_fields.sh"
for preset in $presets; do
  args=(benchmark --model-preset "$preset" --batch-size "$batch" --seq-len "$seq" --steps "$steps")
  ratios="" hidden="" alone="" exposed="" skew=""
  for ((r = 0; r < rounds; r++)); do
    one=$("$berth" "${args[@]}" --threads 2)
    two=$("$berth" launch --nproc-per-node 2 -- "$berth" "${args[@]}" --threads 1 --bucket-cap-mb "${BUCKET_MB:-25}" |
      grep '"implementation"' |
      sed 's/^\[rank0\]: //')
    echo "round $r, 1 rank x 2 threads: $one"
    echo "round $r, 2 ranks x 1 thread: $two"
    ratios+="$(awk -v x="$(field samples_per_second "$two")" -v y="$(field samples_per_second "$one")" 'BEGIN{print x/y}') "
    hidden+="$(field hidden_fraction_beyond_skew "$two") "
    skew+="$(field skew_ms "$two") "
    alone+="$(field all_reduce_alone_ms "$two") "
    exposed+="$(field exposed_comm_beyond_skew_ms "$two") "
  done
  printf '%s: samples/s of 2 ranks / 1 rank, median of %d rounds: %.3f   (per round: %s)\n' \
    "$preset" "$rounds" "$(median "$ratios")" "${ratios% }"
  printf '%s: all-reduce alone %.1f ms, exposed after backward %.1f ms (+ skew %.1f ms), hidden fraction %.3f (per round: %s)\n' \
    "$preset" "$(median "$alone")" "$(median "$exposed")" "$(median "$skew")" "$(median "$hidden")" "${hidden% }"
done
