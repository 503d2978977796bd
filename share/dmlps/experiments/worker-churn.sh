#!/usr/bin/env bash
# Churn without loss: trains a job to its target without failures, then
# again while a worker is killed (kill -9) every --every seconds and a new
# one started in its place at once, as an operator's supervisor would; the
# runs alternate, so that both see the same machine. Each worker started in
# a killed one's place must begin from the server's very model: the digest
# its first model carried (docs/algorithms-robustness.md) equals the one
# the server logged sending it. Prints a line per run and a summary with
# the median time to target of each kind, their ratio, and the median of
# each pair's ratio (a run with churn over the run without just before it,
# which the machine's other load shifts less); exits 1 when a
# run missed its target or a rejoin's digest differed, 70 when a run could
# not be run.
NAME=worker-churn.sh
SUMMARY='  --runs N         runs of each kind (default 3)
  --workers W      workers (default 4)
  --model SPEC     the model (default mlp:512)
  --policy P       the policy (default bsp)
  --target A       the test accuracy to reach (default 0.85)
  --every T        kill a worker every T seconds (default 15)
  --bin DIR        folder holding dmlps-server and dmlps-worker
  --out DIR        keep the logs here
  -- ARGS          passed on to dmlps-server'
. "$(dirname "$0")/common.sh"
runs=3 workers=4 model=mlp:512 policy=bsp target=0.85 every=15
option --runs N runs
option --workers W workers
option --model SPEC model
option --policy P policy
option --target A target
option --every T every
option --bin DIR bin
option --out DIR out
REST=SERVER-ARGS
check_options() {
  count --runs "$runs"
  count --workers "$workers"
  [ "$workers" -ge 2 ] || die 64 "--workers: churn needs 2 or more"
  decimal --every "$every" seconds
  [ "$every" != 0 ] || die 64 "--every: '$every' is not seconds"
  [[ "$target" =~ ^0?\.[0-9]+$ ]] || die 64 "--target: '$target' is not an accuracy in (0, 1)"
}
parse_options "$@"
find_bin dmlps-server dmlps-worker dmlps-keygen
make_out churn
job_secret
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
kill_children_on_exit

# one_run DIR CHURN: one job to the target in DIR; with CHURN 1 a worker is
# killed every --every seconds, in rank order, and replaced at once. Prints
# the seconds to target (or "missed"), the rejoins and the digests checked.
one_run() {
  local dir=$1 churn=$2 server k victim n=0 started next
  mkdir -p "$dir"
  "$bin/dmlps-server" --bind 'tcp://127.0.0.1:*' --endpoint-file "$dir/endpoint" \
    --workers "$workers" --policy "$policy" --model "$model" --target-accuracy "$target" \
    --max-seconds 900 "${extra[@]}" >"$dir/server.tsv" 2>"$dir/server.log" &
  server=$!
  children+=("$server")
  await_endpoint "$dir/endpoint" "$server" || die 70 "the server did not listen (see $dir)"
  local endpoint pids=()
  endpoint=$(cat "$dir/endpoint")
  for ((k = 0; k < workers; k++)); do
    "$bin/dmlps-worker" --server "$endpoint" --threads 1 2>"$dir/worker-$k.log" &
    pids[k]=$!
    children+=("${pids[k]}")
  done
  started=$(date +%s.%N)
  next=$every
  while kill -0 "$server" 2>/dev/null; do
    sleep 0.2
    [ "$churn" -eq 1 ] || continue
    if awk -v s="$started" -v now="$(date +%s.%N)" -v e="$next" 'BEGIN { exit !(now - s >= e) }'; then
      victim=$((n % workers))
      kill -9 "${pids[victim]}" 2>/dev/null || true
      n=$((n + 1))
      "$bin/dmlps-worker" --server "$endpoint" --threads 1 2>"$dir/rejoin-$n.log" &
      pids[victim]=$!
      children+=("${pids[victim]}")
      next=$(awk -v e="$next" -v t="$every" 'BEGIN { print e + t }')
    fi
  done
  wait "$server" || true
  local seconds checked=0 equal=0 line version digest
  seconds=$(sed -nE 's/.*reached accuracy [0-9.]+ >= [0-9.]+ after ([0-9.]+) s.*/\1/p' "$dir/server.log")
  for ((k = 1; k <= n; k++)); do
    line=$(grep -E "version [0-9]+ of the model came whole" "$dir/rejoin-$k.log" || true)
    [ -n "$line" ] || continue  # killed or stopped before its first model
    checked=$((checked + 1))
    version=$(sed -E 's/.*version ([0-9]+) of the model.*/\1/' <<<"$line")
    digest=$(sed -E 's/.*digest ([0-9a-f]+) equals.*/\1/' <<<"$line")
    grep -qE "sent worker [0-9]+ version $version of the model, digest $digest$" "$dir/server.log" &&
      equal=$((equal + 1))
  done
  echo "${seconds:-missed} $n $checked $equal"
}

median() { "$stats" median; }

free_times=() churn_times=() pair_ratios=() failed=0 rejoins=0 checked=0 equal=0
for ((r = 1; r <= runs; r++)); do
  read -r s _ _ _ < <(one_run "$out/free-$r" 0)
  echo "run $r without failures: ${s} s to $target"
  [ "$s" != missed ] && free_times+=("$s") || failed=1
  read -r s n c e < <(one_run "$out/churn-$r" 1)
  echo "run $r with a worker killed every $every s: ${s} s to $target; $n killed and replaced, $c checked their first model, $e digests equal the server's"
  [ "$s" != missed ] && churn_times+=("$s") || failed=1
  if [ "$s" != missed ] && [ "${#free_times[@]}" -eq "$r" ]; then
    pair_ratios+=("$(awk -v a="$s" -v b="${free_times[r - 1]}" 'BEGIN { printf "%.3f", a / b }')")
  fi
  rejoins=$((rejoins + n)) checked=$((checked + c)) equal=$((equal + e))
done
free=$(printf '%s\n' "${free_times[@]}" | median)
churned=$(printf '%s\n' "${churn_times[@]}" | median)
ratio=$(awk -v a="$churned" -v b="$free" 'BEGIN { if (a == "-" || b == "-") print "-"; else printf "%.2f", a / b }')
paired=$(printf '%s\n' "${pair_ratios[@]}" | median)
echo "$runs runs each, $workers workers, $model under $policy to $target: median $free s without failures, $churned s with a worker killed every $every s (${ratio}x; paired runs' ratios ${pair_ratios[*]}, median ${paired}x); $rejoins replaced, $checked checked their first model, $equal digests equal the server's"
[ "$failed" -eq 0 ] && [ "$checked" -eq "$equal" ] || exit 1
