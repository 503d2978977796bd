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
. "$(dirname "$0")/common.sh"
shard_list=2,4 policies=bsp,abps,lbbsp cost=50,12.4
option --shards LIST shard_list
option --policies LIST policies
option --compute-cost A,C cost
REST=DMLPS-BENCH-OPTIONS
check_options() {
  IFS=, read -r -a shard_counts <<<"$shard_list"
  for s in "${shard_counts[@]}"; do
    if ! [[ "$s" =~ ^[1-9][0-9]*$ ]] || [ "$s" -lt 2 ] || [ "$s" -gt 64 ]; then
      die 64 "--shards: '$s' is not a count from 2 to 64"
    fi
  done
  [[ "$cost" =~ ^[0-9.]+,[0-9.]+$ ]] || die 64 "--compute-cost: '$cost' is not A,C"
}
bench_script "$@"

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
