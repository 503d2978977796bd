#!/usr/bin/env bash
# Sharded servers on this host, real against simulated, as docs/simulator.md
# compares one server. For each shard count S: dmlps-bench run --shards S
# (the server as shard 0 of S, shards 1 to S-1 on loopback); then
# dmlps-bench sim --shards S --shared-cores 2 with the step cost
# given. Prints both tables for each S; compare time per iteration
# (seconds / iterations) and iterations to the target. Exits 70 when a run
# fails.
NAME=shard-agreement.sh
SUMMARY='  --shards LIST       shard counts, each 2 to 64 (default 2,4)
  --policies LIST     policies, as dmlps-bench names them (default bsp,abps,lbbsp)
  --compute-cost A,C  the simulated step: A + C*batch microseconds (default 50,12.4)
  -- ARGS             passed on to dmlps-bench run and sim (e.g. --workers 8)'
USAGE_EXTRA=' [--shards LIST] [--policies LIST] [--compute-cost A,C]'
shard_list=2,4 policies=bsp,abps,lbbsp cost=50,12.4
handle_option() {
  [ $# -ge 2 ] || return 1
  case "$1" in
    --shards) shard_list=$2 ;;
    --policies) policies=$2 ;;
    --compute-cost) cost=$2 ;;
    *) return 1 ;;
  esac
  SHIFT=2
}
. "$(dirname "$0")/common.sh"

IFS=, read -r -a shard_counts <<<"$shard_list"
for s in "${shard_counts[@]}"; do
  if ! [[ "$s" =~ ^[1-9][0-9]*$ ]] || [ "$s" -lt 2 ] || [ "$s" -gt 64 ]; then
    echo "$NAME: error: --shards: '$s' is not a count from 2 to 64" >&2
    exit 64
  fi
done
[[ "$cost" =~ ^[0-9.]+,[0-9.]+$ ]] || { echo "$NAME: error: --compute-cost: '$cost' is not A,C" >&2; exit 64; }

for s in "${shard_counts[@]}"; do
  echo "== real, $s shards"
  "$bin/dmlps-bench" run --repeat "$repeat" --shards "$s" --policies "$policies" \
    --out "$out/runs-$s" "${extra[@]}" || { echo "$NAME: error: a real run failed ($out/runs-$s)" >&2; exit 70; }
  echo
  echo "== simulated, $s shards"
  "$bin/dmlps-bench" sim --repeat "$repeat" --shards "$s" --shared-cores 2 --compute-cost "$cost" \
    --jitter 0.4 --policies "$policies" "${extra[@]}" || { echo "$NAME: error: the simulation failed" >&2; exit 70; }
  echo
done
