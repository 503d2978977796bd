# Compressed pushes and pulls train: 2 workers under BSP take mlp:128 on
# Fashion-MNIST to 0.80 test accuracy with int8 pushes and pulls, and with
# top-k pushes (1% of the coordinates, error feedback); the server's report
# shows the bytes each worker sent, and the model bytes it was sent, per
# iteration against a short dense run of the same job. Bad codec flags are
# refused with one line before anything starts.
. "$(dirname "$0")/lib.sh"
server_refuses "--push-codec: .*topk" --push-codec int4
server_refuses "--pull-codec: " --pull-codec topk:0
server_refuses "--push-codec: " --push-codec topk:1.5
server_refuses "do not work with sharded servers" --push-codec int8 --shard 0/2 --secret "$WORK/secret"
server_refuses "do not work with --model external" --pull-codec fp16 --model external \
  --secret "$WORK/secret"

JOB=(--policy bsp --model mlp:128 --eval-every 25)

# per_iteration REPORT KEY: the report's KEY over its iterations.
per_iteration() {
  awk -F '\t' -v key="$2" '$1 == key { v = $2 } $1 == "iterations" { it = $2 }
    END { if (it > 0) printf "%.0f", v / it }' "$1"
}

start_server --workers 2 "${JOB[@]}" --max-iterations 40 --report "$WORK/dense.report"
start_worker w0
w0=$WORKER_PID
start_worker w1
wait_ok 120 "dmlps-server" "$SERVER_PID"
wait_ok 30 "dmlps-worker" "$w0" "$WORKER_PID"
dense_push=$(per_iteration "$WORK/dense.report" bytes_per_worker)
dense_pull=$(per_iteration "$WORK/dense.report" model_bytes_per_worker)
[ "${dense_push:-0}" -gt 400000 ] || fail "dense pushes of $dense_push bytes an iteration"

train_to_target 2 0.80 "${JOB[@]}" --max-iterations 4000 --push-codec int8 --pull-codec int8 \
  --report "$WORK/int8.report"
int8_push=$(per_iteration "$WORK/int8.report" bytes_per_worker)
int8_pull=$(per_iteration "$WORK/int8.report" model_bytes_per_worker)
grep -q "version .* of the model came whole" "$WORK/worker-0.log" ||
  fail "the first model did not come whole"
train_to_target 2 0.80 "${JOB[@]}" --max-iterations 4000 --push-codec topk:0.01 \
  --report "$WORK/topk.report"
topk_push=$(per_iteration "$WORK/topk.report" bytes_per_worker)

echo "bytes per worker per iteration: dense push $dense_push pull $dense_pull;" \
  "int8 push $int8_push pull $int8_pull; topk:0.01 push $topk_push"
# int8 is 3.94x smaller, top-k:0.01 66x, before the headers and heartbeats.
[ $((int8_push * 37)) -lt $((dense_push * 10)) ] || fail "int8 pushes saved less than 3.7x"
[ $((int8_pull * 37)) -lt $((dense_pull * 10)) ] || fail "int8 pulls saved less than 3.7x"
[ $((topk_push * 40)) -lt "$dense_push" ] || fail "top-k pushes saved less than 40x"
