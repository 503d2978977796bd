# dmlps-bench profile on the CPU, shrunk: batch sizes in geometric steps, a
# median per size; table, TSV and JSON; an unusable GPU exits 69; bad flags 64.
. "$(dirname "$0")/lib.sh"
bench=$BIN/dmlps-bench

"$bench" profile --device cpu --batch 4..64 --reps 3 --warmup 1 --model mlp:16 --format tsv \
  >"$WORK/profile.tsv" 2>"$WORK/profile.log" || fail "dmlps-bench profile exited $?"
cat "$WORK/profile.tsv"
head -n 1 "$WORK/profile.tsv" |
  grep -q $'^batch\tmedian_ms\tmin_ms\tmax_ms\treps\tsamples_per_s\tus_per_sample$' ||
  fail "unexpected TSV header"
# 4, 8, 16, 32, 64.
[ "$(cut -f 1 "$WORK/profile.tsv" | tail -n +2 | paste -sd ' ')" = "4 8 16 32 64" ] ||
  fail "expected batch sizes 4 8 16 32 64"
awk -F '\t' 'NR > 1 {
  if (NF != 7) { print "columns: " $0; bad = 1 }
  if (!($2 > 0 && $3 > 0 && $3 <= $2 && $2 <= $4)) { print "times: " $0; bad = 1 }
  if ($5 != 3) { print "reps: " $0; bad = 1 }
  # samples/s and us/sample both follow from the median.
  if ((($1 / ($2 / 1000)) / $6 - 1)^2 > 1e-4) { print "samples/s: " $0; bad = 1 }
  if (((($2 * 1000) / $1) / $7 - 1)^2 > 1e-4) { print "us/sample: " $0; bad = 1 }
} END { exit bad }' "$WORK/profile.tsv" || fail "implausible curve"
grep -q "batch 64: median" "$WORK/profile.log" || fail "no progress on stderr"

# Table: title, header, one row per size; the last size is HI even off the
# geometric steps; the CNN profiles too.
"$bench" profile --batch 3..10 --factor 3 --reps 1 --model cnn:2,2 >"$WORK/profile.txt" \
  2>/dev/null || fail "table format exited $?"
cat "$WORK/profile.txt"
expect_table "$WORK/profile.txt" "^dmlps-bench profile: cnn:2,2 (.* parameters) on cpu" \
  "^ *batch  *median ms  *min ms  *max ms  *samples/s  *us/sample$"
[ "$(tail -n +3 "$WORK/profile.txt" | awk '{ print $1 }' | paste -sd ' ')" = "3 9 10" ] ||
  fail "expected batch sizes 3 9 10"

"$bench" profile --batch 8 --reps 2 --model softmax --format json >"$WORK/profile.json" \
  2>/dev/null || fail "--format json exited $?"
if command -v python3 >/dev/null; then
  python3 - "$WORK/profile.json" <<'PY' || fail "bad JSON: $(cat "$WORK/profile.json")"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["device"] == "cpu" and doc["model"] == "softmax", doc
assert doc["num_params"] == 7850, doc
assert doc["config"]["min_batch"] == 8 and doc["config"]["max_batch"] == 8, doc["config"]
rows = doc["rows"]
assert [r["batch"] for r in rows] == [8], rows
assert rows[0]["reps"] == 2 and rows[0]["min_ms"] <= rows[0]["median_ms"] <= rows[0]["max_ms"], rows
PY
fi

# A GPU that cannot be used: one line, exit 69.
rc=0
"$bench" profile --device cuda:1023 --batch 16..32 >"$WORK/gpu.out" 2>"$WORK/gpu.err" || rc=$?
expect_exit 69 "$rc" "profile on cuda:1023"
[ "$(wc -l <"$WORK/gpu.err")" -eq 1 ] || fail "more than one line: $(cat "$WORK/gpu.err")"
grep -q "^dmlps-bench: error: .*cuda:1023" "$WORK/gpu.err" || fail "unexpected: $(cat "$WORK/gpu.err")"
[ ! -s "$WORK/gpu.out" ] || fail "an error wrote to stdout"

# Bad flags: every problem at once, exit 64; another subcommand's flag refused.
rc=0
"$bench" profile --device tpu --batch 64..8 --factor 1 --reps 0 --model cnn:1 \
  >"$WORK/bad.out" 2>"$WORK/bad.err" || rc=$?
expect_exit 64 "$rc" "bad profile flags"
cat "$WORK/bad.err"
for want in "--device" "--batch" "--factor" "--reps" "--model"; do
  grep -q -- "$want" "$WORK/bad.err" || fail "no error naming $want"
done
rc=0
"$bench" profile --policies bsp >/dev/null 2>"$WORK/bad2.err" || rc=$?
expect_exit 64 "$rc" "a flag of dmlps-bench run"
grep -q -- "--policies does not apply to profile" "$WORK/bad2.err" || fail "no error for --policies"
echo "ok: dmlps-bench profile times steps against batch size"
