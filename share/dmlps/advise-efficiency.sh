#!/usr/bin/env bash
# Remakes the statistical-efficiency table that dmlps-bench advise and
# --policy auto use (share/dmlps/efficiency.tsv), one per model: each policy's
# iterations to the target test accuracy over BSP's, on the default job (4
# workers, MODEL on Fashion-MNIST, batch 256, lr 0.1; MODEL=mlp:128 and
# TARGET=0.85 unless given), on an even cluster, with the last worker 4x
# slow, and under transient delays (every worker's step held up 50 ms with
# probability 0.2, auto-profiles.sh's delay profile). The runs are
# `dmlps-bench sim`'s, with real gradients on the real data, evaluated
# every 10 iterations; a run is deterministic, so one per policy, the three
# profiles side by side. Prints the table's rows, to put in place of its
# rows in share/dmlps/efficiency.tsv. About 8 minutes of two cores. The default
# job's rows of bsp, backup:1, ssp:3 and lbbsp come from real runs instead
# (share/dmlps/experiments/auto-profiles.sh --efficiency); this script
# gives its other rows (POLICIES=wbsp,abps).
#   usage: [POLICIES=LIST] [MODEL=M] [TARGET=ACC] [WORKERS=N] advise-efficiency.sh
#          [DMLPS-BENCH] [-- MORE-SIM-FLAGS]
# (softmax, which stays under 0.85: MODEL=softmax TARGET=0.8. WORKERS=N:
# N workers rather than 4, the last one the straggler.)
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
workers=${WORKERS:-4}
ones=$(printf '1,%.0s' $(seq 2 "$workers"))
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pids=()
names=(even straggler delays)
profiles=("--slowdown 1" "--slowdown ${ones}4" "--slowdown 1 --delay-ms 50 --delay-prob 0.2")
for i in 0 1 2; do
  # shellcheck disable=SC2086  # the profile's flags, split on purpose
  "$bench" sim --workers "$workers" --model "$model" --batch 256 --lr 0.1 --target "$target" \
    --eval-every 10 --max-iterations 3000 ${profiles[i]} \
    --policies "$policies" --format tsv "$@" >"$tmp/${names[i]}.tsv" 2>"$tmp/${names[i]}.log" &
  pids+=($!)
done
for i in 0 1 2; do
  wait "${pids[i]}" || { cat "$tmp/${names[i]}.log" >&2; exit 1; }
done
# Columns: policy, then iterations (7th) and whether it reached (3rd). A run
# that never reached the target counts its iterations at the end, a bound
# ("3000+": at least that many).
rows() { awk -F'\t' 'NR > 1 { print $1 "\t" ($3 > 0 ? $7 : "3000+") }' "$1" | sort; }
join -t $'\t' <(rows "$tmp/even.tsv") <(rows "$tmp/straggler.tsv") |
  join -t $'\t' - <(rows "$tmp/delays.tsv") |
  awk -F'\t' -v order="$policies" '
    { even[$1] = $2; straggler[$1] = $3; delays[$1] = $4 }
    END {
      n = split(order, names, ",")
      for (i = 1; i <= n; i++) {
        p = names[i]
        if (even[p] == "" || straggler[p] == "" || delays[p] == "") continue
        printf "row\t%s\t%.2f\t%.2f\t%.2f\t%s, %s and %s iterations\n", p,
               (even[p] + 0) / (even["bsp"] + 0), (straggler[p] + 0) / (straggler["bsp"] + 0),
               (delays[p] + 0) / (delays["bsp"] + 0), even[p], straggler[p], delays[p]
      }
    }'
