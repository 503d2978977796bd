# --resume refuses a corrupt and a truncated checkpoint with a one-line
# error and exit 65, a missing one with 66, one of another model with 78;
# a good one is taken.
. "$(dirname "$0")/lib.sh"
write_good_checkpoint 30
size=$(stat -c %s "$WORK/good.ckpt")

cp "$WORK/good.ckpt" "$WORK/corrupt.ckpt"
printf '\x55' | dd of="$WORK/corrupt.ckpt" bs=1 seek=$((size / 2)) conv=notrunc status=none
cmp -s "$WORK/good.ckpt" "$WORK/corrupt.ckpt" && printf '\xaa' |
  dd of="$WORK/corrupt.ckpt" bs=1 seek=$((size / 2)) conv=notrunc status=none
head -c $((size - 100)) "$WORK/good.ckpt" >"$WORK/truncated.ckpt"
printf 'not a checkpoint' >"$WORK/text.ckpt"

resume() {
  local want=$1 file=$2 why=$3
  shift 3
  local rc=0
  timeout 30 "$BIN/dmlps-server" --bind 'tcp://127.0.0.1:*' --workers 1 --model softmax \
    --resume "$file" "$@" >/dev/null 2>"$WORK/resume.log" || rc=$?
  expect_exit "$want" "$rc" "dmlps-server --resume $(basename "$file")"
  grep -q "^dmlps-server: error: .*$why" "$WORK/resume.log" ||
    fail "$(basename "$file"): no '$why' in: $(cat "$WORK/resume.log")"
  [ "$(grep -c "error" "$WORK/resume.log")" -eq 1 ] || fail "more than one line of error"
}
resume 65 "$WORK/corrupt.ckpt" "checksum mismatch"
resume 65 "$WORK/truncated.ckpt" "truncated checkpoint"
resume 65 "$WORK/text.ckpt" "not a dmlps checkpoint"
resume 66 "$WORK/missing.ckpt" "no such checkpoint"
resume 78 "$WORK/good.ckpt" "a checkpoint of model softmax" --model mlp:8
# The good one is taken: it resumes at iteration 30 and stops at once at
# its limit.
rc=0
timeout 60 "$BIN/dmlps-server" --bind 'tcp://127.0.0.1:*' --endpoint-file "$WORK/ep2" --workers 1 \
  --model softmax --batch 32 --resume "$WORK/good.ckpt" --max-iterations 40 --eval-every 10 \
  --report "$WORK/report" >/dev/null 2>"$WORK/resume-good.log" &
SERVER_PID=$!
CHILDREN+=("$SERVER_PID")
for _ in $(seq 100); do [ -s "$WORK/ep2" ] && break; sleep 0.1; done
"$BIN/dmlps-worker" --server "$(cat "$WORK/ep2")" 2>"$WORK/w1.log" &
CHILDREN+=("$!")
wait_for "$SERVER_PID" 60
expect_exit 0 "$RC" "dmlps-server resuming a good checkpoint"
[ "$(report_value "$WORK/report" resumed_iteration)" = 30 ] || fail "not resumed at iteration 30"
[ "$(report_value "$WORK/report" iterations)" = 40 ] || fail "did not stop at iteration 40"
echo "ok: corrupt, truncated and foreign checkpoints refused; a good one resumed"
