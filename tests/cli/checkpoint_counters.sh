# Checkpoints crafted with a valid checksum: counters no run reaches
# (iteration 2^63-1, a policy counter of -2^63) are refused with one line
# and exit 65 before any arithmetic on them; one whose momentum holds 3e38
# is taken with --resume-max-value 0 (checkpoint_untrainable.sh: refused
# without), and the updates that would overflow the model are refused while
# the model stays finite.
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3

write_good_checkpoint 20

resume_refused() {  # FILE WHY
  local rc=0
  timeout 30 "$BIN/dmlps-server" --bind 'tcp://127.0.0.1:*' --workers 1 --model softmax \
    --batch 32 --resume "$1" >/dev/null 2>"$WORK/resume.log" || rc=$?
  expect_exit 65 "$rc" "dmlps-server --resume $(basename "$1")"
  grep -q "^dmlps-server: error: .*$2" "$WORK/resume.log" ||
    fail "$(basename "$1"): no '$2' in: $(cat "$WORK/resume.log")"
  [ "$(grep -c "error" "$WORK/resume.log")" -eq 1 ] || fail "more than one line of error"
}
craft_checkpoint "$WORK/good.ckpt" "$WORK/iteration.ckpt" iteration=9223372036854775807
craft_checkpoint "$WORK/good.ckpt" "$WORK/version.ckpt" version=9223372036854775807
craft_checkpoint "$WORK/good.ckpt" "$WORK/samples.ckpt" samples=9223372036854775807
craft_checkpoint "$WORK/good.ckpt" "$WORK/extra.ckpt" policy_extra=-9223372036854775808
resume_refused "$WORK/iteration.ckpt" "implausible count (iteration 9223372036854775807"
resume_refused "$WORK/version.ckpt" "implausible count"
resume_refused "$WORK/samples.ckpt" "implausible count"
resume_refused "$WORK/extra.ckpt" "policy's state holds an implausible count"

# A momentum of 3e38 everywhere: taken with no bound on the values (it is
# finite; and so the crafting is sound), and training goes on without the
# model ever becoming NaN or infinite. At --lr 2 its first step
# (2 * 0.9 * 3e38) would overflow a float: every such update is refused and
# the model stays as saved.
craft_checkpoint "$WORK/good.ckpt" "$WORK/momentum.ckpt" momentum=3e38
rm -f "$WORK/endpoint"
"$BIN/dmlps-server" --bind 'tcp://127.0.0.1:*' --endpoint-file "$WORK/endpoint" --workers 1 \
  --model softmax --batch 32 --lr 2 --resume "$WORK/momentum.ckpt" --resume-max-value 0 \
  --max-iterations 60 --eval-every 10 --save-model "$WORK/model.f32" \
  >"$WORK/server.tsv" 2>"$WORK/server.log" &
SERVER_PID=$!
CHILDREN+=("$SERVER_PID")
await_endpoint
start_worker w1
wait_for "$SERVER_PID" 60
expect_exit 0 "$RC" "dmlps-server resuming a momentum of 3e38"
wait_for "$WORKER_PID" 30
grep -q "refused: it would make the model non-finite" "$WORK/server.log" ||
  fail "no update was refused"
"$PY" - "$WORK/model.f32" <<'PY' || fail "the saved model is not finite"
import math, struct, sys
data = open(sys.argv[1], "rb").read()
values = struct.unpack("<%df" % (len(data) // 4), data)
sys.exit(0 if values and all(math.isfinite(v) for v in values) else 1)
PY
echo "ok: hostile counters refused; a momentum of 3e38 left the model finite"
