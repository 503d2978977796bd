#!/usr/bin/env bash
# Runs one traced 4-worker job (mlp:128 on Fashion-MNIST to 0.85, the last
# worker 4x slow) under BSP and under WBSP, then prints each run's
# dmlps-trace summary and draws, with gnuplot, a Gantt chart of each run
# and their time-to-accuracy curves into --out (SVG).
set -euo pipefail

usage() {
  cat <<'EOF'
usage: trace-bsp-vs-wbsp.sh [--out DIR] [--bin DIR] [--window SECONDS]
  --out DIR       where traces, summaries and figures go (default: a temporary folder)
  --bin DIR       folder holding dmlps-server, dmlps-worker and dmlps-trace
  --window S      seconds of each run the Gantt chart shows (default 1)
EOF
}

out="" bin="${DMLPS_BIN:-}" window=1
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --window) window=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "trace-bsp-vs-wbsp.sh: error: unknown option '$1'" >&2; usage >&2; exit 64 ;;
  esac
done
here=$(cd "$(dirname "$0")" && pwd)
[ -n "$bin" ] || bin="$here/../../../build/cmd"
for tool in dmlps-server dmlps-worker dmlps-trace; do
  [ -x "$bin/$tool" ] || { echo "trace-bsp-vs-wbsp.sh: error: $bin/$tool not found; pass --bin DIR" >&2; exit 69; }
done
command -v gnuplot >/dev/null || { echo "trace-bsp-vs-wbsp.sh: error: gnuplot is not installed (apt-get install gnuplot-nox)" >&2; exit 69; }
[ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/dmlps-trace.XXXXXX")
mkdir -p "$out"

pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done' EXIT

for policy in bsp wbsp; do
  dir="$out/$policy"
  rm -rf "$dir" && mkdir -p "$dir"
  "$bin/dmlps-server" --workers 4 --policy "$policy" --batch 256 --lr 0.1 --eval-every 10 \
    --target-accuracy 0.85 --max-seconds 120 --bind 'tcp://127.0.0.1:*' \
    --endpoint-file "$dir/endpoint" --trace "$dir/server.trace" >"$dir/server.tsv" 2>"$dir/server.log" &
  pids=("$!")
  for _ in $(seq 300); do [ -s "$dir/endpoint" ] && break; sleep 0.1; done
  for r in 0 1 2 3; do
    slow=1
    [ "$r" -eq 3 ] && slow=4
    "$bin/dmlps-worker" --server "$(cat "$dir/endpoint")" --rank "$r" --slowdown "$slow" \
      --trace "$dir/worker-$r.trace" 2>"$dir/worker-$r.log" &
    pids+=("$!")
  done
  wait "${pids[0]}" || echo "trace-bsp-vs-wbsp.sh: the $policy run missed its target" >&2
  for p in "${pids[@]:1}"; do wait "$p" || true; done
  pids=()
  "$bin/dmlps-trace" summary "$dir"/*.trace >"$dir/summary.txt" || true
  echo "== $policy"
  cat "$dir/summary.txt"
done

for policy in bsp wbsp; do
  "$bin/dmlps-trace" plot --kind gantt --term svg --window "$window" "$out/$policy"/*.trace |
    gnuplot >"$out/gantt-$policy.svg"
done
"$bin/dmlps-trace" plot --kind tta --term svg "$out"/bsp/server.trace "$out"/wbsp/server.trace |
  gnuplot >"$out/tta.svg"
echo "figures: $out/gantt-bsp.svg $out/gantt-wbsp.svg $out/tta.svg" >&2
