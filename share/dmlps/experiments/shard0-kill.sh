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
. "$(dirname "$0")/common.sh"
kills=100 shards=2 workers=2 model=mlp:128 every=1 max_delay=2 seed=""
option --kills N kills
option --shards S shards
option --workers W workers
option --model SPEC model
option --every N every
option --max-delay T max_delay
option --seed N seed
option --bin DIR bin
option --out DIR out
check_options() {
  count --kills "$kills"
  count --shards "$shards"
  count --workers "$workers"
  count --every "$every"
  [ "$shards" -ge 2 ] || die 64 "--shards: a job of one server has no shard 0 to lose"
  decimal --max-delay "$max_delay" seconds
  [ -z "$seed" ] || count --seed "$seed"
}
parse_options "$@"
find_bin dmlps-server dmlps-worker
make_out shard0-kill
RANDOM=${seed:-$(date +%s)}
kill_children_on_exit

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
  children+=($!)
  await_endpoint "$out/endpoint" "${SHARD_PIDS[0]}" || return 1
  endpoint=$(cat "$out/endpoint")
  for ((k = 1; k < shards; k++)); do
    from=()
    [ "$resume" = 1 ] && from=(--resume "$out/ckpt.$k")
    "$bin/dmlps-server" --bind 'tcp://127.0.0.1:*' --shard "$k/$shards" --coordinator "$endpoint" \
      --heartbeat-ms 100 --worker-timeout 3 --checkpoint "$out/ckpt.$k" "${from[@]}" \
      2>"$out/shard-$k.log" &
    SHARD_PIDS+=($!)
    children+=($!)
  done
  for ((k = 0; k < workers; k++)); do
    "$bin/dmlps-worker" --server "$endpoint" --heartbeat-ms 100 --server-timeout 5 \
      --reconnect-timeout 0 2>"$out/worker-$k.log" &
    WORKER_PIDS+=($!)
    children+=($!)
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
  children=()
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
