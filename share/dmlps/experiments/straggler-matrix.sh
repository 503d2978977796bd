#!/usr/bin/env bash
# Every policy under four straggler profiles: none; one worker 4x slow (a
# steady straggler); round-robin (in iteration t the worker of rank t mod N
# sleeps); and transient delays (each step of each worker sleeps with some
# probability). Real clusters on this host, and with --sim the same matrix
# in the simulator at larger sizes. One table per profile and size.
NAME=straggler-matrix.sh
SUMMARY='  --policies LIST  the policies (default: every one, old and new)
  --profiles LIST  of none,slow,round-robin,delay (default: all four)
  --rr-ms D        the round-robin sleep (default 20)
  --delay-ms D     the transient delay (default 50) ...
  --prob P         ... with this probability per step (default 0.2)
  --sim N,...      instead of real runs, simulate at these worker counts
  --workers N      real workers (default 4)'
. "$(dirname "$0")/common.sh"
policies=bsp,asp,ssp:3,dssp,backup:1,wbsp,wbsp-overlap,abps,lbbsp,lbbsp-gpu,token,localsgd,async-localsgd,async-localsgd-dylu,sync-switch
profiles=none,slow,round-robin,delay rr=20 delay=50 prob=0.2 sim="" workers=4
option --policies LIST policies
option --profiles LIST profiles
option --rr-ms D rr
option --delay-ms D delay
option --prob P prob
option --sim N,... sim
option --workers N workers
bench_script "$@"

# matrix MODE N: one table per profile, MODE run or sim, N workers.
matrix() {
  local mode=$1 n=$2 profile args
  IFS=, read -r -a profile_list <<<"$profiles"
  for profile in "${profile_list[@]}"; do
    case "$profile" in
      none) args=(--slowdown 1) ;;
      slow) args=(--slowdown "$(last_slow "$n")") ;;
      round-robin) args=(--slowdown 1 --round-robin-ms "$rr") ;;
      delay) args=(--slowdown 1 --delay-ms "$delay" --delay-prob "$prob") ;;
      *) die 64 "--profiles: unknown profile '$profile' (none, slow, round-robin, delay)" ;;
    esac
    echo "== $mode, $n workers, profile $profile: ${args[*]}"
    if [ "$mode" = run ]; then
      "$bin/dmlps-bench" run --repeat "$repeat" --bin "$bin" --workers "$n" --policies "$policies" \
        "${args[@]}" --out "$out/$mode-$n-$profile" "${extra[@]}"
    else
      "$bin/dmlps-bench" sim --repeat "$repeat" --workers "$n" --policies "$policies" \
        "${args[@]}" "${extra[@]}"
    fi
    echo
  done
}

if [ -z "$sim" ]; then
  matrix run "$workers"
else
  IFS=, read -r -a sizes <<<"$sim"
  for n in "${sizes[@]}"; do matrix sim "$n"; done
fi
