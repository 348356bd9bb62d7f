#!/usr/bin/env bash
# Threading matrix for a bert-mini-sized training step: OMP_WAIT_POLICY x intra-op threads x BLAS threads.
# Settings run interleaved for ROUNDS rounds so machine drift hits all alike; each setting's figure is the
# median of its per-round median step times, and speedup is against libtorch's defaults in the same run.
set -euo pipefail
bin=${1:-build/bin/threading_bench}
steps=${STEPS:-10}
rounds=${ROUNDS:-3}
settings=("unset 0 0" "unset 1 1" "unset 1 2" "unset 2 1" "unset 2 2" "PASSIVE 1 1" "PASSIVE 1 2" "PASSIVE 2 1" "PASSIVE 2 2")
declare -A times
for ((r = 0; r < rounds; r++)); do
  for s in "${settings[@]}"; do
    read -r wait threads blas <<<"$s"
    args=(--steps "$steps")
    [ "$threads" = 0 ] || args+=(--threads "$threads" --blas-threads "$blas")
    if [ "$wait" = unset ]; then line=$(env -u OMP_WAIT_POLICY "$bin" "${args[@]}")
    else line=$(OMP_WAIT_POLICY=$wait "$bin" "${args[@]}"); fi
    times[$s]+="$(sed 's/.*"median_step_ms": \([0-9.]*\).*/\1/' <<<"$line") "
  done
done
median() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
base=$(median "${times["unset 0 0"]}")
printf '%-8s %-8s %-6s %10s %8s   (per-round ms)\n' wait threads blas step_ms speedup
for s in "${settings[@]}"; do
  read -r wait threads blas <<<"$s"
  [ "$threads" = 0 ] && { threads="default(1)"; blas="default"; }
  m=$(median "${times[$s]}")
  printf '%-8s %-8s %-6s %10s %8.2f   (%s)\n' "$wait" "$threads" "$blas" "$m" "$(awk -v b="$base" -v m="$m" 'BEGIN{print b/m}')" "${times[$s]% }"
done
