# Every policy trains an external model as it trains a built-in one: 2
# workers announcing softmax run 60 iterations under each, and the model
# the server saves has the announced layout's size. Then the same over
# CURVE, with an evaluator (also over CURVE) scoring the snapshots, and a
# built-in model evaluated by an evaluator process.
. "$(dirname "$0")/lib.sh"
for policy in asp ssp backup wbsp wbsp-overlap abps lbbsp token; do
  extra=()
  [ "$policy" = backup ] && extra=(--workers 3 --backup 1)
  start_server --workers 2 --model external --policy "$policy" --max-iterations 60 \
    --max-seconds 60 --save-model "$WORK/model-$policy" "${extra[@]}"
  workers=2
  [ "$policy" = backup ] && workers=3
  start_workers "$workers" "$policy-" --model softmax --announce-layout
  wait_ok 90 "dmlps-server --policy $policy" "$SERVER_PID"
  wait_ok 30 "a worker under $policy" "${WORKERS[@]}"
  [ "$(stat -c %s "$WORK/model-$policy")" -eq $((7850 * 4)) ] ||
    fail "$policy: the saved model is not 7850 floats"
  mv "$WORK/server.log" "$WORK/server-$policy.log"
  echo "$policy: $(grep -o 'summary: .*' "$WORK/server-$policy.log")"
done

mkdir -p "$WORK/allowed"
"$BIN/dmlps-keygen" -q "$WORK/server" "$WORK/allowed/w0" "$WORK/allowed/ev" >/dev/null
start_server --workers 1 --model external --evaluator --policy bsp --max-iterations 200 \
  --eval-every 50 --curve-secret "$WORK/server.key" --curve-allow "$WORK/allowed"
start_worker w0 --model softmax --announce-layout --curve-secret "$WORK/allowed/w0.key" \
  --curve-server-key "$WORK/server.pub"
w0=$WORKER_PID
start_worker ev --model softmax --evaluator --curve-secret "$WORK/allowed/ev.key" \
  --curve-server-key "$WORK/server.pub"
wait_ok 90 "dmlps-server over CURVE" "$SERVER_PID"
wait_ok 30 "a process over CURVE" "$w0" "$WORKER_PID"
awk -F '\t' 'NR > 1 && $2 == 200 { found = 1 } END { exit !found }' "$WORK/server.tsv" ||
  fail "no evaluation of the last iteration over CURVE"
echo "curve: $(tail -n 1 "$WORK/server.tsv")"

# A built-in model's server can hand its evaluations out too: the evaluator
# scores the server's model (softmax), not its own default --model.
mv "$WORK/server.tsv" "$WORK/curve.tsv"
start_server --workers 1 --model softmax --evaluator --max-iterations 100 --eval-every 50
start_worker w1
w1=$WORKER_PID
start_worker builtin-ev --evaluator
wait_ok 90 "dmlps-server of softmax with --evaluator" "$SERVER_PID"
wait_ok 30 "a process of the built-in run" "$w1" "$WORKER_PID"
grep -q "(model softmax, 7850 parameters)" "$WORK/builtin-ev.log" ||
  fail "the evaluator did not take the server's model"
[ "$(wc -l <"$WORK/server.tsv")" -ge 2 ] || fail "no evaluation came back"
echo "built-in: $(tail -n 1 "$WORK/server.tsv")"
