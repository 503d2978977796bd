# The server's TSV across rollbacks: 2 shards, 3 workers under BSP (each
# step held 5 ms, so that the run outlasts two losses), a checkpoint every
# 10 iterations; shard 1 is killed -9 twice and restarted with --resume each
# time, so that shard 0 goes back to its checkpoint twice. The TSV on its
# stdout keeps one header, and its seconds go on from the run's start
# (never back to 0), the pause for the lost shard included; the run's
# report and its "reached ... after X s" line give the time of the TSV's
# line that reached the target.
. "$(dirname "$0")/lib.sh"

start_checkpointing_shards 100 --delay-ms 5

# lose_shard_1 N FROM: once the run is at iteration FROM + 20 and shard 1
# wrote a checkpoint, kills shard 1; waits for shard 0's N-th rollback and
# restarts shard 1 from its checkpoint.
lose_shard_1() {
  local n=$1 from=$2
  wait_log "$WORK/shard-1.log" "checkpoint of iteration [1-9][0-9]* written" 30
  wait_iteration $((from + 20)) 30
  kill -9 "$SHARD_PID"
  wait "$SHARD_PID" 2>/dev/null || true
  for _ in $(seq 150); do
    [ "$(grep -c "goes back to its last checkpoint" "$WORK/server.log")" -ge "$n" ] && break
    sleep 0.1
  done
  [ "$(grep -c "goes back to its last checkpoint" "$WORK/server.log")" -ge "$n" ] ||
    fail "shard 0 did not go back after shard 1's loss number $n"
  mv "$WORK/shard-1.log" "$WORK/shard-1-killed-$n.log"
  start_shard 1 2 "${SHARD1_ARGS[@]}" --resume "$WORK/ckpt.1"
}
lose_shard_1 1 0
wait_log "$WORK/server.log" "training goes on from iteration" 30
resumed=$(sed -n 's/.*training goes on from iteration \([0-9]*\).*/\1/p' "$WORK/server.log" | tail -n 1)
lose_shard_1 2 "$resumed"
wait_ok 60 "dmlps-server --shard 0/2 after two rollbacks" "$SERVER_PID"
wait_ok 20 "a member of the job" "$SHARD_PID" "${WORKERS[@]}"
[ "$(grep -c "rollback [12]: shard 0 starts again" "$WORK/server.log")" -eq 2 ] ||
  fail "shard 0 did not start again twice"

tsv=$WORK/server.tsv
[ "$(grep -c '^seconds' "$tsv")" -eq 1 ] || fail "the TSV repeats its header: $(grep -n '^seconds' "$tsv")"
[ "$(head -n 1 "$tsv")" = $'seconds\titeration\taccuracy\tloss' ] || fail "the TSV's first line is no header"
# The seconds never go back. Each rollback evaluates the checkpoint it went
# back to: its iteration has a line, and the iterations go back or repeat
# only there (when the checkpoint is the iteration the run had reached and
# had not yet scored, the line comes once).
awk -F '\t' 'NR > 2 && $1 + 0 < last { print "line " NR ": " $1 " s after " last " s"; bad = 1 }
             NR > 1 { last = $1 + 0 } END { exit bad }' "$tsv" ||
  fail "the TSV's seconds go back: $(cat "$tsv")"
resumed_at=$(sed -n 's/.*training goes on from iteration \([0-9]*\).*/\1/p' "$WORK/server.log" | tr '\n' ' ')
[ "$(wc -w <<<"$resumed_at")" -eq 2 ] || fail "the log names $(wc -w <<<"$resumed_at") iterations to go on from: $resumed_at"
awk -F '\t' -v resumed="$resumed_at" '
  BEGIN { n = split(resumed, r, " "); for (i = 1; i <= n; i++) want[r[i]] = 1 }
  NR > 2 && $2 + 0 <= last && !($2 in want) { print "line " NR ": iteration " $2 " after " last; bad = 1 }
  NR > 1 { last = $2 + 0; seen[$2] = 1 }
  END { for (k in want) if (!(k in seen)) { print "no line for iteration " k; bad = 1 }; exit bad }' "$tsv" ||
  fail "the TSV's iterations do not show the rollbacks to iterations $resumed_at: $(cat "$tsv")"
[ "$(report_value "$WORK/report" target_reached)" = 1 ] || fail "target not reached"
last_line=$(tail -n 1 "$tsv")
to_target=$(report_value "$WORK/report" seconds_to_target)
awk -v a="$(cut -f 1 <<<"$last_line")" -v b="$to_target" 'BEGIN { exit !(a - b < 0.001 && b - a < 0.001) }' ||
  fail "seconds_to_target $to_target is not the TSV's last line's: $last_line"
logged=$(sed -n 's/.*reached accuracy .* after \([0-9.]*\) s.*/\1/p' "$WORK/server.log")
awk -v a="$logged" -v b="$to_target" 'BEGIN { exit !(a - b < 0.01 && b - a < 0.01) }' ||
  fail "the log says the target was reached after $logged s, the report $to_target s"
echo "two rollbacks, one header, seconds from 0 to $(cut -f 1 <<<"$last_line"):" \
  "accuracy $(report_value "$WORK/report" accuracy) at iteration" \
  "$(report_value "$WORK/report" iterations_to_target) after $logged s"
