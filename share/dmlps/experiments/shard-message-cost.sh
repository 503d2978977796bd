#!/usr/bin/env bash
# What a sharded server's CPU spends per worker and iteration: shard 0
# (push, pull, model reply, orders) and shard 1 (push slice, model reply),
# from their user+system CPU time over two runs of BSP that differ only in
# their iterations, so start-up and data loading cancel out. Batch 1 of
# softmax: the workers' steps are tiny and the messages are all there is.
# CPU time, not wall time: a busy machine changes it far less.
# dmlps-bench sim's CostModel::message_s comes from this (30 us a message).
NAME=shard-message-cost.sh
SUMMARY='  --workers W   workers (default 32)
  --shards S    server shards (default 2)
  --short N, --long N  iterations of the two runs (default 200 and 1000)'
. "$(dirname "$0")/common.sh"
workers=32 shards=2 short=200 long=1000
option --workers W workers
option --shards S shards
option --short N short
option --long N long
REST=SERVER-ARGS
check_options() {
  local v
  for v in workers:"$workers" shards:"$shards" short:"$short" long:"$long"; do count "--${v%%:*}" "${v#*:}"; done
  [ "$shards" -ge 2 ] || die 64 "--shards must be 2 or more"
  [ "$long" -gt "$short" ] || die 64 "--long must exceed --short"
}
bench_script "$@"
find_bin dmlps-server dmlps-worker

# cpu_of ITERATIONS: runs the cluster; prints shard 0's and shard 1's CPU seconds.
cpu_of() {
  local iterations=$1 dir pids=() server k r
  dir=$(mktemp -d "$out/run.XXXXXX")
  /usr/bin/time -f '%U %S' -o "$dir/time0" "$bin/dmlps-server" --bind 'tcp://127.0.0.1:*' \
    --endpoint-file "$dir/endpoint" --shard "0/$shards" --workers "$workers" --policy bsp \
    --model softmax --batch 1 --max-iterations "$iterations" --eval-every 1000000 \
    "${extra[@]}" >"$dir/server.tsv" 2>"$dir/server.log" &
  server=$!
  await_endpoint "$dir/endpoint" "$server" || { kill "$server"; die 70 "shard 0 did not start"; }
  for ((k = 1; k < shards; k++)); do
    /usr/bin/time -f '%U %S' -o "$dir/time$k" "$bin/dmlps-server" --bind 'tcp://127.0.0.1:*' \
      --shard "$k/$shards" --coordinator "$(cat "$dir/endpoint")" 2>"$dir/shard-$k.log" &
    pids+=($!)
  done
  for ((r = 0; r < workers; r++)); do
    "$bin/dmlps-worker" --server "$(cat "$dir/endpoint")" 2>"$dir/worker-$r.log" &
    pids+=($!)
  done
  (sleep 600 && kill "$server" "${pids[@]}" 2>/dev/null) &
  local guard=$! rc=0
  wait "$server" || rc=$?
  for pid in "${pids[@]}"; do wait "$pid" || true; done
  kill "$guard" 2>/dev/null || true
  [ "$rc" -eq 0 ] || { echo "$NAME: error: shard 0 exited $rc ($dir)" >&2; exit 70; }
  awk '{ printf "%s ", $1 + $2 } END { print "" }' "$dir/time0" "$dir/time1"
}

read -r s0_short s1_short < <(cpu_of "$short")
read -r s0_long s1_long < <(cpu_of "$long")
awk -v w="$workers" -v n=$((long - short)) -v a="$s0_short" -v b="$s0_long" \
  -v c="$s1_short" -v d="$s1_long" -v s="$shards" 'BEGIN {
  printf "%d workers, %d shards, BSP, softmax batch 1: CPU per worker and iteration\n", w, s
  printf "shard 0: %.1f us (%.2f s over %d more iterations)\n", (b - a) / (n * w) * 1e6, b - a, n
  printf "shard 1: %.1f us (%.2f s over %d more iterations)\n", (d - c) / (n * w) * 1e6, d - c, n
}'
