# dmlps-bench run with the user's own processes: PyTorch workers (the
# example share/dmlps/examples/bench-torch/worker.py, through
# --worker-command) train a model the server does not know, a PyTorch
# evaluator (--evaluator-command) scores it, and the policies' table comes
# out as with dmlps-worker; each worker applies the straggler profile the
# bench gives it. A failing command ends its run with one line, in bounded
# time. dmlps-worker itself also works as the command.
. "$(dirname "$0")/lib.sh"
SRC=${DMLPS_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
bench=$BIN/dmlps-bench
export PYTHONPATH=$BIN/../python${PYTHONPATH:+:$PYTHONPATH} OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
small=(--workers 2 --batch 64 --lr 0.05 --eval-every 20 --max-seconds 60)

# Bad combinations are refused up front: one line, exit 64, nothing run.
rc=0
"$bench" run "${small[@]}" --model external --worker-command true --target 0.5 \
  >/dev/null 2>"$WORK/usage.log" || rc=$?
expect_exit 64 "$rc" "dmlps-bench run --model external without an evaluator"
grep -q -- "--target with --model external needs --evaluator-command" "$WORK/usage.log" ||
  fail "no reason given: $(cat "$WORK/usage.log")"
rc=0
"$bench" run "${small[@]}" --model external --target 0 --max-iterations 5 \
  >/dev/null 2>"$WORK/usage.log" || rc=$?
expect_exit 64 "$rc" "dmlps-bench run --model external with dmlps-worker"
grep -q -- "--model external needs --worker-command" "$WORK/usage.log" ||
  fail "no reason given: $(cat "$WORK/usage.log")"

# A failing worker command: the run fails with one line naming the command
# and its status, the next run goes on (and fails alike), exit 1, quickly.
start=$SECONDS
rc=0
timeout 60 "$bench" run "${small[@]}" --policies bsp,asp --target 0 --max-iterations 20 \
  --worker-command 'echo "cannot train here" >&2; exit 3' --format tsv --out "$WORK/failing" \
  >"$WORK/failing.tsv" 2>"$WORK/failing.log" || rc=$?
expect_exit 1 "$rc" "dmlps-bench run with a failing --worker-command"
grep -q "bsp run 1/1: FAILED: worker [01] (--worker-command 'echo \"cannot train here\" >&2; exit 3') exited with status 3: cannot train here (log: $WORK/failing/bsp-1/worker-[01].log)" \
  "$WORK/failing.log" || fail "the failure is not explained: $(cat "$WORK/failing.log")"
grep -q "asp run 1/1: FAILED: worker [01] (--worker-command" "$WORK/failing.log" ||
  fail "the second run did not go on: $(cat "$WORK/failing.log")"
[ "$(grep -c "FAILED" "$WORK/failing.log")" -eq 2 ] ||
  fail "not one line per failed run: $(cat "$WORK/failing.log")"
[ $((SECONDS - start)) -lt 30 ] || fail "the failing runs took $((SECONDS - start)) s"
# A command that exits 0 without joining: the run fails, it does not wait out --max-seconds.
start=$SECONDS
rc=0
timeout 60 "$bench" run "${small[@]}" --policies bsp --target 0 --max-iterations 20 \
  --worker-command 'true' --out "$WORK/silent" >/dev/null 2>"$WORK/silent.log" || rc=$?
expect_exit 1 "$rc" "dmlps-bench run with workers that never join"
grep -q "FAILED: every worker (--worker-command 'true') exited with status 0 but the server" \
  "$WORK/silent.log" || fail "never joining is not explained: $(cat "$WORK/silent.log")"
[ $((SECONDS - start)) -lt 40 ] || fail "the run of absent workers took $((SECONDS - start)) s"

# dmlps-worker as the command, given the straggler flags the bench chose.
"$bench" run "${small[@]}" --slowdown 1,3 --policies bsp --target 0 --max-iterations 20 \
  --out "$WORK/cpp" --worker-command \
  'echo "flags: $DMLPS_WORKER_FLAGS"; exec "$DMLPS_BIN"/dmlps-worker --server "$DMLPS_SERVER" --rank "$DMLPS_RANK" $DMLPS_WORKER_FLAGS' \
  --format tsv >"$WORK/cpp.tsv" 2>"$WORK/cpp.log" || fail "dmlps-worker as the command: exit $?"
grep -q $'^bsp\t1\t1\t' "$WORK/cpp.tsv" || fail "no bsp row: $(cat "$WORK/cpp.tsv")"
grep -q "^flags: --slowdown 3 --delay-ms 0 " "$WORK/cpp/bsp-1/worker-1.log" ||
  fail "worker 1 did not get --slowdown 3: $(head -5 "$WORK/cpp/bsp-1/worker-1.log")"
grep -q "worker [01] of 2: policy bsp" "$WORK/cpp/bsp-1/worker-1.log" ||
  fail "worker 1 did not join: $(tail -5 "$WORK/cpp/bsp-1/worker-1.log")"

# PyTorch workers and evaluator: needs Debian's python3 with the module and torch.
if ! /usr/bin/python3 -c 'import dmlps, dmlps.torch, torch' 2>/dev/null; then
  echo "skip: /usr/bin/python3 cannot import dmlps and torch (PYTHONPATH=$PYTHONPATH)"
  exit 77
fi
ex=$SRC/share/dmlps/examples/bench-torch
"$bench" run "${small[@]}" --slowdown 1,3 --model external --target 0.75 --policies bsp,asp \
  --out "$WORK/torch" --worker-command "/usr/bin/python3 '$ex/worker.py'" \
  --evaluator-command "/usr/bin/python3 '$ex/evaluator.py'" \
  >"$WORK/torch.txt" 2>"$WORK/torch.log" || fail "PyTorch workers: exit $?"
expect_table "$WORK/torch.txt" "^2 workers, external, fashion-mnist.*slowdown 1,3, target 0.75" \
  "^policy  *reached  *seconds to target"
for p in bsp asp; do
  grep -q "^$p  *1/1 " "$WORK/torch.txt" || fail "$p did not reach 0.75: $(cat "$WORK/torch.txt")"
  awk -F '\t' 'NR > 1 && $3 >= 0.75 { ok = 1 } END { exit !ok }' "$WORK/torch/$p-1/server.tsv" ||
    fail "$p: no evaluation at 0.75 in server.tsv"
  grep -q "snapshots: " "$WORK/torch/$p-1/evaluator.log" || fail "$p: the evaluator said nothing"
  # Each worker ran with its own profile: worker 1 three times slower.
  grep -q "^rank 0 (slowdown 1): " "$WORK/torch/$p-1/worker-0.log" ||
    fail "$p: worker 0: $(tail -3 "$WORK/torch/$p-1/worker-0.log")"
  grep -q "^rank 1 (slowdown 3): " "$WORK/torch/$p-1/worker-1.log" ||
    fail "$p: worker 1: $(tail -3 "$WORK/torch/$p-1/worker-1.log")"
done
if pgrep -f "$ex/" >/dev/null; then fail "processes of the PyTorch runs are left"; fi
cat "$WORK/torch.txt"
echo "ok"
