#!/usr/bin/env bash
# Runs one traced 4-worker job (mlp:128 on Fashion-MNIST to 0.85, the last
# worker 4x slow) under BSP and under WBSP, then prints each run's
# dmlps-trace summary and draws, with gnuplot, a Gantt chart of each run
# and their time-to-accuracy curves into --out (SVG).
NAME=trace-bsp-vs-wbsp.sh
SUMMARY='  --window S    seconds of each run the Gantt chart shows (default 1)'
. "$(dirname "$0")/common.sh"
window=1
option --window S window
bench_script "$@"
command -v gnuplot >/dev/null || die 69 "gnuplot is not installed (apt-get install gnuplot-nox)"
repeat=1
bench "4 workers, the last one 4x slow, traced" \
  --workers 4 --slowdown 1,1,1,4 --policies bsp,wbsp --eval-every 10 --max-seconds 120 \
  --out "$out/runs" --trace-dir "$out/traces"
for policy in bsp wbsp; do
  echo "== $policy"
  "$bin/dmlps-trace" summary "$out/traces/$policy-1"/*.trace
  "$bin/dmlps-trace" plot --kind gantt --term svg --window "$window" "$out/traces/$policy-1"/*.trace |
    gnuplot >"$out/gantt-$policy.svg"
done
"$bin/dmlps-trace" plot --kind tta --term svg "$out"/traces/bsp-1/server.trace "$out"/traces/wbsp-1/server.trace |
  gnuplot >"$out/tta.svg"
echo "figures: $out/gantt-bsp.svg $out/gantt-wbsp.svg $out/tta.svg" >&2
