#!/usr/bin/env bash
# dmlps-bench run gives every server a job's own flags (--server-args: here
# AdamW with weight decay) and times runs to a loss target (--target-loss);
# a flag the bench sets itself is refused rather than given twice.
. "$(dirname "$0")/lib.sh"

"$BIN/dmlps-bench" run --workers 2 --policies bsp,backup:1 --model softmax --batch 64 \
  --lr 0.003 --slowdown 1 --server-args '--optimizer adamw --weight-decay 0.01' \
  --target-loss 0.8 --eval-every 10 --max-seconds 60 --out "$WORK/out" --format tsv \
  >"$WORK/table.tsv" 2>"$WORK/bench.log" && RC=0 || RC=$?
expect_exit 0 "$RC" "dmlps-bench run with --server-args and --target-loss"
for run in bsp-1 backup-1-1; do
  grep -q "optimizer: adamw lr=0.003" "$WORK/out/$run/server.log" ||
    fail "$run: the server did not take --server-args"
  # The server refuses --momentum beside --optimizer adamw: a run that
  # reached its target was not given it.
  grep -q "reached loss" "$WORK/out/$run/server.log" || fail "$run: no loss target reached"
done
[ "$(grep -c . "$WORK/table.tsv")" -ge 3 ] || fail "no table: $(cat "$WORK/table.tsv")"

"$BIN/dmlps-bench" run --workers 2 --policies bsp --server-args '--lr 0.1' \
  >/dev/null 2>"$WORK/refused.log" && RC=0 || RC=$?
expect_exit 64 "$RC" "--server-args repeating a flag of the bench"
grep -qF -- "--server-args: --lr is one dmlps-bench sets itself" "$WORK/refused.log" ||
  fail "the refusal does not say why: $(cat "$WORK/refused.log")"
"$BIN/dmlps-bench" run --workers 2 --policies bsp --momentum 0.5 \
  --server-args '--optimizer adam' >/dev/null 2>"$WORK/refused.log" && RC=0 || RC=$?
expect_exit 64 "$RC" "--momentum with an Adam server"
grep -qF -- "--momentum is sgd's" "$WORK/refused.log" || fail "no word on --momentum"
echo "ok: --server-args and --target-loss reach every server; $(tail -n +2 "$WORK/table.tsv" | cut -f 1-4 | tr '\n' ' ')"
