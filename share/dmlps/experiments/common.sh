# Sourced by the experiment scripts: finds the dmlps binaries and parses the
# options they all take. Each script sets NAME and SUMMARY, and USAGE_EXTRA
# for options of its own (parsed by its own handle_option).
#   --repeat R   runs per policy (default 3)
#   --bin DIR    folder holding dmlps-bench and the other binaries
#   --out DIR    keep logs, traces and figures here
#   -- ARGS      passed on to dmlps-bench run (e.g. --workers 8)
set -euo pipefail

repeat=3 bin="${DMLPS_BIN:-}" out="" extra=()
usage() {
  printf 'usage: %s [--repeat R] [--bin DIR] [--out DIR]%s [-- DMLPS-BENCH-RUN-OPTIONS]\n%s\n' \
    "$NAME" "${USAGE_EXTRA:-}" "$SUMMARY"
}
while [ $# -gt 0 ]; do
  case "$1" in
    --repeat) repeat=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) usage; exit 0 ;;
    *)
      if declare -F handle_option >/dev/null && handle_option "$@"; then
        shift "$SHIFT"
      else
        echo "$NAME: error: unknown option '$1'" >&2; usage >&2; exit 64
      fi
      ;;
  esac
done
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ -z "$bin" ]; then
  for candidate in "$here/../../../build/cmd" "$(dirname "$(command -v dmlps-bench 2>/dev/null || echo /nonexistent/x)")"; do
    if [ -x "$candidate/dmlps-bench" ]; then bin=$candidate; break; fi
  done
fi
if [ -z "$bin" ] || [ ! -x "$bin/dmlps-bench" ]; then
  echo "$NAME: error: dmlps-bench not found; build it or pass --bin DIR" >&2
  exit 69
fi
[ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/dmlps-experiment.XXXXXX")
mkdir -p "$out"
# The job secret the servers, shards and evaluators the scripts start
# share (docs/security.md), unless the caller gave one.
if [ -z "${DMLPS_SECRET_FILE:-}" ]; then
  "$bin/dmlps-keygen" -q --force --secret "$out/job.secret"
  export DMLPS_SECRET_FILE="$out/job.secret"
fi

# bench TITLE ARGS...: one dmlps-bench run, its table on stdout under a title.
# The slowdown list for n workers, the last one at 4.
last_slow() {
  local n=$1 i list=""
  for ((i = 1; i < n; i++)); do list+="1,"; done
  echo "${list}4"
}

bench() {
  local title=$1
  shift
  echo "== $title"
  "$bin/dmlps-bench" run --repeat "$repeat" --bin "$bin" "$@" "${extra[@]}"
  echo
}
