#!/usr/bin/env bash
# WBSP's setting: the odd-numbered workers sleep a fixed delay after every
# step (deterministic stragglers); BSP waits for them every round, WBSP lets
# the fast workers go on training their local models meanwhile.
NAME=wbsp-fixed-delay.sh
SUMMARY='  --delay-ms D  the odd workers'"'"' delay per step (default 10; a step takes about 3 ms)'
USAGE_EXTRA=' [--delay-ms D]'
delay=10
handle_option() { [ "$1" = --delay-ms ] && delay=$2 && SHIFT=2; }
. "$(dirname "$0")/common.sh"
bench "4 workers, workers 1 and 3 sleep $delay ms per step" \
  --workers 4 --slowdown 1 --delay-ms "0,$delay,0,$delay" --policies bsp,ssp:3,wbsp,wbsp-overlap \
  --out "$out/runs"
