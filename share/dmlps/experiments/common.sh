# Sourced by the experiment scripts: their flags, the binaries they run,
# their output folder and the children they start. A script sets NAME and
# SUMMARY (its own options, for --help), sources this file, declares each
# option of its own with `option` (with its default set beforehand), may
# define check_options to check the values, then either
#   bench_script "$@"   for a script around dmlps-bench: adds the options
#                       every such script takes, parses, finds dmlps-bench
#                       and makes --out and the job secret;
#   parse_options "$@"  for any other, which then calls what it needs of
#                       find_bin, make_out, job_secret, kill_children_on_exit.
# The options bench_script adds:
#   --repeat R   runs per policy (default 3)
#   --bin DIR    folder holding dmlps-bench and the other binaries
#   --out DIR    keep logs, traces, tables and figures here
#   -- ARGS      passed on to dmlps-bench (e.g. --workers 8)
# The statistics over dmlps-bench's JSON tables are stats.py's, beside this
# file ($stats).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
stats=$here/stats.py
bin=${DMLPS_BIN:-} out="" extra=()
declare -A option_variable=() option_value=()
option_usage=""

# die STATUS MESSAGE...: "NAME: error: MESSAGE" on stderr, and exit STATUS.
die() {
  local status=$1
  shift
  echo "$NAME: error: $*" >&2
  exit "$status"
}

usage() {
  printf 'usage: %s%s%s\n%s\n' "$NAME" "$option_usage" "${REST:+ [-- $REST]}" "$SUMMARY"
}

# option FLAG VALUE VARIABLE: FLAG sets VARIABLE to the word after it,
# named VALUE in the usage line; with VALUE "" FLAG takes no word and sets
# VARIABLE to 1.
option() {
  option_variable[$1]=$3
  option_value[$1]=$2
  option_usage+=" [$1${2:+ $2}]"
}

# parse_options ARGS...: sets the options' variables; the words after --
# go into `extra` where REST names them (else -- is unknown). Then
# check_options, if the script defines it. Exits 64 on a usage error.
parse_options() {
  while [ $# -gt 0 ]; do
    if [ "$1" = -h ] || [ "$1" = --help ]; then usage; exit 0; fi
    if [ "$1" = -- ] && [ -n "${REST:-}" ]; then
      shift
      extra=("$@")
      break
    fi
    if [ -z "$1" ] || [ -z "${option_variable[$1]:-}" ]; then
      echo "$NAME: error: unknown option '$1'" >&2
      usage >&2
      exit 64
    fi
    if [ -z "${option_value[$1]}" ]; then
      printf -v "${option_variable[$1]}" 1
      shift
      continue
    fi
    [ $# -ge 2 ] || { echo "$NAME: error: $1 needs a value" >&2; usage >&2; exit 64; }
    printf -v "${option_variable[$1]}" '%s' "$2"
    shift 2
  done
  if declare -F check_options >/dev/null; then check_options; fi
}

# count FLAG VALUE: VALUE must be a whole number from 1.
count() { [[ "$2" =~ ^[1-9][0-9]*$ ]] || die 64 "$1: '$2' is not a count"; }
# decimal FLAG VALUE WHAT: VALUE must be a non-negative decimal number.
decimal() { [[ "$2" =~ ^[0-9]+(\.[0-9]+)?$ ]] || die 64 "$1: '$2' is not $3"; }

# find_bin PROGRAM...: unless --bin named it, bin becomes the first of this
# tree's build/cmd and the folder of the first PROGRAM on the PATH that
# holds it; every PROGRAM must be there (else exit 69).
find_bin() {
  local candidate program
  if [ -z "$bin" ]; then
    for candidate in "$here/../../../build/cmd" "$(dirname "$(command -v "$1" 2>/dev/null || echo /nonexistent/x)")"; do
      if [ -x "$candidate/$1" ]; then bin=$candidate; break; fi
    done
  fi
  for program in "$@"; do
    [ -n "$bin" ] && [ -x "$bin/$program" ] ||
      die 69 "$program not found${bin:+ in $bin}; build it or pass --bin DIR"
  done
}

# make_out TAG: out becomes --out, or a fresh folder dmlps-TAG.XXXXXX in
# TMPDIR; made if missing.
make_out() {
  [ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/dmlps-$1.XXXXXX")
  mkdir -p "$out"
}

# job_secret: the job secret the servers, shards and evaluators a script
# starts share (docs/security.md), made in --out unless the caller gave one.
job_secret() {
  if [ -z "${DMLPS_SECRET_FILE:-}" ]; then
    "$bin/dmlps-keygen" -q --force --secret "$out/job.secret"
    export DMLPS_SECRET_FILE="$out/job.secret"
  fi
}

# kill_children_on_exit: every pid a script adds to `children` is killed
# when it exits, however it exits.
children=()
kill_children() {
  local pid
  for pid in "${children[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
kill_children_on_exit() { trap kill_children EXIT; }

# await_endpoint FILE PID: waits up to 30 s for the server PID to write its
# address into FILE; fails (status 1) if it exits first or the time is up.
await_endpoint() {
  local _
  for _ in $(seq 300); do
    [ -s "$1" ] && return 0
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.1
  done
  [ -s "$1" ]
}

# bench_script ARGS...: the options every dmlps-bench script takes and its
# own, parsed; dmlps-bench found, --out made, the job secret.
bench_script() {
  repeat=3
  option_usage=" [--repeat R] [--bin DIR] [--out DIR]$option_usage"
  option_variable[--repeat]=repeat option_value[--repeat]=R
  option_variable[--bin]=bin option_value[--bin]=DIR
  option_variable[--out]=out option_value[--out]=DIR
  REST=${REST:-DMLPS-BENCH-RUN-OPTIONS}
  parse_options "$@"
  find_bin dmlps-bench
  make_out experiment
  job_secret
}

# last_slow N: the slowdown list for N workers, the last one at 4.
last_slow() {
  local n=$1 i list=""
  for ((i = 1; i < n; i++)); do list+="1,"; done
  echo "${list}4"
}

# bench TITLE ARGS...: one dmlps-bench run, its table on stdout under a title.
bench() {
  local title=$1
  shift
  echo "== $title"
  "$bin/dmlps-bench" run --repeat "$repeat" --bin "$bin" "$@" "${extra[@]}"
  echo
}

# keep FILE COMMAND...: COMMAND's output into FILE, once it has succeeded
# (a failure leaves FILE as it was and exits with COMMAND's status), and on
# stdout.
keep() {
  local file=$1 status=0
  shift
  "$@" >"$file.part" || status=$?
  if [ "$status" -ne 0 ]; then
    rm -f "$file.part"
    exit "$status"
  fi
  mv "$file.part" "$file"
  cat "$file"
}
