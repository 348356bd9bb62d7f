#!/usr/bin/env bash
# Threading matrix for a bert-mini-sized training step: intra-op threads x BLAS threads x OMP_WAIT_POLICY.
# Prints each setting's median step time and its speed relative to libtorch's defaults, measured in the same run.
set -euo pipefail
bin=${1:-build/bin/threading_bench}
steps=${STEPS:-10}
run() {  # run WAIT THREADS BLAS_THREADS
  if [ "$1" = unset ]; then env -u OMP_WAIT_POLICY "$bin" --threads "$2" --blas-threads "$3" --steps "$steps"
  else OMP_WAIT_POLICY=$1 "$bin" --threads "$2" --blas-threads "$3" --steps "$steps"; fi
}
base=$(env -u OMP_WAIT_POLICY "$bin" --steps "$steps")
base_ms=$(sed 's/.*"median_step_ms": \([0-9.]*\).*/\1/' <<<"$base")
echo "baseline (libtorch defaults): $base"
printf '%-8s %-8s %-6s %10s %8s\n' wait threads blas step_ms speedup
for wait in unset PASSIVE; do
  for threads in 1 2; do
    for blas in 1 2; do
      line=$(run "$wait" "$threads" "$blas")
      ms=$(sed 's/.*"median_step_ms": \([0-9.]*\).*/\1/' <<<"$line")
      printf '%-8s %-8s %-6s %10s %8.2f\n' "$wait" "$threads" "$blas" "$ms" "$(echo "$base_ms / $ms" | bc -l)"
    done
  done
done
