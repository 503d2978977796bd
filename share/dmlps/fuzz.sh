#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang and runs each for a
# while on a copy of its seed corpus. Prints one TSV row per target on stdout
# (progress and the fuzzers' logs go to files, named on stderr):
#   target  executions  exec_per_second  new_inputs  result
# Exit status: 0 no crash, 1 a target crashed (the reproducer is named in the
# result column), 77 clang or its libFuzzer runtime is missing (skip),
# 64 usage, 66 no source tree, 70 the build failed.
set -euo pipefail

NAME=fuzz.sh
usage() {
  cat <<EOF
usage: $NAME [--seconds S] [--build DIR] [--targets LIST] [--jobs N] [--out DIR]
              [--lock FILE] [--source DIR] [-- LIBFUZZER-OPTIONS]
  --seconds S     run each target for S seconds (default 30)
  --build DIR     clang build folder (default SOURCE/build-fuzz); one already
                  configured with DMLPS_FUZZ=ON is built as it is configured
  --targets LIST  comma-separated, of codec,intake,idx,libsvm,trace,checkpoint,compress
                  (default all)
  --jobs N        parallel compile jobs (default: nproc)
  --out DIR       keep corpora, logs and crash reproducers here (default: a
                  new folder under \${TMPDIR:-/tmp})
  --lock FILE     hold flock(1) on FILE while each target runs, so that timing
                  measurements elsewhere can wait for the fuzzer
  --source DIR    the dmlps source tree (default: the one holding this script)
  CXX             the clang++ to use (default clang++)
EOF
}

. "$(dirname "${BASH_SOURCE[0]}")/options.sh"

seconds=30 build="" targets="codec,intake,idx,libsvm,trace,checkpoint,compress" jobs="" out="" lock="" source="" extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds|--build|--targets|--jobs|--out|--lock|--source)
      need_value "$1" $#
      case "$1" in
        --seconds) seconds=$2 ;; --build) build=$2 ;; --targets) targets=$2 ;;
        --jobs) jobs=$2 ;; --out) out=$2 ;; --lock) lock=$2 ;; --source) source=$2 ;;
      esac
      shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) usage; exit 0 ;;
    *) unknown_option "$1" ;;
  esac
done

errors=0
check_whole --seconds "$seconds" || errors=1
[ -z "$jobs" ] || check_whole --jobs "$jobs" || errors=1
IFS=, read -r -a target_list <<<"$targets"
for t in "${target_list[@]}"; do
  case "$t" in
    codec|intake|idx|libsvm|trace|checkpoint|compress) ;;
    *) echo "$NAME: error: --targets: unknown target '$t' (codec, intake, idx, libsvm, trace, checkpoint, compress)" >&2; errors=1 ;;
  esac
done
if [ -n "$lock" ] && ! command -v flock >/dev/null; then
  echo "$NAME: error: --lock needs flock(1) (util-linux)" >&2; errors=1
fi
[ "$errors" -eq 0 ] || exit 64

if [ -z "$source" ]; then
  source=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
fi
if [ ! -f "$source/tests/fuzz/CMakeLists.txt" ]; then
  echo "$NAME: error: $source: not a dmlps source tree (no tests/fuzz); pass --source DIR" >&2
  exit 66
fi
source=$(cd "$source" && pwd)
[ -n "$build" ] || build="$source/build-fuzz"
[ -n "$jobs" ] || jobs=$(nproc 2>/dev/null || echo 2)

# Skip, not fail, where this machine cannot fuzz.
cxx=${CXX:-clang++}
if ! command -v "$cxx" >/dev/null || ! "$cxx" --version 2>/dev/null | grep -qi clang; then
  echo "$NAME: skipped: fuzzing needs clang (libFuzzer); '$cxx' is not clang (install clang or set CXX)" >&2
  exit 77
fi
probe=$(mktemp -d "${TMPDIR:-/tmp}/dmlps-fuzz-probe.XXXXXX")
trap 'rm -rf "$probe"' EXIT
printf '#include <cstddef>\n#include <cstdint>\nextern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n' \
  >"$probe/probe.cc"
if ! "$cxx" -fsanitize=fuzzer,address,undefined "$probe/probe.cc" -o "$probe/probe" 2>"$probe/log"; then
  major=$("$cxx" -dumpversion 2>/dev/null | cut -d. -f1)
  echo "$NAME: skipped: $cxx cannot link -fsanitize=fuzzer: the libFuzzer runtime is missing" \
       "(on Debian: apt-get install libclang-rt-${major:-N}-dev)" >&2
  exit 77
fi

[ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/dmlps-fuzz.XXXXXX")
mkdir -p "$out"
out=$(cd "$out" && pwd)

# A build configured for fuzzing already (check-hardening.sh's build-asan)
# is built as it is configured; any other is configured for it here.
configure=(cmake -S "$source" -B "$build" -DCMAKE_CXX_COMPILER="$cxx"
           -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDMLPS_FUZZ=ON -DDMLPS_BUILD_TESTS=OFF
           -DDMLPS_BUILD_MAN=OFF)
if grep -qx 'DMLPS_FUZZ:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then configure=(true); fi
echo "$NAME: building in $build (log: $out/build.log)" >&2
if ! { "${configure[@]}" && cmake --build "$build" -j "$jobs" --target dmlps-fuzz; } \
     >"$out/build.log" 2>&1; then
  tail -n 30 "$out/build.log" >&2
  echo "$NAME: error: the build failed; see $out/build.log" >&2
  exit 70
fi

printf 'target\texecutions\texec_per_second\tnew_inputs\tresult\n'
crashed=0
for t in "${target_list[@]}"; do
  dir="$out/$t"
  rm -rf "$dir"
  mkdir -p "$dir/corpus" "$dir/artifacts"
  cp "$source/tests/fuzz/corpus/$t/"* "$dir/corpus/"
  if [ "$t" = trace ]; then cp "$source"/tests/data/*.trace "$dir/corpus/"; fi
  # Inputs that once crashed a target run again as seeds, so a regression
  # shows on the first execution.
  for crash in "$source/tests/fuzz/crashes/$t"-*; do
    if [ -f "$crash" ]; then cp "$crash" "$dir/corpus/"; fi
  done
  seeds=$(find "$dir/corpus" -type f | wc -l)
  run=("$build/tests/fuzz/dmlps-fuzz-$t" -max_total_time="$seconds" -print_final_stats=1
       -artifact_prefix="$dir/artifacts/" "${extra[@]}" "$dir/corpus")
  if [ -n "$lock" ]; then run=(flock "$lock" "${run[@]}"); fi
  echo "$NAME: $t: fuzzing for ${seconds} s from $seeds seeds (log: $dir/fuzz.log)" >&2
  rc=0
  "${run[@]}" >"$dir/fuzz.log" 2>&1 || rc=$?
  executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/fuzz.log" | tail -n 1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$dir/fuzz.log" | tail -n 1)
  found=$(( $(find "$dir/corpus" -type f | wc -l) - seeds ))
  artifact=$(find "$dir/artifacts" -type f | head -n 1)
  if [ "$rc" -eq 0 ] && [ -z "$artifact" ]; then
    result=ok
  else
    crashed=1
    result="crash (rc $rc): ${artifact:-no reproducer written; see $dir/fuzz.log}"
    grep -m 1 -E '^==[0-9]+==ERROR|runtime error|contract violated|ERROR: libFuzzer' \
      "$dir/fuzz.log" >&2 || true
  fi
  printf '%s\t%s\t%s\t%s\t%s\n' "$t" "${executions:-?}" "${rate:-?}" "$found" "$result"
done
echo "$NAME: corpora, logs and reproducers in $out" >&2
exit "$crashed"
