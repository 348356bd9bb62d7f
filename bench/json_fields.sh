# Shell helpers the bench scripts share (source it): a number field of a one-line JSON object, the median,
# spread and ratio of space-separated numbers.
field() { sed "s/.*\"$1\": *\([0-9.eE+-]*\).*/\1/" <<<"$2"; }
median() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
# The smallest and largest of space-separated numbers, as "min-max".
spread() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -g | awk 'NR==1{lo=$1} {hi=$1} END {printf "%.3f-%.3f", lo, hi}'; }
# x/y of two numbers.
ratio() { awk -v x="$1" -v y="$2" 'BEGIN{print x/y}'; }

# One round of an interleaved A/B run: berth first on even rounds, Python first on odd ones, so neither side
# always runs on a warmer (or busier) machine. Calls the caller's run_berth and run_python; sets b and p.
interleaved_round() {  # ROUND
  if (($1 % 2 == 0)); then
    b=$(run_berth)
    p=$(run_python)
  else
    p=$(run_python)
    b=$(run_berth)
  fi
  echo "round $1 berth:  $b"
  echo "round $1 python: $p"
}
