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
USAGE_EXTRA=' [--policies LIST] [--profiles LIST] [--rr-ms D] [--delay-ms D] [--prob P] [--sim N,...] [--workers N]'
policies=bsp,asp,ssp:3,dssp,backup:1,wbsp,wbsp-overlap,abps,lbbsp,lbbsp-gpu,token,localsgd,async-localsgd,async-localsgd-dylu,sync-switch
profiles=none,slow,round-robin,delay rr=20 delay=50 prob=0.2 sim="" workers=4
handle_option() {
  [ $# -ge 2 ] || return 1
  case "$1" in
    --policies) policies=$2 ;;
    --profiles) profiles=$2 ;;
    --rr-ms) rr=$2 ;;
    --delay-ms) delay=$2 ;;
    --prob) prob=$2 ;;
    --sim) sim=$2 ;;
    --workers) workers=$2 ;;
    *) return 1 ;;
  esac
  SHIFT=2
}
. "$(dirname "$0")/common.sh"

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
      *) echo "$NAME: error: --profiles: unknown profile '$profile' (none, slow, round-robin, delay)" >&2
         exit 64 ;;
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
