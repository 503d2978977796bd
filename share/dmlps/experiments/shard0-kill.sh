#!/usr/bin/env bash
# Kills shard 0 of a sharded job with checkpoints (kill -9) at random
# points, again and again, and checks that every kill leaves a set of files
# the job resumes from. Each round starts every shard (with --resume of its
# own file once shard 0 has one) and the workers, waits until training
# runs, kills shard 0 after a random delay, kills the workers, and stops
# the other shards with SIGTERM, as an operator would (each first finishes
# what it is doing, a checkpoint's write included). The next round's
# start is the check: every shard resumes the version shard 0 resumed, or
# the round counts as not resumable (its logs are kept under --out, and
# the next round starts afresh). A checkpoint every iteration keeps
# checkpoints always on their way, so that most kills fall in one.
# Prints a line per round and a summary; exits 1 when a kill was not
# resumable, 70 when a round could not be run.
NAME=shard0-kill.sh
SUMMARY='  --kills N        kills of shard 0 (default 100)
  --shards S       server shards, 2 or more (default 2)
  --workers W      workers (default 2)
  --model SPEC     the model (default mlp:128)
  --every N        a checkpoint every N iterations (default 1)
  --max-delay T    the kill comes 0 to T seconds into training (default 2)
  --seed N         seeds the random delays (default: the time)
  --bin DIR        folder holding dmlps-server and dmlps-worker
  --out DIR        keep the files and logs here'
set -euo pipefail

kills=100 shards=2 workers=2 model=mlp:128 every=1 max_delay=2 seed="" bin="${DMLPS_BIN:-}" out=""
usage() {
  printf 'usage: %s [--kills N] [--shards S] [--workers W] [--model SPEC] [--every N] [--max-delay T] [--seed N] [--bin DIR] [--out DIR]\n%s\n' \
    "$NAME" "$SUMMARY"
}
while [ $# -gt 0 ]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    --kills | --shards | --workers | --model | --every | --max-delay | --seed | --bin | --out)
      [ $# -ge 2 ] || { echo "$NAME: error: $1 needs a value" >&2; usage >&2; exit 64; }
      case "$1" in
        --kills) kills=$2 ;;
        --shards) shards=$2 ;;
        --workers) workers=$2 ;;
        --model) model=$2 ;;
        --every) every=$2 ;;
        --max-delay) max_delay=$2 ;;
        --seed) seed=$2 ;;
        --bin) bin=$2 ;;
        --out) out=$2 ;;
      esac
      shift 2
      ;;
    *) echo "$NAME: error: unknown option '$1'" >&2; usage >&2; exit 64 ;;
  esac
done
count() { [[ "$2" =~ ^[1-9][0-9]*$ ]] || { echo "$NAME: error: $1: '$2' is not a count" >&2; exit 64; }; }
count --kills "$kills"
count --shards "$shards"
count --workers "$workers"
count --every "$every"
[ "$shards" -ge 2 ] || { echo "$NAME: error: --shards: a job of one server has no shard 0 to lose" >&2; exit 64; }
[[ "$max_delay" =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "$NAME: error: --max-delay: '$max_delay' is not seconds" >&2; exit 64; }
[ -z "$seed" ] || count --seed "$seed"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ -z "$bin" ]; then
  for candidate in "$here/../../../build/cmd" "$(dirname "$(command -v dmlps-server 2>/dev/null || echo /nonexistent/x)")"; do
    if [ -x "$candidate/dmlps-server" ]; then bin=$candidate; break; fi
  done
fi
if [ -z "$bin" ] || [ ! -x "$bin/dmlps-server" ] || [ ! -x "$bin/dmlps-worker" ]; then
  echo "$NAME: error: dmlps-server or dmlps-worker not found; build them or pass --bin DIR" >&2
  exit 69
fi
[ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/dmlps-shard0-kill.XXXXXX")
mkdir -p "$out"
RANDOM=${seed:-$(date +%s)}

pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

# start_job: shard 0, the other shards and the workers, each shard resuming
# its own file when shard 0 has one; sets SHARD_PIDS and WORKER_PIDS.
start_job() {
  local resume=0 k from
  SHARD_PIDS=() WORKER_PIDS=()
  [ -e "$out/ckpt.0" ] && resume=1
  rm -f "$out/endpoint" "$out"/*.log
  from=()
  [ "$resume" = 1 ] && from=(--resume "$out/ckpt.0")
  "$bin/dmlps-server" --bind 'tcp://127.0.0.1:*' --endpoint-file "$out/endpoint" --shard "0/$shards" \
    --workers "$workers" --policy bsp --model "$model" --batch 16 --eval-every 1000 \
    --max-seconds 120 --heartbeat-ms 100 --worker-timeout 3 --checkpoint "$out/ckpt.0" \
    --checkpoint-every "$every" "${from[@]}" 2>"$out/shard-0.log" >/dev/null &
  SHARD_PIDS=($!)
  pids+=($!)
  for _ in $(seq 300); do
    [ -s "$out/endpoint" ] && break
    kill -0 "${SHARD_PIDS[0]}" 2>/dev/null || return 1
    sleep 0.1
  done
  [ -s "$out/endpoint" ] || return 1
  endpoint=$(cat "$out/endpoint")
  for ((k = 1; k < shards; k++)); do
    from=()
    [ "$resume" = 1 ] && from=(--resume "$out/ckpt.$k")
    "$bin/dmlps-server" --bind 'tcp://127.0.0.1:*' --shard "$k/$shards" --coordinator "$endpoint" \
      --heartbeat-ms 100 --worker-timeout 3 --checkpoint "$out/ckpt.$k" "${from[@]}" \
      2>"$out/shard-$k.log" &
    SHARD_PIDS+=($!)
    pids+=($!)
  done
  for ((k = 0; k < workers; k++)); do
    "$bin/dmlps-worker" --server "$endpoint" --heartbeat-ms 100 --server-timeout 5 \
      --reconnect-timeout 0 2>"$out/worker-$k.log" &
    WORKER_PIDS+=($!)
    pids+=($!)
  done
}

# await_training: waits until shard 0 says training starts or goes on; 1
# when a shard exits first or 60 s pass.
await_training() {
  local pid
  for _ in $(seq 600); do
    grep -qE "workers ready; training (starts|goes on)" "$out/shard-0.log" 2>/dev/null && return 0
    for pid in "${SHARD_PIDS[@]}"; do
      kill -0 "$pid" 2>/dev/null || return 1
    done
    sleep 0.1
  done
  return 1
}

# stop_job: kills the workers, stops the shards left (SIGTERM; kill -9
# after 10 s).
stop_job() {
  local pid
  for pid in "${WORKER_PIDS[@]}"; do
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  for pid in "${SHARD_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for _ in $(seq 100); do
    local running=0
    for pid in "${SHARD_PIDS[@]}"; do kill -0 "$pid" 2>/dev/null && running=1; done
    [ "$running" = 0 ] && break
    sleep 0.1
  done
  for pid in "${SHARD_PIDS[@]}" "${WORKER_PIDS[@]}"; do
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  pids=()
}

# why_not: the first error line of the shards' logs.
why_not() {
  grep -h -m 1 -E "error|refused" "$out"/shard-*.log 2>/dev/null | head -n 1 | sed 's/^.*\] //'
}

resumed=0 not_resumable=0 from_before=0 started=0
# Round k starts the job (the check of kill k - 1) and kills shard 0; the
# last round only checks.
for ((round = 0; round <= kills; round++)); do
  had=0
  [ -e "$out/ckpt.0" ] && had=1
  if ! start_job || ! await_training; then
    if [ "$round" -eq 0 ] || [ "$had" = 0 ]; then
      echo "$NAME: error: round $round: the job did not start: $(why_not)" >&2
      stop_job
      exit 70
    fi
    not_resumable=$((not_resumable + 1))
    echo "kill $round: NOT resumable: $(why_not)"
    stop_job
    mkdir -p "$out/not-resumable-$round"
    mv "$out"/ckpt.* "$out"/*.log "$out/not-resumable-$round/"
    [ "$round" -lt "$kills" ] || break
    # Afresh, so that the next kill counts on its own.
    if ! start_job || ! await_training; then
      echo "$NAME: error: round $round: the job did not start afresh: $(why_not)" >&2
      stop_job
      exit 70
    fi
  elif [ "$round" -gt 0 ]; then
    if [ "$had" = 1 ]; then
      resumed=$((resumed + 1))
      iteration=$(sed -n 's/.*training goes on from iteration \([0-9]*\).*/\1/p' "$out/shard-0.log")
      before=""
      if grep -q "(the file before it)" "$out"/shard-*.log; then
        from_before=$((from_before + 1))
        before=", a shard from the file before its last"
      fi
      echo "kill $round: resumed from iteration $iteration$before"
    else
      started=$((started + 1))
      echo "kill $round: no checkpoint of shard 0 yet: started afresh"
    fi
  fi
  [ "$round" -lt "$kills" ] || { stop_job; break; }
  sleep "$(awk -v r="$RANDOM" -v t="$max_delay" 'BEGIN { printf "%.3f", r / 32767 * t }')"
  kill -9 "${SHARD_PIDS[0]}" 2>/dev/null || true
  wait "${SHARD_PIDS[0]}" 2>/dev/null || true
  stop_job
done
echo "$kills kills of shard 0: $resumed resumed ($from_before with a shard on the file before" \
  "its last), $started before shard 0's first checkpoint, $not_resumable not resumable"
[ "$not_resumable" -eq 0 ] || exit 1
