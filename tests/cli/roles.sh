# Roles the operator grants (docs/security.md): the evaluator and the
# worker announcing an external model each hold their role by the job
# secret, never by coming first; one report never ends a run; under a
# robust rule no ranks join beyond --workers. Without a secret, --evaluator
# and --model external (without --initial) refuse to start, one line each.
. "$(dirname "$0")/lib.sh"
ATTACK="$TEST_BIN/dmlps-attack-peer"

# No secret: refused at start, one line naming --secret, exit 64.
for flags in "--evaluator --target-accuracy 0.8" "--model external"; do
  rc=0
  # shellcheck disable=SC2086
  env -u DMLPS_SECRET_FILE timeout 30 "$BIN/dmlps-server" --bind 'tcp://127.0.0.1:*' $flags \
    >/dev/null 2>"$WORK/err" || rc=$?
  expect_exit 64 "$rc" "dmlps-server $flags without a secret"
  [ "$(grep -c 'error:' "$WORK/err")" -eq 1 ] || fail "not one line: $(cat "$WORK/err")"
  grep -q -- "--secret FILE" "$WORK/err" || fail "the refusal does not name --secret: $(cat "$WORK/err")"
done
rc=0
"$BIN/dmlps-keygen" --secret "$WORK/secret" 2>"$WORK/err" || rc=$?
expect_exit 64 "$rc" "dmlps-keygen --secret over an existing file"
grep -q "exists (--force replaces it)" "$WORK/err" || fail "keygen did not say why: $(cat "$WORK/err")"
[ "$(stat -c %a "$WORK/secret")" = 600 ] || fail "the secret is readable by others"

# A peer claiming the evaluator role without the secret is refused and
# takes nothing; answering 1.0 ends nothing. The real evaluator joins after
# it, and the run reaches its target once two evaluations in a row do.
start_server --workers 2 --model softmax --policy bsp --batch 32 --lr 0.02 --evaluator \
  --target-accuracy 0.79 --eval-every 10 --max-iterations 3000 --max-seconds 100 \
  --report "$WORK/report"
"$ATTACK" evaluator "$ENDPOINT" 5 >"$WORK/fake.out" || fail "the attack peer failed"
grep -q "^refused: the evaluator role needs the job secret" "$WORK/fake.out" ||
  fail "the fake evaluator was not refused: $(cat "$WORK/fake.out")"
start_workers 2 w --model softmax
finish_with_evaluator softmax "dmlps-server" "${WORKERS[@]}"
grep -q "refused an evaluator (.*): the evaluator role needs the job secret" "$WORK/server.log" ||
  fail "the server did not log the refusal"
[ "$(report_value "$WORK/report" target_reached)" = 1 ] || fail "target not reached"
# The target counted at the first of two evaluations in a row that met it.
at=$(report_value "$WORK/report" iterations_to_target)
awk -F '\t' -v at="$at" 'NR > 1 && $2 == at && $3 >= 0.79 { found = 1 }
  NR > 1 && $2 > at && $3 >= 0.79 && !next_ok { next_ok = 1 }
  END { exit !(found && next_ok) }' "$WORK/server.tsv" ||
  fail "the target at iteration $at was not confirmed by the next evaluation: $(cat "$WORK/server.tsv")"

# --model external: a worker without the secret waits; the one presenting
# it announces the model; the first is admitted once the model is known.
mv "$WORK/server.log" "$WORK/evaluator-server.log"
start_server --workers 2 --model external --policy bsp --batch 32 --lr 0.02 \
  --max-iterations 20 --max-seconds 60
env -u DMLPS_SECRET_FILE "$BIN/dmlps-worker" --server "$ENDPOINT" --model softmax \
  --announce-layout 2>"$WORK/plain.log" &
plain=$!
CHILDREN+=("$plain")
sleep 1
grep -q "announced the external model" "$WORK/server.log" &&
  fail "a worker without the secret announced the model"
start_worker announcer --model softmax --announce-layout
announcer=$WORKER_PID
wait_ok 60 "dmlps-server of the external model" "$SERVER_PID"
wait_ok 30 "worker" "$plain" "$announcer"
grep -qE ":$announcer announced the external model" "$WORK/server.log" ||
  fail "the model was not the announcer's: $(grep announced "$WORK/server.log")"

# A flood of Hellos while the model is awaited: at most one held per
# connection, the server's memory bounded by what a peer may send ahead of
# it (here messages of at most 16 MB, so 4 x 16 MB unread) and the held
# Hellos' 64 MiB, twice over for the allocator's freed pages, beside the
# process's own: 400 MB. Unbounded, the same 4 s of flood took 1 GB.
mv "$WORK/server.log" "$WORK/external-server.log"
start_server --workers 2 --model external --max-seconds 60 --max-message-bytes 16000000
"$ATTACK" hellos "$ENDPOINT" 4 >"$WORK/hellos.out" || fail "the Hello flood failed"
rss=$(awk '/VmRSS/ { print $2 }' "/proc/$SERVER_PID/status")
[ "$rss" -lt 400000 ] || fail "the server holds $rss kB after $(cat "$WORK/hellos.out")"
kill "$SERVER_PID"
wait_for "$SERVER_PID" 30

# A robust rule: no ranks beyond --workers; the extra worker is refused.
mv "$WORK/server.log" "$WORK/flood-server.log"
start_server --workers 2 --model softmax --policy bsp --aggregate median --batch 32 \
  --max-iterations 400 --max-seconds 60
start_workers 2 r --model softmax
wait_log "$WORK/server.log" "all 2 workers ready; training starts" 30
rc=0
"$BIN/dmlps-worker" --server "$ENDPOINT" --model softmax --connect-timeout 20 \
  2>"$WORK/extra.log" || rc=$?
[ "$rc" -ne 0 ] || fail "a third worker joined a job of 2 under --aggregate median"
grep -q "no more may join" "$WORK/extra.log" || fail "the extra worker was not told why: $(cat "$WORK/extra.log")"
wait_for "$SERVER_PID" 60
expect_exit 0 "$RC" "dmlps-server under --aggregate median"
grep -q "joins the running job" "$WORK/server.log" && fail "a rank was added under a robust rule"
echo "roles held: $(cat "$WORK/fake.out"); $(cat "$WORK/hellos.out") held flat at $rss kB"
