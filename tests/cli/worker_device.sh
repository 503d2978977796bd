# dmlps-worker --device: a GPU that cannot be used is a one-line error and
# exit 69 before any server is contacted; a bad spelling is exit 64.
# --max-batch auto sizes the cap from free memory (MemAvailable on the CPU)
# for --model, and refuses a server that trains another model (exit 78).
. "$(dirname "$0")/lib.sh"
worker=$BIN/dmlps-worker

# No machine has 1024 GPUs: unavailable with or without CUDA in the build.
start=$(date +%s)
rc=0
"$worker" --device cuda:1023 --server "ipc://$WORK/nobody.sock" --connect-timeout 20 \
  2>"$WORK/gpu.log" || rc=$?
expect_exit 69 "$rc" "--device cuda:1023"
cat "$WORK/gpu.log"
[ "$(wc -l <"$WORK/gpu.log")" -eq 1 ] || fail "more than one line of error"
grep -Eq "^dmlps-worker: error: .*cuda:1023.*(no CUDA backend|CUDA device)" "$WORK/gpu.log" ||
  fail "the error does not say the GPU is unusable"
# It gave up at once, not after --connect-timeout.
[ $(($(date +%s) - start)) -le 10 ] || fail "took too long to refuse the device"

# Plain cuda: on a machine without a usable GPU the same; with one, the
# worker gets as far as looking for the server.
rc=0
"$worker" --device cuda --server "ipc://$WORK/nobody.sock" --connect-timeout 1 \
  2>"$WORK/cuda.log" || rc=$?
expect_exit 69 "$rc" "--device cuda"
grep -Eq "cuda:0|no server answered" "$WORK/cuda.log" || fail "unexpected: $(cat "$WORK/cuda.log")"

# The CUDA backend is a module loaded when a GPU is asked for: no binary
# links cuBLAS, and a module that cannot be loaded is the same one-line
# error, naming it.
for tool in dmlps-worker dmlps-server dmlps-bench; do
  if ldd "$BIN/$tool" | grep -q cublas; then fail "$tool links cuBLAS"; fi
done
if ldd "$BIN/dmlps-bench" >/dev/null && [ -e "$BIN/../lib/dmlps/libdmlps-cuda.so" ]; then
  rc=0
  DMLPS_CUDA_MODULE=$WORK/none.so "$worker" --device cuda --server "ipc://$WORK/nobody.sock" \
    --connect-timeout 1 2>"$WORK/module.log" || rc=$?
  expect_exit 69 "$rc" "--device cuda without its module"
  grep -q "cannot load the CUDA backend ($WORK/none.so: " "$WORK/module.log" ||
    fail "unexpected: $(cat "$WORK/module.log")"
fi

# Bad spellings: usage errors, all reported.
rc=0
"$worker" --device gpu --max-batch lots --model cnn:0 2>"$WORK/bad.log" || rc=$?
expect_exit 64 "$rc" "bad --device and --max-batch"
grep -q -- "--device: unknown device \"gpu\"" "$WORK/bad.log" || fail "no --device error"
grep -q -- "--max-batch" "$WORK/bad.log" || fail "no --max-batch error"
rc=0
"$worker" --max-batch auto --model cnn:0 2>"$WORK/bad2.log" || rc=$?
expect_exit 64 "$rc" "bad --model for --max-batch auto"
grep -q -- "--model: " "$WORK/bad2.log" || fail "no --model error: $(cat "$WORK/bad2.log")"

# --max-batch auto on the CPU: a cap derived for mlp:32 goes to the server
# with the worker's Hello; lbbsp's GPU mode trains with it.
start_server --workers 1 --policy lbbsp --lb-mode gpu --model mlp:32 --max-iterations 20 \
  --eval-every 20
start_worker worker-0 --max-batch auto --model mlp:32 -v
wait_for "$WORKER_PID" 60
expect_exit 0 "$RC" "worker with --max-batch auto"
wait_for "$SERVER_PID" 30
expect_exit 0 "$RC" "server"
grep -Eq -- "--max-batch auto: [0-9]+ samples of mlp:32 fit in 80% of the [0-9.]+ GiB free on cpu" \
  "$WORK/worker-0.log" || fail "no auto cap logged: $(cat "$WORK/worker-0.log")"
grep -q "computing on cpu" "$WORK/worker-0.log" || fail "the device is not logged"

# Sized for one model, asked to train another: refused with exit 78.
start_server --workers 1 --model softmax --max-iterations 5
start_worker worker-1 --max-batch auto --model mlp:32
wait_for "$WORKER_PID" 60
expect_exit 78 "$RC" "worker sized for another model"
grep -q "derived for mlp:32, but the server trains softmax; pass --model softmax" \
  "$WORK/worker-1.log" || fail "unexpected: $(cat "$WORK/worker-1.log")"
kill "$SERVER_PID" 2>/dev/null || true
echo "ok: unusable devices exit 69, --max-batch auto sizes and checks its model"
