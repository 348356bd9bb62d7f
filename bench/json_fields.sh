# Shell helpers the bench scripts share (source it): a number field of a one-line JSON object, and the median
# of space-separated numbers.
field() { sed "s/.*\"$1\": *\([0-9.eE+-]*\).*/\1/" <<<"$2"; }
median() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
