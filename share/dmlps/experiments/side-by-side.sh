#!/usr/bin/env bash
# Trains one job under several synchronization policies, one after another on
# this host, with the same straggler profile, and prints a table of
# time-to-accuracy per policy on stdout. Logs and TSVs go to --out.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: side-by-side.sh [options]
  --workers N          workers per run (default 4)
  --policies LIST      comma-separated: bsp, asp, ssp:S, backup:B, wbsp,
                       wbsp-overlap, abps, lbbsp, lbbsp-gpu, token
                       (default: all of them, with ssp:3 and backup:1)
  --slowdown LIST      per-worker slowdown factors, e.g. 1,1,1,4 (default: the
                       last worker at 4, the others at 1)
  --target ACC         target test accuracy (default 0.85)
  --model SPEC         model (default mlp:128)
  --batch B            samples per worker step (default 256: steps long enough
                       that computing, not messaging, dominates, as in the papers)
  --lr RATE            learning rate (default 0.1)
  --eval-every N       iterations between evaluations (default 50): the
                       granularity of the time to the target
  --data SPEC          dataset (default fashion-mnist)
  --max-seconds S      give up on a run after S seconds of training (default 300)
  --repeat R           runs per policy, interleaved (default 1)
  --out DIR            keep logs and TSVs here (default: a temporary folder)
  --bin DIR            folder holding dmlps-server and dmlps-worker
Every run's server and workers are real processes talking over loopback.
EOF
}

workers=4 policies=bsp,asp,ssp:3,backup:1,wbsp,wbsp-overlap,abps,lbbsp,token slowdown="" target=0.85 model=mlp:128 data=fashion-mnist
max_seconds=300 repeat=1 out="" bin="${DMLPS_BIN:-}" batch=256 lr=0.1 eval_every=50
while [ $# -gt 0 ]; do
  case "$1" in
    --workers) workers=$2; shift 2 ;;
    --policies) policies=$2; shift 2 ;;
    --slowdown) slowdown=$2; shift 2 ;;
    --target) target=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --lr) lr=$2; shift 2 ;;
    --eval-every) eval_every=$2; shift 2 ;;
    --data) data=$2; shift 2 ;;
    --max-seconds) max_seconds=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "side-by-side.sh: error: unknown option '$1'" >&2; usage >&2; exit 64 ;;
  esac
done

here=$(cd "$(dirname "$0")" && pwd)
if [ -z "$bin" ]; then
  for candidate in "$here/../../../build/cmd" "$(dirname "$(command -v dmlps-server 2>/dev/null || echo /nonexistent/x)")"; do
    if [ -x "$candidate/dmlps-server" ]; then bin=$candidate; break; fi
  done
fi
if [ -z "$bin" ] || [ ! -x "$bin/dmlps-server" ] || [ ! -x "$bin/dmlps-worker" ]; then
  echo "side-by-side.sh: error: dmlps-server and dmlps-worker not found; build them or pass --bin DIR" >&2
  exit 69
fi
case "$workers" in ''|*[!0-9]*|0) echo "side-by-side.sh: error: --workers must be a positive integer" >&2; exit 64 ;; esac
if [ -z "$slowdown" ]; then
  slowdown=$(for ((i = 1; i < workers; i++)); do printf '1,'; done; printf '4')
fi
IFS=, read -r -a factors <<<"$slowdown"
if [ "${#factors[@]}" -ne "$workers" ]; then
  echo "side-by-side.sh: error: --slowdown has ${#factors[@]} factors for $workers workers" >&2
  exit 64
fi
if [ -z "$out" ]; then out=$(mktemp -d "${TMPDIR:-/tmp}/dmlps-side-by-side.XXXXXX"); fi
mkdir -p "$out"

pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# One run: prints "seconds iterations accuracy ratio_mean ratio_min wasted status".
run_one() {
  local policy=$1 tag=$2 name=${1%%:*} extra=()
  case "$policy" in
    ssp:*) extra=(--staleness "${policy#ssp:}") ;;
    backup:*) extra=(--backup "${policy#backup:}") ;;
    lbbsp-gpu) name=lbbsp extra=(--lb-mode gpu) ;;
  esac
  local dir="$out/$tag"
  mkdir -p "$dir"
  rm -f "$dir/endpoint"
  pids=()
  # A-BSP's chunks and Fela's tokens are a quarter of a worker's batch, as the
  # servers' defaults are (16 of 64): much smaller and each token's message
  # round trip costs more than its compute.
  case "$name" in
    abps) extra+=(--chunk $(((batch + 3) / 4))) ;;
    token) extra+=(--token-size $(((batch + 3) / 4))) ;;
  esac
  "$bin/dmlps-server" --workers "$workers" --policy "$name" "${extra[@]}" --model "$model" \
    --batch "$batch" --lr "$lr" --eval-every "$eval_every" \
    --data "$data" --bind 'tcp://127.0.0.1:*' --endpoint-file "$dir/endpoint" \
    --target-accuracy "$target" --max-seconds "$max_seconds" \
    >"$dir/server.tsv" 2>"$dir/server.log" &
  local server=$!
  pids+=("$server")
  for _ in $(seq 300); do [ -s "$dir/endpoint" ] && break; sleep 0.1; done
  if [ ! -s "$dir/endpoint" ]; then
    echo "side-by-side.sh: error: the $policy server did not start; see $dir/server.log" >&2
    return 1
  fi
  local endpoint
  endpoint=$(cat "$dir/endpoint")
  for ((r = 0; r < workers; r++)); do
    "$bin/dmlps-worker" --server "$endpoint" --rank "$r" --data "$data" \
      --slowdown "${factors[$r]}" 2>"$dir/worker-$r.log" &
    pids+=("$!")
  done
  local rc=0
  wait "$server" || rc=$?
  for pid in "${pids[@]:1}"; do wait "$pid" 2>/dev/null || true; done
  pids=()
  local seconds iterations accuracy status summary ratio_mean ratio_min wasted
  accuracy=$(tail -n 1 "$dir/server.tsv" | cut -f 3)
  # "summary: policy P, S s, I iterations, compute ratio mean M min m, wasted samples W"
  summary=$(grep -o 'summary: .*' "$dir/server.log" | tail -n 1)
  ratio_mean=$(sed -n 's/.*compute ratio mean \([0-9.]*\).*/\1/p' <<<"$summary")
  ratio_min=$(sed -n 's/.*compute ratio mean [0-9.]* min \([0-9.]*\).*/\1/p' <<<"$summary")
  wasted=$(sed -n 's/.*wasted samples \([0-9]*\).*/\1/p' <<<"$summary")
  if [ "$rc" -eq 0 ]; then
    seconds=$(tail -n 1 "$dir/server.tsv" | cut -f 1)
    iterations=$(tail -n 1 "$dir/server.tsv" | cut -f 2)
    status=reached
  else
    seconds=- iterations=- status="missed(rc=$rc)"
  fi
  echo "$seconds $iterations $accuracy ${ratio_mean:--} ${ratio_min:--} ${wasted:--} $status"
}

declare -A results
IFS=, read -r -a policy_list <<<"$policies"
echo "side-by-side: $workers workers, slowdown $slowdown, $model, batch $batch, lr $lr, to $target; logs in $out" >&2
for ((rep = 1; rep <= repeat; rep++)); do
  for policy in "${policy_list[@]}"; do
    echo "side-by-side: run $rep/$repeat of $policy ..." >&2
    results["$policy/$rep"]=$(run_one "$policy" "${policy//:/-}-$rep")
    echo "side-by-side:   ${results["$policy/$rep"]}" >&2
  done
done

# One row per run; with --repeat, a "median" row per policy follows its runs
# (medians over the runs that reached the target).
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.6g\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
column_median() { printf '%s' "$1" | grep . | cut -d ' ' -f "$2" | grep -v '^-$' | median; }
printf 'policy\trun\tseconds_to_target\titerations\taccuracy\tcompute_ratio_mean\tcompute_ratio_min\twasted_samples\tresult\n'
for policy in "${policy_list[@]}"; do
  reached=0 rows=""
  for ((rep = 1; rep <= repeat; rep++)); do
    read -r seconds iterations accuracy ratio_mean ratio_min wasted status <<<"${results["$policy/$rep"]}"
    printf '%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$policy" "$rep" "$seconds" "$iterations" \
      "$accuracy" "$ratio_mean" "$ratio_min" "$wasted" "$status"
    if [ "$status" = reached ]; then
      reached=$((reached + 1))
      rows+="$seconds $iterations $ratio_mean $ratio_min $wasted"$'\n'
    fi
  done
  if [ "$repeat" -gt 1 ]; then
    printf '%s\tmedian\t%s\t%s\t-\t%s\t%s\t%s\treached %d/%d\n' "$policy" \
      "$(column_median "$rows" 1)" "$(column_median "$rows" 2)" "$(column_median "$rows" 3)" \
      "$(column_median "$rows" 4)" "$(column_median "$rows" 5)" "$reached" "$repeat"
  fi
done
