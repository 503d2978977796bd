#!/usr/bin/env bash
# Remakes the statistical-efficiency table that dmlps-bench advise uses
# (libcore/src/advise/efficiency.cc), one per model: each policy's
# iterations to the target test accuracy over BSP's, on the default job (4
# workers, MODEL on Fashion-MNIST, batch 256, lr 0.1; MODEL=mlp:128 and
# TARGET=0.85 unless given), on an even cluster and with the last worker 4x
# slow. The runs are `dmlps-bench sim`'s, with real gradients on
# the real data, evaluated every 10 iterations; a run is deterministic, so
# one per policy, the two profiles side by side. Prints the table's rows as
# C++ to paste between the EFFICIENCY-TABLE markers. About 5 minutes of two
# cores.
#   usage: [POLICIES=LIST] [MODEL=M] [TARGET=ACC] advise-efficiency.sh [DMLPS-BENCH]
#          [-- MORE-SIM-FLAGS]
# (softmax, which stays under 0.85: MODEL=softmax TARGET=0.8.)
set -euo pipefail
bench=build/cmd/dmlps-bench
if [ $# -gt 0 ] && [ "$1" != "--" ]; then bench=$1; shift; fi
[ "${1:-}" = "--" ] && shift
if [ ! -x "$bench" ]; then
  echo "advise-efficiency.sh: error: $bench not found; build dmlps-bench or name it" >&2
  exit 69
fi
policies=${POLICIES:-bsp,backup:1,ssp:3,wbsp,abps,lbbsp}
model=${MODEL:-mlp:128}
target=${TARGET:-0.85}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pids=()
for profile in even=1,1,1,1 straggler=1,1,1,4; do
  name=${profile%%=*}
  "$bench" sim --workers 4 --model "$model" --batch 256 --lr 0.1 --target "$target" \
    --eval-every 10 --max-iterations 3000 --slowdown "${profile#*=}" \
    --policies "$policies" --format tsv "$@" >"$tmp/$name.tsv" 2>"$tmp/$name.log" &
  pids+=($!)
done
wait "${pids[0]}" || { cat "$tmp/even.log" >&2; exit 1; }
wait "${pids[1]}" || { cat "$tmp/straggler.log" >&2; exit 1; }
# Columns: policy, then iterations (7th) and whether it reached (3rd). A run
# that never reached the target counts its iterations at the end, a bound
# ("3000+": at least that many).
rows() { awk -F'\t' 'NR > 1 { print $1 "\t" ($3 > 0 ? $7 : "3000+") }' "$1" | sort; }
join -t $'\t' <(rows "$tmp/even.tsv") <(rows "$tmp/straggler.tsv") |
  awk -F'\t' -v order="$policies" '
    { even[$1] = $2; straggler[$1] = $3 }
    END {
      n = split(order, names, ",")
      for (i = 1; i <= n; i++) {
        p = names[i]
        if (even[p] == "" || straggler[p] == "") continue
        printf "      {\"%s\", %.2f, %.2f},  // %s and %s iterations\n", p,
               (even[p] + 0) / (even["bsp"] + 0), (straggler[p] + 0) / (straggler["bsp"] + 0),
               even[p], straggler[p]
      }
    }'
