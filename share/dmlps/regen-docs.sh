#!/usr/bin/env bash
# Remakes the measurements that docs/policies.md, simulator.md, transport.md,
# predictors.md, security.md and compression.md show, and the pages beside them
# (straggler-matrix*.md, simulator-*.md): runs each page's commands and keeps
# their output under --out, one file per command, for the pages to be
# brought up to date from. The whole set takes hours on a 2-core machine;
# name areas to run only some, and --dry-run to list the commands.
set -euo pipefail

NAME=regen-docs.sh
AREAS="policies simulator transport predictors security compression"
usage() {
  cat <<USAGE
usage: $NAME [--dry-run] [--bin DIR] [--out DIR] [AREA...]
Runs the commands behind the measured tables in docs/ and keeps their output.
  AREA        one or more of: $AREAS (default: all)
  --dry-run   print the commands, one a line, and run nothing
  --bin DIR   folder holding dmlps-bench and the other binaries
              (default: build/cmd of this checkout, else PATH)
  --out DIR   where the outputs go (default: a new folder under /tmp)
USAGE
}

dry=0 bin="${DMLPS_BIN:-}" out="" areas=()
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) dry=1; shift ;;
    --bin | --out)
      [ $# -ge 2 ] || { echo "$NAME: error: $1 needs a folder" >&2; exit 64; }
      if [ "$1" = --bin ]; then bin=$2; else out=$2; fi
      shift 2 ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "$NAME: error: unknown option '$1'" >&2; usage >&2; exit 64 ;;
    *)
      case " $AREAS " in
        *" $1 "*) areas+=("$1"); shift ;;
        *) echo "$NAME: error: unknown area '$1' (expected one of: $AREAS)" >&2; exit 64 ;;
      esac ;;
  esac
done
[ ${#areas[@]} -gt 0 ] || read -r -a areas <<<"$AREAS"

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ -z "$bin" ]; then
  bin=$here/../../build/cmd
  [ -x "$bin/dmlps-bench" ] || bin=$(dirname "$(command -v dmlps-bench 2>/dev/null || echo ./dmlps-bench)")
fi
[ ! -d "$bin" ] || bin=$(cd "$bin" && pwd)
bench_bin=$(dirname "$bin")   # the overhead benchmarks are built beside cmd/
experiments=$here/experiments

# The commands of each area, one a line; OUT stands for the output folder.
commands() {
  case "$1" in
    policies)
      echo "$bin/dmlps-bench run --repeat 3"
      echo "$experiments/trace-bsp-vs-wbsp.sh --bin $bin --out OUT/trace-bsp-vs-wbsp"
      echo "$bench_bin/dmlps-bench-trace-overhead"
      echo "$bin/dmlps-bench sim --compute-cost 30,20 --target 0 --eval-every 25 --max-iterations 150 --policies localsgd:1,localsgd:2,localsgd:16"
      echo "$bin/dmlps-bench sim --compute-cost 30,20 --target 0 --eval-every 25 --max-iterations 400 --policies async-localsgd:1,async-localsgd:8,async-localsgd-dylu:16"
      echo "$bin/dmlps-bench sim --compute-cost 30,20 --target 0.85 --eval-every 25 --max-iterations 1500 --policies localsgd:1,async-localsgd:1,async-localsgd-dylu:4"
      echo "$bin/dmlps-bench sim --compute-cost 30,20 --target 0 --eval-every 25 --max-iterations 400 --model softmax --policies bsp,localsgd:1,localsgd:16,async-localsgd:1,async-localsgd:16"
      echo "$experiments/straggler-matrix.sh --bin $bin --repeat 3 --out OUT/straggler-matrix -- --max-seconds 90"
      echo "$experiments/straggler-matrix.sh --bin $bin --sim 16 --repeat 1 -- --compute-cost 50,12.4 --batch 64 --max-iterations 1500 --format tsv"
      echo "$experiments/straggler-matrix.sh --bin $bin --sim 256 --repeat 1 -- --compute-cost 50,12.4 --batch 4 --max-iterations 600 --format tsv"
      echo "$experiments/straggler-matrix.sh --bin $bin --sim 256 --repeat 1 --policies wbsp-overlap --profiles none,slow,round-robin -- --compute-cost 50,12.4 --batch 4 --max-iterations 50 --format tsv" ;;
    simulator)
      for n in 16 256 4096; do
        echo "$bin/dmlps-bench sim --workers $n --model softmax --batch 64 --target 0 --max-iterations 100 --policies bsp,ssp:3,wbsp,abps,lbbsp"
      done
      echo "$experiments/shard-message-cost.sh --bin $bin --out OUT/shard-message-cost"
      echo "$experiments/shard-agreement.sh --bin $bin --repeat 3 --shards 2,4 --out OUT/shard-agreement"
      for n in 256 1024 4096; do for s in 1 16 64; do
        echo "$bin/dmlps-bench sim --workers $n --model softmax --batch 64 --target 0 --max-iterations 20 --compute-cost 3,1.85 --shards $s --policies bsp,asp,ssp:3,backup:1,wbsp,abps,lbbsp,token"
      done; done
      echo "$bin/dmlps-bench run --repeat 5"
      echo "$bin/dmlps-bench sim --shared-cores 2 --compute-cost 30,20 --jitter 0.4 --repeat 5"
      echo "$bin/dmlps-bench sim --policies bsp,asp,localsgd,async-localsgd,async-localsgd-dylu,dssp,sync-switch --shared-cores 2 --compute-cost 50,12.4 --jitter 0.4 --repeat 3"
      for seed in 1 2 3 4 5 7; do
        for s in 0 1.5; do
          echo "$bin/dmlps-bench sim --policies asp --shared-cores 2 --compute-cost 50,12.4 --jitter 0.4 --repeat 1 --format tsv --seed $seed --cpu-slice-ms $s"
        done
      done
      echo "$bin/dmlps-bench sim --policies bsp,asp,localsgd,async-localsgd,async-localsgd-dylu,dssp,sync-switch --shared-cores 2 --compute-cost 50,12.4 --jitter 0.4 --repeat 3 --cpu-slice-ms 1.5"
      echo "$bin/dmlps-bench run --policies asp --repeat 3 --trace-dir T --out O"
      echo "$bin/dmlps-bench run --policies sync-switch,asp --repeat 5 --out O"
      echo "$bin/dmlps-bench sim --policies sync-switch,asp --shared-cores 2 --compute-cost 50,12.4 --jitter 0.4 --repeat 5 --cpu-slice-ms 1.5"
      local backups="--workers 4 --slowdown 1 --policies bsp,backup:1,backup:2,backup:3"
      echo "$bin/dmlps-bench run $backups --target 0 --max-iterations 200 --eval-every 1000 --trace-dir T"
      for cpu in "" " --cpu-slice-ms 6" " --cpu-slice-ms 6 --cpu-wake-preempts" " --cpu-slice-ms 3 --cpu-wake-preempts"; do
        echo "$bin/dmlps-bench sim $backups --shared-cores 2 --compute-cost 50,16.6 --max-iterations 200 --eval-every 1000 --target 0$cpu"
      done
      for delays in "" " --delay-ms 50 --delay-prob 0.2"; do
        for w in 0 6; do
          echo "$bin/dmlps-bench sim $backups --shared-cores 2 --cpu-slice-ms 3 --cpu-wake-preempts --cpu-wake-credit-ms $w --compute-cost 200,15 --model mlp:128 --batch 256 --max-iterations 200 --eval-every 1000 --target 0$delays"
        done
      done
      for c in 781 1562 3125; do
        echo "$bin/dmlps-bench sim --workers 4096 --model softmax --batch 64 --target 0 --max-iterations 5 --shards 64 --policies bsp,backup:1,abps,lbbsp,wbsp,ssp:3 --compute-cost 3,$c"
      done
      for i in 1 2; do
        echo "/usr/bin/time -v $bin/dmlps-bench sim --workers 4096 --model softmax --batch 64 --target 0 --max-iterations 100 --compute-cost 3,1.85 --policies bsp"
      done ;;
    transport)
      for i in 1 2 3 4; do echo "$bin/dmlps-bench transport"; done
      for i in 1 2 3 4 5; do
        echo "$bin/dmlps-bench transport --sizes 4M,64M --transports ipc --worker-counts 1 --rounds 31"
      done
      for i in 1 2 3; do
        echo "$bin/dmlps-bench transport --sizes 64M --sharded-only --shards 1,2,4 --shard-workers 4"
      done
      for i in 1 2 3; do
        echo "$bin/dmlps-bench transport --sizes 4M --transports tcp,ipc --worker-counts 1 --shards none --sum-threads 1 --rounds 31"
      done ;;
    predictors)
      echo "$bin/dmlps-bench run --policies lbbsp --repeat 12 --slowdown-schedule 3=0:1,150:4 --delay-ms 0,0,50,0 --delay-prob 0,0,0.1,0 --max-iterations 400 --target 0 --trace-dir OUT/lbbsp-traces"
      for r in $(seq 12); do
        echo "$bin/dmlps-predict --plan 1024 OUT/lbbsp-traces/lbbsp-$r/*.trace"
      done
      echo "$bench_bin/dmlps-bench-predictor-overhead"
      for w in 1 2; do
        echo "$bin/dmlps-bench run --policies bsp --workers $w --slowdown 1 --model cnn --batch 64 --lr 0.05 --target 0.90 --eval-every 200 --max-seconds 900 --repeat 3"
      done ;;
    security)
      for i in 1 2 3; do
        echo "$bin/dmlps-bench transport --curve --transports tcp --worker-counts 1 --sizes 4M,64M"
      done ;;
    compression)
      for i in 1 2 3; do echo "$bin/dmlps-bench codec --repeat 9"; done
      echo "$bin/dmlps-bench sim --workers 4096 --model softmax --batch 64 --target 0 --max-iterations 40 --compute-cost 3,1.85 --link-gbps 1 --policies bsp,localsgd --codecs none,fp16,int8,topk:0.01,int8/int8" ;;
  esac
}

if [ "$dry" -eq 1 ]; then
  for area in "${areas[@]}"; do commands "$area"; done
  exit 0
fi
[ -x "$bin/dmlps-bench" ] || {
  echo "$NAME: error: dmlps-bench not found in $bin; build it or pass --bin DIR" >&2
  exit 69
}
[ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/dmlps-regen.XXXXXX")
mkdir -p "$out"
echo "$NAME: outputs go to $out" >&2
for area in "${areas[@]}"; do
  n=0
  while IFS= read -r line; do
    n=$((n + 1))
    cmd=${line//OUT/$out}
    file=$out/$area-$n.txt
    echo "+ $cmd  > $file" >&2
    { echo "# $(date -u +%Y-%m-%dT%H:%MZ) on $(uname -n), $(nproc) cores: $cmd"; eval "$cmd"; } >"$file"
  done < <(commands "$area")
done
echo "$NAME: done; compare $out with the tables in docs/" >&2
