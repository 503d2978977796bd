# dmlps-bench sim under codecs: --push-codec int8 sends about 3.9x fewer
# bytes per worker than dense, in a table that compares the two side by
# side (--codecs); a bad codec or both ways of naming one exit 64.
. "$(dirname "$0")/lib.sh"
bench=$BIN/dmlps-bench
# mlp:128 on fashion-mnist's shape: 101,770 parameters, int8 in 398 blocks.
job=(--workers 64 --compute-cost 50,12.4 --policies bsp --target 0 --max-iterations 20
     --eval-every 10)

# MB/worker: the table's tenth column (with codecs, the eleventh).
"$bench" sim "${job[@]}" --codecs none,int8 >"$WORK/both.txt" 2>"$WORK/both.log" ||
  fail "--codecs none,int8 exited $?: $(cat "$WORK/both.log")"
cat "$WORK/both.txt"
expect_table "$WORK/both.txt" "^simulated: 64 workers" "^policy  codecs  *reached .* MB/worker"
dense=$(awk '$2 == "none/none" { print $11 }' "$WORK/both.txt")
int8=$(awk '$2 == "int8/none" { print $11 }' "$WORK/both.txt")
echo "MB/worker: dense $dense, int8 $int8"

# --push-codec alone gives the int8 row's figures; without it, the dense row's.
"$bench" sim "${job[@]}" --push-codec int8 --format tsv >"$WORK/int8.tsv" 2>/dev/null ||
  fail "--push-codec int8 exited $?"
"$bench" sim "${job[@]}" --format tsv >"$WORK/dense.tsv" 2>/dev/null || fail "dense exited $?"
cat "$WORK/int8.tsv" "$WORK/dense.tsv"
head -n 1 "$WORK/int8.tsv" | grep -q $'^policy\tcodecs\truns' || fail "no codecs column"
head -n 1 "$WORK/dense.tsv" | grep -qxF -- "$BENCH_TSV_HEADER" || fail "dense TSV header changed"
bytes() { awk -F '\t' -v c="$2" 'NR == 2 { printf "%.1f", $c / 1e6 }' "$1"; }
[ "$(bytes "$WORK/int8.tsv" 16)" = "$int8" ] ||
  fail "--push-codec int8: $(bytes "$WORK/int8.tsv" 16) MB, the --codecs row $int8"
[ "$(bytes "$WORK/dense.tsv" 15)" = "$dense" ] ||
  fail "dense: $(bytes "$WORK/dense.tsv" 15) MB, the --codecs row $dense"
# Each iteration a push and a bare pull: (96 + 4 * 101770 + 96) bytes dense,
# (96 + 4 * 398 + 101770 + 96) under int8: 3.93x fewer.
d=$(awk -F '\t' 'NR == 2 { print $15 }' "$WORK/dense.tsv")
i=$(awk -F '\t' 'NR == 2 { print $16 }' "$WORK/int8.tsv")
awk -v d="$d" -v i="$i" 'BEGIN { exit !(i > 0 && d / i > 3.92 && d / i < 3.94) }' ||
  fail "int8 sent $i bytes per worker against dense's $d, not 3.93x fewer"

# The server's link carries pushes in and models out at once: with int8
# pushes the dense models bound an iteration on 1 Gbit/s links, and int8
# pulls shorten it. Workers do not send models: MB/worker stays.
"$bench" sim "${job[@]}" --link-gbps 1 --codecs int8,int8/int8 --format tsv \
  >"$WORK/pull.tsv" 2>/dev/null || fail "--codecs int8,int8/int8 exited $?"
cat "$WORK/pull.tsv"
awk -F '\t' 'NR == 2 { d = $5; db = $16 } NR == 3 { p = $5; pb = $16 }
  END { exit !(p < 0.8 * d && pb == db) }' "$WORK/pull.tsv" ||
  fail "int8 pulls did not shorten the run, or changed what workers send"

# Bad codecs: an error naming the flag, exit 64.
for bad in "--push-codec int9" "--pull-codec topk:0" "--codecs int8,fp16/x" \
  "--codecs int8 --push-codec fp16" "--codecs int8,int8"; do
  # shellcheck disable=SC2086
  run_tool 64 dmlps-bench sim "${job[@]}" $bad
  head -n 1 "$WORK/err" | grep -q "^dmlps-bench: error: --[a-z-]*codec" ||
    fail "$bad: $(cat "$WORK/err")"
done
