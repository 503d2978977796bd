#!/usr/bin/env bash
# Runs dmlps under the sanitizers, then fuzzes it briefly: builds the unit
# tests, dmlps-server, dmlps-worker and the test peer with clang twice, with
# AddressSanitizer + UndefinedBehaviorSanitizer (build-asan) and with
# ThreadSanitizer (build-tsan), runs the unit tests and a few cluster
# scenarios under each, then runs each libFuzzer target (fuzz.sh), built in
# build-asan with coverage added (one compile of the library for both). Any
# sanitizer report fails the run, also one from a process whose exit status
# a test does not look at: reports go to files under --out, printed at the end.
# Exit status: 0 clean, 1 a test failed, a sanitizer reported or a fuzz
# target crashed, 64 usage, 69 clang or its sanitizer runtimes are missing,
# 70 a build failed.
set -euo pipefail

NAME=check-hardening.sh
usage() {
  cat <<EOF
usage: $NAME [--steps LIST] [--fuzz-seconds S] [--jobs N] [--out DIR]
  --steps LIST      comma-separated, of asan,tsan,fuzz (default all three)
  --fuzz-seconds S  run each fuzz target for S seconds (default 20)
  --jobs N          parallel compile jobs and tests (default: nproc)
  --out DIR         keep sanitizer reports, test and fuzz logs here (default:
                    a new folder under \${TMPDIR:-/tmp})
  CXX               the clang++ to use (default clang++)
The builds go to build-asan and build-tsan in the source tree; the fuzz
targets are built in build-asan when the asan step comes first (as by
default), else in build-fuzz.
EOF
}

# The tests each build runs (ctest -R): the unit tests and cluster scenarios
# that cover the server's and worker's threads, sockets, bad peers and
# signals, with little training so that they stay short when instrumented.
ASAN_TESTS='^(unit|cli\.(bsp_trains|sharded_servers|wbsp_overlap_trains|backup_trains|bad_input|bad_worker|garbage_peer|no_server|signals|libsvm_trains))$'
TSAN_TESTS='^(unit|cli\.(bsp_trains|sharded_servers|wbsp_overlap_trains|backup_trains|garbage_peer|signals|server_threads))$'

. "$(dirname "${BASH_SOURCE[0]}")/options.sh"

steps="asan,tsan,fuzz" fuzz_seconds=20 jobs="" out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --steps|--fuzz-seconds|--jobs|--out)
      need_value "$1" $#
      case "$1" in
        --steps) steps=$2 ;; --fuzz-seconds) fuzz_seconds=$2 ;; --jobs) jobs=$2 ;; --out) out=$2 ;;
      esac
      shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) unknown_option "$1" ;;
  esac
done
errors=0
check_whole --fuzz-seconds "$fuzz_seconds" || errors=1
[ -z "$jobs" ] || check_whole --jobs "$jobs" || errors=1
IFS=, read -r -a step_list <<<"$steps"
for s in "${step_list[@]}"; do
  case "$s" in
    asan|tsan|fuzz) ;;
    *) echo "$NAME: error: --steps: unknown step '$s' (asan, tsan, fuzz)" >&2; errors=1 ;;
  esac
done
[ "$errors" -eq 0 ] || exit 64

source=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
[ -n "$jobs" ] || jobs=$(nproc 2>/dev/null || echo 2)
cxx=${CXX:-clang++}
[ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/dmlps-hardening.XXXXXX")
mkdir -p "$out"
out=$(cd "$out" && pwd)

# Unlike fuzz.sh, a missing clang is an error here, not a skip: CI runs this.
if ! command -v "$cxx" >/dev/null || ! "$cxx" --version 2>/dev/null | grep -qi clang; then
  echo "$NAME: error: '$cxx' is not clang; run share/dmlps/setup-debian.sh or set CXX" >&2
  exit 69
fi
printf '#include <thread>\nint main() { std::thread t([] {}); t.join(); return 0; }\n' >"$out/probe.cc"
for s in address,undefined thread; do
  if ! "$cxx" -fsanitize="$s" "$out/probe.cc" -o "$out/probe-${s%%,*}" 2>"$out/probe.log"; then
    major=$("$cxx" -dumpversion 2>/dev/null | cut -d. -f1)
    echo "$NAME: error: $cxx cannot link -fsanitize=$s: its runtime is missing" \
         "(on Debian: apt-get install libclang-rt-${major:-N}-dev)" >&2
    exit 69
  fi
done
# ThreadSanitizer in older clang cannot map its shadow memory where the
# kernel randomises mmap over more bits; without randomisation it can.
norandom=()
if ! "$out/probe-thread" >/dev/null 2>&1; then
  if setarch "$(uname -m)" -R "$out/probe-thread" >/dev/null 2>&1; then
    norandom=(setarch "$(uname -m)" -R)
    echo "$NAME: ThreadSanitizer needs address space randomisation off here; using setarch -R" >&2
  else
    echo "$NAME: error: a ThreadSanitizer program does not run on this machine" >&2
    exit 69
  fi
fi

failed=()
fuzz_build="$source/build-fuzz"  # build-asan once the asan step built the fuzz targets there
started=$SECONDS
step_start=0
begin() {
  step_start=$SECONDS
  echo "== $NAME: $*" >&2
}
elapsed() { echo "$((SECONDS - step_start)) s"; }

# build NAME SANITIZERS: configures and builds what the tests need in build-NAME,
# with line tables only for debug information: the reports' stacks name
# file and line, and the compiler writes no types or variables (a sixth
# less compile time here).
# With FUZZ=ON the build also has the libFuzzer targets, their library
# being the sanitized one with coverage added (tests/fuzz/CMakeLists.txt),
# so that the fuzz step needs no build of its own.
build() {
  local name=$1 sanitize=$2 fuzz=${3:-OFF} dir="$source/build-$1" extra_targets=()
  if [ "$fuzz" = ON ]; then extra_targets=(dmlps-fuzz); fi
  echo "$NAME: $name: building in $dir (log: $out/$name-build.log)" >&2
  if ! { cmake -S "$source" -B "$dir" -DCMAKE_CXX_COMPILER="$cxx" \
           -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
           -DDMLPS_SANITIZE="$sanitize" -DDMLPS_BUILD_MAN=OFF -DDMLPS_FUZZ="$fuzz" &&
         cmake --build "$dir" -j "$jobs" --target dmlps-unit-tests dmlps-server dmlps-worker \
           dmlps-keygen dmlps-test-peer "${extra_targets[@]}"; } >"$out/$name-build.log" 2>&1; then
    tail -n 30 "$out/$name-build.log" >&2
    echo "$NAME: error: the $name build failed; see $out/$name-build.log" >&2
    exit 70
  fi
}

# check NAME REGEX PREFIX...: runs the tests matching REGEX in build-NAME
# (ctest under PREFIX, --jobs at once, as the README's test command runs
# them), then fails the step on any sanitizer report file.
check() {
  local name=$1 regex=$2
  shift 2
  local reports="$out/$name-reports" rc=0
  rm -rf "$reports"
  mkdir -p "$reports"
  "$@" ctest --test-dir "$source/build-$name" --output-on-failure --no-tests=error -R "$regex" -j "$jobs" \
    >"$out/$name-ctest.log" 2>&1 || rc=$?
  grep -E '^ *[0-9]+/[0-9]+ Test|tests passed|tests failed' "$out/$name-ctest.log" >&2 || true
  if [ "$rc" -ne 0 ]; then
    failed+=("$name: tests failed (see $out/$name-ctest.log)")
    # What failed, where only this output survives (CI): ctest's Failed
    # and Timeout lines, each failing check with its test case (a few
    # lines above it; the passing cases' messages are left out), and each
    # scenario's FAIL line with its logs' tails after it.
    echo "--- $name: what failed (from $out/$name-ctest.log)" >&2
    {
      grep -E -B 4 -A 3 'ERROR:|\*\*\*(Failed|Timeout|Exception)' "$out/$name-ctest.log" || true
      grep -E -A 40 '^FAIL: ' "$out/$name-ctest.log" || true
    } | head -n 200 >&2
  fi
  local found
  found=$(find "$reports" -type f | sort)
  if [ -n "$found" ]; then
    failed+=("$name: $(echo "$found" | wc -l) sanitizer report(s) in $reports")
    for f in $found; do
      echo "--- $f" >&2
      head -n 60 "$f" >&2
    done
  fi
}

for s in "${step_list[@]}"; do
  case "$s" in
    asan)
      begin "AddressSanitizer + UndefinedBehaviorSanitizer"
      # A fuzz step after this one fuzzes this build's targets.
      with_fuzz=OFF
      case ",$steps," in *,asan,*fuzz,*) fuzz_build="$source/build-asan" with_fuzz=ON ;; esac
      build asan address,undefined "$with_fuzz"
      reports="$out/asan-reports"
      ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:check_initialization_order=1:strict_init_order=1:log_path=$reports/asan" \
      UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$reports/ubsan" \
        check asan "$ASAN_TESTS" env
      echo "$NAME: asan: $(elapsed)" >&2
      ;;
    tsan)
      begin "ThreadSanitizer"
      build tsan thread
      reports="$out/tsan-reports"
      TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$source/share/dmlps/tsan.supp:log_path=$reports/tsan" \
        check tsan "$TSAN_TESTS" env "${norandom[@]}"
      echo "$NAME: tsan: $(elapsed)" >&2
      ;;
    fuzz)
      begin "libFuzzer targets, ${fuzz_seconds} s each"
      rc=0
      CXX="$cxx" "$source/share/dmlps/fuzz.sh" --seconds "$fuzz_seconds" --jobs "$jobs" \
        --build "$fuzz_build" --out "$out/fuzz" >"$out/fuzz.tsv" || rc=$?
      cat "$out/fuzz.tsv" >&2
      if [ "$rc" -ne 0 ]; then
        failed+=("fuzz: fuzz.sh exited $rc (see $out/fuzz)")
      fi
      echo "$NAME: fuzz: $(elapsed)" >&2
      ;;
  esac
done

echo "== $NAME: done in $((SECONDS - started)) s; logs in $out" >&2
# CPU time of the builds, tests and fuzzers (user, system): on a machine
# shared with other work, the wall time above alone says little.
times >"$out/times"  # here, not in a pipeline's subshell, which has used none
echo "$NAME: CPU time: $(tail -n 1 "$out/times")" >&2
if [ "${#failed[@]}" -gt 0 ]; then
  for f in "${failed[@]}"; do echo "$NAME: FAILED: $f" >&2; done
  exit 1
fi
echo "$NAME: all clean" >&2
