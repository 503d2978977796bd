#!/usr/bin/env bash
# Checks the CUDA backend on a machine with an NVIDIA GPU, in one command:
#   1. builds dmlps with -DDMLPS_WITH_CUDA=ON (or, with --no-build, takes
#      the build in --build as it is);
#   2. runs the GPU tests (every kernel and every model's loss and gradient
#      against the CPU backend; here they must run, not skip), then the unit
#      tests and the CLI scenarios about devices, the CNN and profiling,
#      then dmlps.torch on the GPU (gpu-check-torch.py: a small module on
#      cuda trains against a server on loopback, and one step's gradient
#      matches the CPU's; skipped, not failed, without the Python module or
#      where --python's torch has no CUDA, as Debian's python3-torch);
#   3. trains the CNN on Fashion-MNIST with 4 workers sharing the first GPU
#      to --target, then a heterogeneous cluster (2 GPU and 2 CPU workers,
#      lbbsp's GPU mode, caps from --max-batch auto);
#   4. prints the step time against batch size on the GPU (dmlps-bench
#      profile) for the CNN and mlp:128, and on the CPU for comparison.
# Results go to stdout and to files under --out; progress to stderr.
# Exit status: 0 all passed, 1 a check failed, 64 usage, 69 no usable GPU,
# 70 the build failed. --torch-only runs only the dmlps.torch check against
# any build, CUDA or not, and builds nothing: 0 passed or skipped (no CUDA
# in torch), 1 failed, 64 usage.
set -euo pipefail

NAME=gpu-check.sh
usage() {
  cat <<EOF
usage: $NAME [--build DIR] [--no-build] [--out DIR] [--jobs N] [--target ACC]
              [--max-seconds S] [--full] [--source DIR] [--python PY]
              [--torch-only]
  --build DIR   CUDA build folder (default SOURCE/build-cuda)
  --no-build    check the build already in --build DIR as it is (one made on
                another machine, say) instead of configuring and building
  --out DIR     logs, TSV curves and run reports (default BUILD/gpu-check)
  --jobs N      parallel compile jobs (default: nproc)
  --target ACC  test accuracy the 4-worker run must reach (default 0.90)
  --max-seconds S
                stop each training run after S seconds (default 900)
  --full        run the whole ctest suite, not only the GPU-related tests
  --source DIR  the dmlps source tree (default: the one holding this script)
  --python PY   the interpreter for the dmlps.torch check, one with torch
                and the ABI the Python module was built for (default
                /usr/bin/python3)
  --torch-only  only the dmlps.torch check, against the build in --build
                DIR as it is (dmlps-server and the Python module; a CPU
                build will do: the GPU is torch's); builds nothing
  CUDA_ARCHS    CMAKE_CUDA_ARCHITECTURES to build for (default: the
                project's, sm_90 plus compute_80 PTX)
EOF
}

build="" out="" jobs="" target=0.90 max_seconds=900 full=0 source="" no_build=0
python=/usr/bin/python3 torch_only=0
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    --jobs) jobs=${2:?}; shift 2 ;;
    --target) target=${2:?}; shift 2 ;;
    --max-seconds) max_seconds=${2:?}; shift 2 ;;
    --no-build) no_build=1; shift ;;
    --full) full=1; shift ;;
    --source) source=${2:?}; shift 2 ;;
    --python) python=${2:?}; shift 2 ;;
    --torch-only) torch_only=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "$NAME: error: unknown argument '$1'" >&2; usage >&2; exit 64 ;;
  esac
done
case $max_seconds in
  '' | *[!0-9]* | 0)
    echo "$NAME: error: --max-seconds: want whole seconds above 0, got '$max_seconds'" >&2
    exit 64 ;;
esac
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source=${source:-$(cd "$here/../.." && pwd)}
[ -f "$source/libcore/src/model/cuda/cuda_net.cu" ] ||
  { echo "$NAME: error: $source is not a dmlps source tree" >&2; exit 64; }
build=${build:-$source/build-cuda}
out=${out:-$build/gpu-check}
jobs=${jobs:-$(nproc)}
mkdir -p "$out"

log() { echo "$NAME: $*" >&2; }
failed=0
# check WHAT CMD...: runs CMD; a failure is noted, and the checks go on.
check() {
  local what=$1
  shift
  log "$what ..."
  local rc=0
  "$@" || rc=$?
  if [ "$rc" -eq 0 ]; then
    log "$what: ok"
    printf 'ok\t%s\n' "$what"
  else
    log "$what: FAILED (exit $rc)"
    printf 'FAILED\t%s\texit %s\n' "$what" "$rc"
    failed=1
  fi
}

# dmlps.torch on the GPU. Its figures go to stdout; it reports a skip (torch
# without CUDA, no Python module) as such, not as a pass or a failure.
torch_step() {
  local what="dmlps.torch trains a module on cuda, one step's gradient as on the CPU"
  if [ ! -d "$build/python/dmlps" ]; then
    log "$what: skipped: $build has no dmlps Python module (pybind11-dev builds it)"
    printf 'skipped\t%s\tno Python module\n' "$what"
    return 0
  fi
  log "$what ..."
  local rc=0
  PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}" OPENBLAS_NUM_THREADS=1 \
    OMP_NUM_THREADS=1 "$python" "$here/gpu-check-torch.py" --bin "$build/cmd" \
    --out "$out/torch" >"$out/torch.txt" 2>"$out/torch.log" || rc=$?
  cat "$out/torch.log" >&2
  local skipped
  skipped=$(sed -n 's/^skipped: //p' "$out/torch.txt")
  if [ "$rc" -eq 0 ] && [ -n "$skipped" ]; then
    log "$what: skipped: $skipped"
    printf 'skipped\t%s\t%s\n' "$what" "$skipped"
    return 0
  fi
  cat "$out/torch.txt"
  if [ "$rc" -eq 0 ]; then
    log "$what: ok"
    printf 'ok\t%s\n' "$what"
  else
    log "$what: FAILED (exit $rc)"
    printf 'FAILED\t%s\texit %s\n' "$what" "$rc"
    failed=1
  fi
}
if [ "$torch_only" -eq 1 ]; then
  if [ ! -x "$build/cmd/dmlps-server" ] || [ ! -d "$build/python/dmlps" ]; then
    echo "$NAME: error: $build holds no dmlps-server and dmlps Python module" \
      "(give --build DIR)" >&2
    exit 64
  fi
  torch_step
  exit "$failed"
fi

# Without nvidia-smi, the GPU tests below tell whether a GPU can be used.
if command -v nvidia-smi >/dev/null; then
  if ! nvidia-smi -L >"$out/gpus.txt" 2>&1; then
    log "error: no usable GPU (nvidia-smi -L: $(head -n 1 "$out/gpus.txt"))"
    exit 69
  fi
  cat "$out/gpus.txt" >&2
fi

# 1. Build, unless --no-build names a build made already.
if [ "$no_build" -eq 1 ]; then
  [ -x "$build/cmd/dmlps-worker" ] && [ -x "$build/tests/dmlps-gpu-tests" ] ||
    { echo "$NAME: error: $build holds no CUDA build of dmlps" >&2; exit 64; }
  log "checking the build in $build as it is"
else
  archs=()
  if [ -n "${CUDA_ARCHS:-}" ]; then archs=("-DCMAKE_CUDA_ARCHITECTURES=$CUDA_ARCHS"); fi
  log "building in $build (log: $out/build.log)"
  if ! (cmake -S "$source" -B "$build" -DDMLPS_WITH_CUDA=ON "${archs[@]}" &&
        cmake --build "$build" -j "$jobs") >"$out/build.log" 2>&1; then
    tail -n 30 "$out/build.log" >&2
    log "error: the build failed"
    exit 70
  fi
fi
bin=$build/cmd

# 2. Tests. The GPU test binary exits 77 when it finds no GPU: a failure here.
gpu_tests() {
  local rc=0
  "$build/tests/dmlps-gpu-tests" >"$out/gpu-tests.log" 2>&1 || rc=$?
  cat "$out/gpu-tests.log" >&2
  return "$rc"
}
check "GPU tests (kernels and gradients against the CPU)" gpu_tests
if grep -q "^skipped: " "$out/gpu-tests.log"; then
  log "error: no usable GPU: $(grep "^skipped: " "$out/gpu-tests.log")"
  exit 69
fi
if [ "$full" -eq 1 ]; then
  check "the whole ctest suite" ctest --test-dir "$build" --output-on-failure -j "$jobs"
else
  check "unit tests and the device, CNN and profile scenarios" \
    ctest --test-dir "$build" --output-on-failure -j "$jobs" \
    -R '^(unit|gpu|cli\.(worker_device|cnn_trains|bench_profile|docs_cover_flags))$'
fi
torch_step

# 3. Clusters. run_cluster NAME SERVER-ARGS... -- DEVICE...: one server and
# one worker per DEVICE, for at most --max-seconds and 5 minutes more;
# files in $out/NAME.
model=cnn
run_cluster() {
  local name=$1
  shift
  local server_args=()
  while [ "$1" != -- ]; do
    server_args+=("$1")
    shift
  done
  shift
  local devices=("$@")
  local dir=$out/$name
  rm -rf "$dir"
  mkdir -p "$dir"
  "$bin/dmlps-server" --bind 'tcp://127.0.0.1:*' --endpoint-file "$dir/endpoint" \
    --workers "${#devices[@]}" --report "$dir/report.tsv" "${server_args[@]}" \
    >"$dir/server.tsv" 2>"$dir/server.log" &
  local server=$!
  for _ in $(seq 300); do
    if [ -s "$dir/endpoint" ]; then break; fi
    sleep 0.1
  done
  local pids=() r=0 d
  for d in "${devices[@]}"; do
    "$bin/dmlps-worker" --server "$(cat "$dir/endpoint")" --device "$d" \
      --max-batch auto --model "$model" 2>"$dir/worker-$r.log" &
    pids+=($!)
    r=$((r + 1))
  done
  local rc=0 waited=0
  while kill -0 "$server" 2>/dev/null && [ "$waited" -lt $((max_seconds + 300)) ]; do
    sleep 1
    waited=$((waited + 1))
  done
  if kill -0 "$server" 2>/dev/null; then
    kill "$server"
    rc=124
  fi
  wait "$server" || rc=$?
  local p
  for p in "${pids[@]}"; do wait "$p" || true; done
  log "$name: last evaluation (seconds, iteration, accuracy, loss): $(tail -n 1 "$dir/server.tsv")"
  grep -h "computing on\|max-batch auto" "$dir"/worker-*.log >&2 || true
  return "$rc"
}
check "4 workers on one GPU train $model to $target" \
  run_cluster gpu4 --model "$model" --policy bsp --batch 64 --lr 0.05 \
  --target-accuracy "$target" --max-seconds "$max_seconds" --eval-every 100 -- cuda cuda cuda cuda
check "2 GPU + 2 CPU workers (lbbsp gpu mode) train $model to $target" \
  run_cluster mixed --model "$model" --policy lbbsp --lb-mode gpu --batch 64 --lr 0.05 \
  --target-accuracy "$target" --max-seconds "$max_seconds" --eval-every 100 -- cuda cuda cpu cpu

# 4. The curves.
profile() {  # profile DEVICE MODEL RANGE REPS FILE
  "$bin/dmlps-bench" profile --device "$1" --model "$2" --batch "$3" --reps "$4" \
    --format tsv >"$5"
}
for m in cnn mlp:128; do
  f=$out/profile-cuda-${m//[:,]/-}.tsv
  check "profile $m on the GPU" profile cuda "$m" 16..4096 7 "$f"
  echo "# $m on cuda:0"
  cat "$f" 2>/dev/null || true
done
f=$out/profile-cpu-cnn.tsv
check "profile cnn on the CPU" profile cpu cnn 16..1024 3 "$f"
echo "# cnn on the CPU, 1 thread"
cat "$f" 2>/dev/null || true

if [ "$failed" -ne 0 ]; then
  log "some checks FAILED; logs in $out"
  exit 1
fi
log "all checks passed; logs in $out"
