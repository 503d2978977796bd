#!/usr/bin/env bash
# --policy auto against the fixed policies it chooses from, under six
# straggler profiles: none; one worker 4x slow; the last worker turning 4x
# slow at its iteration 150; round-robin sleeps; transient delays; the last
# worker's link capped from its iteration 150 (docs/auto-results.md). One
# dmlps-bench table per profile, kept as JSON under --out
# (MODE-N-PROFILE.json, with its log), each policy's median shown with a
# bootstrap interval; then the summary the goals of auto ask for. The
# statistics are stats.py's, over those tables:
#   (default)     real runs on N workers, summed in rank order
#                 (--deterministic), repeat K on seed K (--seed-per-repeat),
#                 each repeat in an order of its own (--shuffle), so that
#                 runs differ by the policies' choices alone
#   --sim N,...   the same in the simulator, with the policy auto ran the
#                 most iterations under and the confusion table
#   --advise N    per profile a traced BSP run of N iterations and
#                 dmlps-bench advise's pick against the real tables
#   --summary     no runs: the summary of the tables already under --out
#   --pooled, --oracle, --draws N, --efficiency: no runs; stats.py's
#                 pooled, oracle, draws and efficiency over every sitting
#                 under --out (each folder holding real tables, links
#                 followed)
NAME=auto-profiles.sh
SUMMARY='  --policies LIST  the fixed policies (default auto'"'"'s candidates: real runs
                   bsp,backup:1,backup:2,backup:3,ssp:3,lbbsp, as for mlp:128 on 4
                   workers; --sim bsp,backup:1,ssp:3,lbbsp, as for its softmax tables)
  --profiles LIST  of none,slow,turn-slow,round-robin,delay,bandwidth (default: all six)
  --sim N,...      instead of real runs, simulate at these worker counts
  --workers N      real workers (default 4)
  --advise N       per profile a traced BSP run of N iterations and advise'"'"'s pick
                   against the real tables already under --out
  --summary        no runs: summarize the tables already under --out
  --pooled         no runs: summarize every real run under --out, sittings pooled
  --oracle         no runs: what knowing the best policy scores, sitting against sitting
  --draws N        no runs: how often N sittings drawn from the runs under --out pass
  --efficiency     no runs: efficiency rows from the real runs under --out'
. "$(dirname "$0")/common.sh"
policies="" profiles=none,slow,turn-slow,round-robin,delay,bandwidth sim="" workers=4 advise=""
only_summary="" efficiency="" pooled="" oracle="" draws=""
option --policies LIST policies
option --profiles LIST profiles
option --sim N,... sim
option --workers N workers
option --advise N advise
option --summary "" only_summary
option --pooled "" pooled
option --oracle "" oracle
option --draws N draws
option --efficiency "" efficiency
check_options() {
  [ -z "$draws" ] || [[ $draws =~ ^[1-9][0-9]{0,5}$ ]] ||
    die 64 "--draws: '$draws' is not a count from 1 to 999999"
}
bench_script "$@"
if [ -z "$policies" ]; then
  # As auto's candidates (docs/auto.md, "Candidates"): backup counts beyond 1 where the
  # job's efficiency table has rows of their own (the default job on 4
  # workers).
  if [ -n "$sim" ]; then policies=bsp,backup:1,ssp:3,lbbsp; else
    policies=bsp,backup:1,backup:2,backup:3,ssp:3,lbbsp
  fi
fi
IFS=, read -r -a profile_list <<<"$profiles"

# profile_args NAME N: dmlps-bench's flags for profile NAME with N workers.
profile_args() {
  local last=$(($2 - 1))
  case "$1" in
    none) args=(--slowdown 1) ;;
    slow) args=(--slowdown "$(last_slow "$2")") ;;
    turn-slow) args=(--slowdown 1 --slowdown-schedule "$last=0:1,150:4") ;;
    round-robin) args=(--slowdown 1 --round-robin-ms 20) ;;
    delay) args=(--slowdown 1 --delay-ms 50 --delay-prob 0.2) ;;
    bandwidth) args=(--slowdown 1 --bandwidth-schedule "$last=150:200") ;;
    *) die 64 "--profiles: unknown profile '$1'" ;;
  esac
}
for profile in "${profile_list[@]}"; do profile_args "$profile" 2; done

# run_all MODE N: one table per profile (JSON and log kept under --out).
run_all() {
  local mode=$1 n=$2 profile base
  for profile in "${profile_list[@]}"; do
    profile_args "$profile" "$n"
    base="$out/$mode-$n-$profile"
    echo "== $mode, $n workers, profile $profile: ${args[*]} ($(date -u '+%F %T') UTC; load $(cut -d' ' -f1-3 /proc/loadavg))"
    if [ "$mode" = run ]; then
      "$bin/dmlps-bench" run --repeat "$repeat" --bin "$bin" --workers "$n" --deterministic \
        --seed-per-repeat --shuffle --policies "$policies,auto" "${args[@]}" --out "$base" \
        --format json "${extra[@]}" >"$base.json" 2>"$base.log"
    else
      "$bin/dmlps-bench" sim --repeat "$repeat" --workers "$n" --policies "$policies,auto" \
        "${args[@]}" --format json "${extra[@]}" >"$base.json" 2>"$base.log"
    fi
    "$stats" medians "$base.json"
    echo
  done
}

# summary MODE N: the summary of the tables MODE-N-PROFILE.json under
# --out, kept in MODE-N-summary.txt; for sim with auto's choices.
summary() {
  local mode=$1 n=$2 choice=()
  [ "$mode" = sim ] && choice=(--choice)
  echo "== summary, $mode, $n workers: median s to target (- not reached)"
  keep "$out/$mode-$n-summary.txt" "$stats" summary --profiles "$profiles" \
    --policies "$policies" "${choice[@]}" "$out/$mode-$n-{profile}.json"
  echo
}

# advise_all N: per profile, a traced BSP run of N iterations and advise
# on its traces (advise-PROFILE.json under --out).
advise_all() {
  local iterations=$1 profile base
  for profile in "${profile_list[@]}"; do
    profile_args "$profile" "$workers"
    base="$out/advise-$profile"
    echo "== advise, profile $profile: a BSP run of $iterations iterations, ${args[*]} (load $(cut -d' ' -f1-3 /proc/loadavg))"
    rm -rf "$base"
    "$bin/dmlps-bench" run --repeat 1 --bin "$bin" --workers "$workers" --policies bsp \
      "${args[@]}" --target 0 --max-iterations "$iterations" --trace-dir "$base" \
      --format json "${extra[@]}" >"$base.run.json" 2>"$base.run.log"
    "$bin/dmlps-bench" advise "$base/bsp-1" --candidates "$policies" --format json \
      >"$base.json" 2>"$base.log"
  done
  echo "== advise against the real medians ($workers workers; - not reached)"
  keep "$out/advise-summary.txt" "$stats" advise --profiles "$profiles" --policies "$policies" \
    --advice "$out/advise-{profile}.json" "$out/run-$workers-{profile}.json"
}

# sittings: one table template per folder under --out (links followed)
# that holds a real table of --workers workers.
sittings() {
  local dirs
  dirs=$(find -L "$out" -name "run-$workers-*.json" -printf '%h\n' | sort -u)
  [ -n "$dirs" ] || die 66 "no real runs of $workers workers under $out"
  sed "s|\$|/run-$workers-{profile}.json|" <<<"$dirs"
}

if [ -n "$efficiency$pooled$oracle$draws" ]; then
  list=$(sittings)
  mapfile -t templates <<<"$list"
  what=(--profiles "$profiles" --policies "$policies")
  if [ -n "$efficiency" ]; then
    "$stats" efficiency --policies "$policies" "${templates[@]}"
  elif [ -n "$pooled" ]; then
    keep "$out/pooled-$workers-summary.txt" "$stats" pooled "${what[@]}" "${templates[@]}"
  elif [ -n "$oracle" ]; then
    "$stats" oracle "${what[@]}" "${templates[@]}"
  else
    "$stats" draws --draws "$draws" "${what[@]}" "${templates[@]}"
  fi
elif [ -n "$advise" ]; then
  if [ -n "$only_summary" ]; then
    keep "$out/advise-summary.txt" "$stats" advise --profiles "$profiles" --policies "$policies" \
      --advice "$out/advise-{profile}.json" "$out/run-$workers-{profile}.json"
  else
    advise_all "$advise"
  fi
elif [ -z "$sim" ]; then
  [ -n "$only_summary" ] || run_all run "$workers"
  summary run "$workers"
else
  IFS=, read -r -a sizes <<<"$sim"
  for n in "${sizes[@]}"; do
    [ -n "$only_summary" ] || run_all sim "$n"
    summary sim "$n"
  done
fi
