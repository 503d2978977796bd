#!/usr/bin/env bash
# LB-BSP's setting: one worker's link drops to a low bandwidth at iteration
# 150 (its pushes take as long as a step's computing). BSP waits for it
# every round from then on; LB-BSP counts the sending time in the worker's
# speed and moves samples from it to the others, so that all finish
# together again. The runs have no target but a fixed number of iterations
# (the drop's iteration + 250), so the seconds column compares their speed.
# Prints the table, then each worker's mean batch size
# before and after the drop (from the traces), and plots the batch sizes.
# With --sim N the same in the simulator (virtual time), N workers with the
# last one's link cut, each machine its own: a table of runs to the drop's
# iteration + 250 and one of runs to the drop, whose difference is the time
# after it.
NAME=lbbsp-bandwidth-drop.sh
SUMMARY='  --mbps M      the slow link, megabits/s (default 500: a push of mlp:128 then takes 6.5 ms)
  --at I        the iteration of the drop (default 150)
  --sim N       simulate N workers instead of real runs (no traces)'
. "$(dirname "$0")/common.sh"
mbps=500 at=150 sim=""
option --mbps M mbps
option --at I at
option --sim N sim
bench_script "$@"
if [ -n "$sim" ]; then
  for its in $((at + 250)) "$at"; do
    echo "== sim, $sim workers, to iteration $its: worker $((sim - 1))'s link at $mbps Mb/s from iteration $at"
    "$bin/dmlps-bench" sim --repeat "$repeat" --workers "$sim" --slowdown 1 \
      --bandwidth-schedule "$((sim - 1))=$at:$mbps" --policies bsp,lbbsp,lbbsp-gpu --target 0 \
      --max-iterations "$its" "${extra[@]}"
    echo
  done
  exit 0
fi
bench "4 workers, worker 3's link at $mbps Mb/s from iteration $at" \
  --workers 4 --slowdown 1 --bandwidth-schedule "3=$at:$mbps" --policies bsp,lbbsp,lbbsp-gpu \
  --target 0 --max-iterations $((at + 250)) --out "$out/runs" --trace-dir "$out/traces"

# Mean batch per worker over the 50 steps before the drop and over steps
# 50 to 99 after it, from the workers' step spans.
for run in "$out"/traces/lbbsp-*; do
  [ -d "$run" ] || continue
  echo "== $(basename "$run"): mean batch per worker, steps $((at - 50))..$((at - 1)) and $((at + 50))..$((at + 99))"
  for trace in "$run"/worker-*.trace; do
    "$bin/dmlps-trace" tsv "$trace" | awk -F '\t' -v at="$at" -v w="$(basename "$trace" .trace)" '
      $5 == "step" {
        split($7, kv, /[=;]/)
        for (i = 1; i < length(kv); i += 2) {
          if (kv[i] == "clock") c = kv[i + 1]
          if (kv[i] == "samples") v = kv[i + 1]
        }
        if (c >= at - 50 && c < at) { before += v; nb++ }
        if (c >= at + 50 && c < at + 100) { after += v; na++ }
      }
      END { printf "%s\t%s\t%s\n", w, nb ? before / nb : "-", na ? after / na : "-" }'
  done
done
if command -v gnuplot >/dev/null; then
  for run in "$out"/traces/lbbsp-*; do
    [ -d "$run" ] || continue
    "$bin/dmlps-trace" plot --kind batch --term svg "$run"/*.trace | gnuplot >"$out/batch-$(basename "$run").svg"
  done
  echo "batch-size plots: $out/batch-*.svg" >&2
fi
