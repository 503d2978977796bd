#!/usr/bin/env bash
# A-BSP against the asynchronous answers to stragglers: one worker 4x slow;
# A-BSP stops every worker when the fastest finishes and takes the partial
# work of the others, where SSP and ASP let the fast ones run ahead on stale
# models.
NAME=abps-vs-ssp.sh
SUMMARY='  the slow worker is the last one, at --slowdown 4'
. "$(dirname "$0")/common.sh"
bench_script "$@"
bench "4 workers, the last one 4x slow" \
  --workers 4 --slowdown 1,1,1,4 --policies bsp,abps,ssp:3,asp --out "$out/runs"
