#!/usr/bin/env bash
# --policy auto against the fixed policies it chooses from, under six
# straggler profiles: none; one worker 4x slow; the last worker turning 4x
# slow at its iteration 150; round-robin sleeps; transient delays; the last
# worker's link capped from its iteration 150. One dmlps-bench table per
# profile (median time to the target per policy), then a summary: per
# profile the best fixed policy, auto's median and its ratio to it, and the
# totals. With --sim N,... the same in the simulator at those worker counts.
NAME=auto-profiles.sh
SUMMARY='  --policies LIST  the fixed policies (default bsp,backup:1,ssp:3,lbbsp, auto'"'"'s candidates)
  --profiles LIST  of none,slow,turn-slow,round-robin,delay,bandwidth (default: all six)
  --sim N,...      instead of real runs, simulate at these worker counts
  --workers N      real workers (default 4)'
USAGE_EXTRA=' [--policies LIST] [--profiles LIST] [--sim N,...] [--workers N]'
policies=bsp,backup:1,ssp:3,lbbsp
profiles=none,slow,turn-slow,round-robin,delay,bandwidth sim="" workers=4
handle_option() {
  [ $# -ge 2 ] || return 1
  case "$1" in
    --policies) policies=$2 ;;
    --profiles) profiles=$2 ;;
    --sim) sim=$2 ;;
    --workers) workers=$2 ;;
    *) return 1 ;;
  esac
  SHIFT=2
}
. "$(dirname "$0")/common.sh"

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
    *) echo "$NAME: error: --profiles: unknown profile '$1'" >&2; exit 64 ;;
  esac
}

# run_all MODE N: one table per profile (TSV kept under $out), then the summary.
run_all() {
  local mode=$1 n=$2 profile
  IFS=, read -r -a profile_list <<<"$profiles"
  for profile in "${profile_list[@]}"; do
    profile_args "$profile" "$n"
    local tsv="$out/$mode-$n-$profile.tsv"
    echo "== $mode, $n workers, profile $profile: ${args[*]}"
    if [ "$mode" = run ]; then
      "$bin/dmlps-bench" run --repeat "$repeat" --bin "$bin" --workers "$n" \
        --policies "$policies,auto" "${args[@]}" --out "$out/$mode-$n-$profile" \
        --format tsv "${extra[@]}" | tee "$tsv"
    else
      "$bin/dmlps-bench" sim --repeat "$repeat" --workers "$n" --policies "$policies,auto" \
        "${args[@]}" --format tsv "${extra[@]}" | tee "$tsv"
    fi
    echo
  done
  summary "$mode" "$n"
}

# summary MODE N: per profile the best fixed policy's median time to the
# target, auto's, their ratio; the totals over the profiles.
summary() {
  local mode=$1 n=$2 profile
  echo "== summary, $mode, $n workers: median s to target (- not reached)"
  printf '%-12s %-12s %10s %10s %8s\n' profile best-fixed best-s auto-s ratio
  for profile in "${profile_list[@]}"; do
    awk -F'\t' -v p="$profile" '
      NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
      { t = $col["seconds_median"]; if (t == "" || t == "-") t = "inf"
        if ($1 == "auto") a = t; else if (best == "" || t + 0 < bt + 0) { best = $1; bt = t } }
      END { r = (a == "inf" || bt == "inf") ? "-" : sprintf("%.2f", a / bt)
            printf "%-12s %-12s %10s %10s %8s\n", p, best, bt, a, r }' "$out/$mode-$n-$profile.tsv"
  done | tee "$out/$mode-$n-summary.txt"
  awk '{ b += $3; a += $4 } END { printf "%-12s %-12s %10.2f %10.2f %8.2f\n", "total", "", b, a, a / b }' \
    "$out/$mode-$n-summary.txt"
  echo
}

if [ -z "$sim" ]; then
  run_all run "$workers"
else
  IFS=, read -r -a sizes <<<"$sim"
  for n in "${sizes[@]}"; do run_all sim "$n"; done
fi
