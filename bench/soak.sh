#!/usr/bin/env bash
# Soak: a long `berth train` under `berth launch` (bert-tiny on the bundled SpamAssassin split, NPROC ranks of
# 1 thread) with a checkpoint about every minute, an evaluation every few and save_total_limit keeping the disk
# bounded, while a sampler records every process's resident memory and open file descriptors every
# SAMPLE_S seconds (CSV). At the end: the least-squares slope of each rank's RSS (MB/min) after the warm-up,
# the fd range per process, the step and checkpoint counts, and resumability: at RESUME_POINTS random times
# the newest checkpoint was copied aside; each copy is resumed for a few steps (bounded) and must load and
# finish.
# Usage: [MINUTES=30] [NPROC=2] [SAMPLE_S=10] [WARMUP_MIN=3] [RESUME_POINTS=3] [NICE=10] bench/soak.sh [OUT_DIR]
# Writes OUT_DIR/samples.csv, OUT_DIR/summary.txt and the logs; OUT_DIR defaults to runs/soak.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
berth=${BERTH:-$root/build/bin/berth}
out=${1:-runs/soak}
minutes=${MINUTES:-30}
nproc=${NPROC:-2}
sample_s=${SAMPLE_S:-10}
warmup_min=${WARMUP_MIN:-3}
resume_points=${RESUME_POINTS:-3}
nice_level=${NICE:-10}
export OMP_WAIT_POLICY=PASSIVE OMP_NUM_THREADS=1
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -rf "$out/run" "$out/calibrate" "$out/snapshots" "$out/resume-"* "$out/samples.csv" "$out/summary.txt" \
  "$out/checkpoints.txt"
mkdir -p "$out/snapshots"

train_args() { # $1: output dir, $2: save steps (0: no checkpoints, no evaluation), $3: max steps
  local saving="--save-strategy no --eval-strategy no"
  [ "$2" -gt 0 ] && saving="--save-strategy steps --save-steps $2 --save-total-limit 3 --eval-strategy steps
    --eval-steps $(($2 * 3)) --logging-steps $2"
  echo train --model-preset bert-tiny --tokenizer "$root/tests/fixtures/bert-base-uncased" --data spamassassin \
    --output-dir "$1" --max-length 128 --per-device-train-batch-size 8 --per-device-eval-batch-size 64 \
    --learning-rate 1e-4 --max-steps "$3" --threads 1 --disable-tqdm true --seed 7 $saving
}

# Steps per minute, from a short run of the same shape (so a checkpoint lands about every minute).
calibrate() {
  local start end
  start=$(date +%s.%N)
  nice -n "$nice_level" "$berth" launch --nproc-per-node "$nproc" -- "$berth" \
    $(train_args "$out/calibrate" 0 40) > "$out/calibrate.log" 2>&1
  end=$(date +%s.%N)
  # 40 steps plus the start-up: a slight underestimate of the rate, so checkpoints come a little under a minute.
  awk -v s="$start" -v e="$end" 'BEGIN { n = int(40 * 60 / (e - s)); print (n < 1 ? 1 : n) }'
}

# time_s,pid,role,rss_kb,fds for the launcher and every process below it.
sample() { # $1: launcher pid, $2: start time
  local t pids pid role rss fds
  t=$(($(date +%s) - $2))
  pids="$1 $(pgrep -P "$1" || true)"
  for pid in $pids; do
    [ -r "/proc/$pid/status" ] || continue
    rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null)
    fds=$(ls "/proc/$pid/fd" 2>/dev/null | wc -l)
    [ -n "$rss" ] && [ "$fds" -gt 0 ] || continue  # gone (or a zombie) between the listing and the read
    role=launcher
    [ "$pid" != "$1" ] && role="rank$(tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null | sed -n 's/^RANK=//p')"
    echo "$t,$pid,$role,$rss,$fds"
  done >> "$out/samples.csv"
}

newest_checkpoint() {
  { ls -d "$out/run"/checkpoint-* 2>/dev/null || true; } | sed 's/.*checkpoint-//' | sort -n | tail -1
}

save_steps=${SAVE_STEPS:-$(calibrate)}
echo "soak: $minutes min, $nproc ranks x 1 thread, a checkpoint every $save_steps steps (about a minute)," \
  "evaluation every $((save_steps * 3)), sampling every ${sample_s}s into $out/samples.csv"
echo "time_s,pid,role,rss_kb,fds" > "$out/samples.csv"
# Random copy times, spread over the run after its first checkpoint.
copy_at=$(awk -v n="$resume_points" -v m="$minutes" 'BEGIN { srand(); for (i = 0; i < n; i++)
  printf "%d\n", 60 * (1.5 + rand() * (m - 2)) }' | sort -n | tr '\n' ' ')
echo "soak: checkpoints copied aside at seconds: $copy_at"

start=$(date +%s)
nice -n "$nice_level" "$berth" launch --nproc-per-node "$nproc" -- "$berth" \
  $(train_args "$out/run" "$save_steps" 100000000) > "$out/train.log" 2>&1 &
launcher=$!
trap 'kill -TERM "$launcher" 2>/dev/null || true' EXIT  # never leave the run behind (Ctrl-C, an error)
end=$((start + minutes * 60))
while [ "$(date +%s)" -lt "$end" ] && kill -0 "$launcher" 2>/dev/null; do
  sample "$launcher" "$start"
  newest=$(newest_checkpoint)
  [ -n "$newest" ] && { grep -qx "$newest" "$out/checkpoints.txt" 2>/dev/null || echo "$newest" >> "$out/checkpoints.txt"; }
  now=$(($(date +%s) - start))
  for at in $copy_at; do
    if [ "$now" -ge "$at" ] && [ ! -e "$out/snapshots/.at-$at" ]; then
      touch "$out/snapshots/.at-$at"
      step=$(newest_checkpoint)
      [ -n "$step" ] && cp -a "$out/run/checkpoint-$step" "$out/snapshots/checkpoint-$step" &&
        echo "soak: at ${now}s copied checkpoint-$step aside"
    fi
  done
  sleep "$sample_s"
done
survived=yes
kill -0 "$launcher" 2>/dev/null || survived="no (the run ended early: see $out/train.log)"
kill -TERM "$launcher" 2>/dev/null || true
wait "$launcher" || true
steps=$(newest_checkpoint)
# Checkpoints seen by the sampler (save_total_limit removes the older ones from disk).
checkpoints=$(wc -l < "$out/checkpoints.txt" 2>/dev/null || echo 0)

# Each copy resumes (the same schedule, so the same max_steps) until it has saved 2 more steps, bounded in time.
resume_copy() { # $1: the copied checkpoint-N; true when it resumed at N and reached N + 2
  local n=${1##*checkpoint-} pid i
  nice -n "$nice_level" "$berth" launch --nproc-per-node "$nproc" -- "$berth" \
    $(train_args "$out/resume-$n" 1 100000000) --resume-from-checkpoint "$1" \
    > "$out/resume-$n.log" 2>&1 &
  pid=$!
  for ((i = 0; i < 300; i++)); do
    [ -d "$out/resume-$n/checkpoint-$((n + 2))" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 1
  done
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" || true
  grep -q "Resumed at step $n" "$out/resume-$n.log" && [ -d "$out/resume-$n/checkpoint-$((n + 2))" ]
}
resumes=""
for copy in "$out/snapshots"/checkpoint-*; do
  [ -d "$copy" ] || continue
  n=${copy##*checkpoint-}
  if resume_copy "$copy"; then
    resumes+="checkpoint-$n resumed and saved checkpoint-$((n + 2)): ok; "
  else
    resumes+="checkpoint-$n: FAILED (see $out/resume-$n.log); "
  fi
done

{
  echo "soak of $minutes min ($nproc ranks x 1 thread, nice $nice_level): ran the whole time: $survived"
  echo "steps: newest checkpoint at step ${steps:-none}; checkpoints saved: $checkpoints (save_steps $save_steps)"
  echo "evaluations: $(grep -c '"eval_loss"' "$out/run/log.jsonl" 2>/dev/null || echo 0) (log.jsonl)"
  # Least-squares slope of RSS over time per process role, after the warm-up; fd min/max per role.
  awk -F, -v warm=$((warmup_min * 60)) 'NR > 1 {
      r = $3; f = $5 + 0
      if (!(r in fmin) || f < fmin[r]) fmin[r] = f
      if (!(r in fmax) || f > fmax[r]) fmax[r] = f
      if ($1 < warm) next
      x = $1 / 60; y = $4 / 1024; n[r]++; sx[r] += x; sy[r] += y; sxx[r] += x * x; sxy[r] += x * y
      if (!(r in first)) first[r] = y; last[r] = y
    } END {
      for (r in fmin) {
        d = n[r] * sxx[r] - sx[r] * sx[r]
        slope = (n[r] > 1 && d != 0) ? (n[r] * sxy[r] - sx[r] * sy[r]) / d : 0
        printf "%s: RSS slope after %d min warm-up %+.3f MB/min over %d samples (%.1f -> %.1f MB); open fds %d..%d\n",
          r, warm / 60, slope, n[r], first[r], last[r], fmin[r], fmax[r]
      }
    }' "$out/samples.csv" | sort
  echo "resume: ${resumes:-no copies were taken}"
} | tee "$out/summary.txt"
