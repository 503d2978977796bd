#!/usr/bin/env bash
# One of four workers (--workers) attacks a BSP job of mlp:128 on
# Fashion-MNIST under a robust rule (docs/algorithms.md, "Robust aggregation"): "a little is
# enough" (Baruch et al. 2019) with z = 1 and z = 3, and sign flips at the
# norm bound (the worker's gradient reversed and scaled to --max-update-norm).
# Each run r (1..R) uses --seed r, the same for the honest run (every worker
# honest) and every attack, and every run has the same server flags. Prints
# a TSV table, one row per attack: the runs, how many reached the target,
# the median of the iterations to it (a run that did not reach it counts as
# the slowest), that median over the honest one, and each run's iterations
# ("-" for one that did not reach it). The attacker is
# dmlps-byzantine-worker, a test binary (build/tests).
NAME=robust-attacks.sh
SUMMARY='  --repeat R          runs per attack, seeds 1..R (default 3)
  --workers N         workers, one of them the attacker (default 4)
  --aggregate RULE    the rule (default cclip:auto)
  --norm B            --max-update-norm of every run, the sign flips'"'"' norm (default 10)
  --target A          the target accuracy (default 0.84)
  --max-iterations N  a run stops here if it has not reached the target (default 2000)
  --attacks LIST      of honest, alie:Z, signflip (default honest,alie:1,alie:3,signflip)
  --bin DIR           folder holding dmlps-server and dmlps-worker
  --test-bin DIR      folder holding dmlps-byzantine-worker (default DIR/../tests)
  --out DIR           keep the logs and reports here
  -- ARGS             passed on to every dmlps-server'
. "$(dirname "$0")/common.sh"
repeat=3 workers=4 rule=cclip:auto norm=10 target=0.84 max_iterations=2000
attacks=honest,alie:1,alie:3,signflip test_bin=""
option --repeat R repeat
option --workers N workers
option --aggregate RULE rule
option --norm B norm
option --target A target
option --max-iterations N max_iterations
option --attacks LIST attacks
option --bin DIR bin
option --test-bin DIR test_bin
option --out DIR out
REST=SERVER-ARGS
check_options() {
  count --repeat "$repeat"
  count --workers "$workers"
  [ "$workers" -ge 2 ] || die 64 "--workers: an attacker needs an honest worker beside it"
  count --max-iterations "$max_iterations"
  decimal --norm "$norm" "a norm"
  IFS=, read -r -a attack_list <<<"$attacks"
  for attack in "${attack_list[@]}"; do
    [[ "$attack" =~ ^(honest|signflip|alie:[0-9]+(\.[0-9]+)?)$ ]] || die 64 "--attacks: unknown attack '$attack'"
  done
}
parse_options "$@"
find_bin dmlps-server dmlps-worker
[ -n "$test_bin" ] || test_bin="$bin/../tests"
[ -x "$test_bin/dmlps-byzantine-worker" ] ||
  die 69 "dmlps-byzantine-worker not found in $test_bin (a test binary: build the tests or pass --test-bin DIR)"
make_out robust-attacks
kill_children_on_exit

# run ATTACK SEED DIR: one job to the target; its --report in DIR/report.
run() {
  local attack=$1 seed=$2 dir=$3 server
  mkdir -p "$dir"
  rm -f "$dir/endpoint"
  "$bin/dmlps-server" --bind 'tcp://127.0.0.1:*' --endpoint-file "$dir/endpoint" --workers "$workers" \
    --policy bsp --model mlp:128 --target-accuracy "$target" --eval-every 10 \
    --max-iterations "$max_iterations" --seed "$seed" --aggregate "$rule" \
    --max-update-norm "$norm" --report "$dir/report" "${extra[@]}" \
    >"$dir/server.tsv" 2>"$dir/server.log" &
  server=$!
  children=("$server")
  await_endpoint "$dir/endpoint" "$server" || die 70 "the server did not listen (see $dir/server.log)"
  local endpoint rank
  endpoint=$(cat "$dir/endpoint")
  # Rank 0 joins first, alone: the attacker, or an honest worker. A rank
  # picks the worker's shard of the data, so that every run of a seed
  # trains the same shards, the attacker always on shard 0.
  if [ "$attack" != honest ]; then
    local how=$attack
    [ "$attack" = signflip ] && how="signflip:$norm"
    "$test_bin/dmlps-byzantine-worker" "$how" "$endpoint" >"$dir/attacker.out" 2>"$dir/attacker.log" &
  else
    "$bin/dmlps-worker" --server "$endpoint" 2>"$dir/worker-0.log" &
  fi
  children+=("$!")
  for _ in $(seq 300); do
    grep -q "worker 0 joined" "$dir/server.log" && break
    kill -0 "$server" 2>/dev/null || break
    sleep 0.1
  done
  grep -q "worker 0 joined" "$dir/server.log" || die 70 "the first worker did not join (see $dir)"
  for ((rank = 1; rank < workers; rank++)); do
    "$bin/dmlps-worker" --server "$endpoint" 2>"$dir/worker-$rank.log" &
    children+=("$!")
  done
  # The server stops at the target or at --max-iterations; its workers
  # then within seconds. Every wait is bounded.
  local pid waited=0
  while kill -0 "$server" 2>/dev/null && [ "$waited" -lt 36000 ]; do
    sleep 0.1
    waited=$((waited + 1))
  done
  sleep 1
  for pid in "${children[@]}"; do
    for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  children=()
}

# iterations DIR: the iterations to the target, or "-".
iterations() {
  awk -F '\t' '$1 == "target_reached" { r = $2 } $1 == "iterations_to_target" { n = $2 }
    END { print (r == 1 ? n : "-") }' "$1/report" 2>/dev/null || echo -
}

printf 'attack\truns\treached\titerations_median\tratio\titerations\n'
honest_median=""
for attack in "${attack_list[@]}"; do
  list=() reached=0
  for ((seed = 1; seed <= repeat; seed++)); do
    dir="$out/${attack/:/-}-seed$seed"
    run "$attack" "$seed" "$dir"
    n=$(iterations "$dir")
    list+=("$n")
    [ "$n" = - ] || reached=$((reached + 1))
  done
  # A run that missed the target is slower than any that reached it.
  median=$(printf '%s\n' "${list[@]}" | "$stats" median)
  [ "$attack" = honest ] && honest_median=$median
  ratio=$(awk -v m="$median" -v h="$honest_median" \
    'BEGIN { if (h == "" || h == "inf" || m == "inf") print "-"; else printf "%.2f", m / h }')
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$attack" "$repeat" "$reached" "$median" "$ratio" \
    "$(IFS=,; echo "${list[*]}")"
done
