#!/usr/bin/env bash
# WBSP's setting: the odd-numbered workers sleep a fixed delay after every
# step (deterministic stragglers); BSP waits for them every round, WBSP lets
# the fast workers go on training their local models meanwhile. With
# --sim N the same in the simulator (virtual time), N workers each on a
# machine of its own, against BSP alone.
NAME=wbsp-fixed-delay.sh
SUMMARY='  --delay-ms D  the odd workers'"'"' delay per step (default 10; a step takes about 3 ms)
  --sim N       simulate N workers instead of real runs'
. "$(dirname "$0")/common.sh"
delay=10 sim=""
option --delay-ms D delay
option --sim N sim
bench_script "$@"
if [ -n "$sim" ]; then
  delays=""
  for ((i = 0; i < sim; i++)); do delays+="$( ((i % 2)) && echo "$delay" || echo 0),"; done
  echo "== sim, $sim workers, the odd ones sleep $delay ms per step"
  "$bin/dmlps-bench" sim --repeat "$repeat" --workers "$sim" --slowdown 1 --delay-ms "${delays%,}" \
    --policies bsp,wbsp,wbsp-overlap "${extra[@]}"
  echo
  exit 0
fi
bench "4 workers, workers 1 and 3 sleep $delay ms per step" \
  --workers 4 --slowdown 1 --delay-ms "0,$delay,0,$delay" --policies bsp,ssp:3,wbsp,wbsp-overlap \
  --out "$out/runs"
