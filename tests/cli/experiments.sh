# The experiment scripts in share/dmlps/experiments: each explains itself,
# refuses what it does not know, and one runs end to end, shrunk.
. "$(dirname "$0")/lib.sh"
dir="${DMLPS_SOURCE_DIR:?}/share/dmlps/experiments"
for script in "$dir"/*.sh; do
  name=$(basename "$script")
  [ "$name" = common.sh ] && continue
  "$script" --help >"$WORK/help" 2>&1 || fail "$name --help exited $?"
  grep -q "^usage: $name" "$WORK/help" || fail "$name --help: $(head -n 2 "$WORK/help")"
  rc=0
  "$script" --bogus >/dev/null 2>"$WORK/err" || rc=$?
  expect_exit 64 "$rc" "$name --bogus"
  grep -q "unknown option '--bogus'" "$WORK/err" || fail "$name: unclear error: $(cat "$WORK/err")"
done
# dmlps-bench run options after -- reach it: 2 workers, 10 iterations.
"$dir/abps-vs-ssp.sh" --bin "$BIN" --repeat 1 --out "$WORK/out" -- --workers 2 --slowdown 1,2 \
  --target 0 --max-iterations 10 --batch 32 --format tsv >"$WORK/table" 2>"$WORK/run.log" ||
  fail "abps-vs-ssp.sh exited $?"
cat "$WORK/table"
for policy in bsp abps ssp:3 asp; do
  grep -q "^$policy"$'\t1\t1\t' "$WORK/table" || fail "no finished $policy row"
done
stats="$dir/stats.py"
# table FILE RUN...: a table as dmlps-bench writes it with --format json,
# its runs POLICY=SECONDS[@ITERATIONS] (100 iterations unless given), a
# SECONDS of "-" a run that missed the target.
table() {
  local file=$1 run value seconds iterations reached sep=""
  shift
  mkdir -p "$(dirname "$file")"
  {
    printf '{"title":"made by the test","policies":[],"runs":['
    for run in "$@"; do
      value=${run#*=} iterations=100 reached=true
      seconds=${value%%@*}
      [[ $value == *@* ]] && iterations=${value#*@}
      [ "$seconds" = - ] && reached=false seconds=0.5
      printf '%s{"policy":"%s","repeat":1,"reached":%s,"seconds":%s,"iterations":%s,"failure":null}' \
        "$sep" "${run%%=*}" "$reached" "$seconds" "$iterations"
      sep=,
    done
    printf ']}\n'
  } >"$file"
}

# stats.py medians: each policy's median, a missed run the slowest, and a
# bootstrap interval of it that holds the median; the same seed draws the
# same interval, and a lower level's lies within a higher one's.
table "$WORK/m.json" bsp=7 bsp=2 bsp=9 bsp=1 bsp=5 bsp=3 bsp=8 bsp=4 bsp=6 \
  backup:1=2 backup:1=- backup:1=1 auto=- auto=-
"$stats" medians --seed 7 "$WORK/m.json" >"$WORK/medians" || fail "stats.py medians exited $?"
cat "$WORK/medians"
read -r _ runs reached median low dash high < <(grep '^bsp ' "$WORK/medians")
[ "$runs $reached $median $dash" = "9 9 5 -" ] || fail "medians: bsp is not 9 runs, median 5"
awk -v l="$low" -v h="$high" 'BEGIN { exit !(1 <= l && l <= 5 && 5 <= h && h <= 9 && l < h) }' ||
  fail "medians: bsp's interval $low-$high does not hold its median 5 within its runs"
grep -qE '^backup:1 +3 +2 +2 ' "$WORK/medians" || fail "medians: a missed run is not the slowest"
grep -qE '^auto +2 +0 +- ' "$WORK/medians" || fail "medians: no median where every run missed"
"$stats" medians --seed 7 "$WORK/m.json" | cmp -s - "$WORK/medians" || fail "medians: a seed draws afresh"
read -r _ _ _ _ inner_low _ inner_high < <("$stats" medians --seed 7 --level 0.5 "$WORK/m.json" | grep '^bsp ')
awk -v l="$low" -v h="$high" -v a="$inner_low" -v b="$inner_high" 'BEGIN { exit !(l <= a && b <= h) }' ||
  fail "medians: the 50% interval $inner_low-$inner_high is not within the 95% one $low-$high"
# stats.py median: of numbers on stdin, "-" the slowest.
[ "$(printf '3\n-\n1\n' | "$stats" median)" = 3 ] || fail "median: not 3 of 1, 3 and a missed run"
[ "$(printf '150\n151\n' | "$stats" median)" = 150.5 ] || fail "median: not the mean of the middle two"
[ "$(printf '%s' '' | "$stats" median)" = - ] || fail "median: not - of nothing"
# stats.py summary --choice: the policy auto ran most, from its runs' ran_under.
mkdir -p "$WORK/c"
printf '%s\n' '{"runs":[' \
  '{"policy":"bsp","reached":true,"seconds":2,"iterations":100,"failure":null},' \
  '{"policy":"backup:1","reached":true,"seconds":3,"iterations":90,"failure":null},' \
  '{"policy":"auto","reached":true,"seconds":2.1,"iterations":50,"failure":null,' \
  '"ran_under":[{"policy":"backup:1","iterations":30},{"policy":"bsp","iterations":20}]},' \
  '{"policy":"auto","reached":true,"seconds":2.1,"iterations":40,"failure":null,' \
  '"ran_under":[{"policy":"backup:1","iterations":5},{"policy":"bsp","iterations":35}]}]}' \
  >"$WORK/c/sim-4-none.json"
"$stats" summary --profiles none --policies bsp,backup:1 --choice "$WORK/c/sim-4-{profile}.json" \
  >"$WORK/choice" || fail "stats.py summary --choice exited $?"
cat "$WORK/choice"
grep -qE '^none +2 +3 +bsp +2 +2.1 +1.05 +yes +bsp +2 +yes$' "$WORK/choice" ||
  fail "summary --choice: auto ran bsp most (55 iterations to 35)"
grep -q '^auto chose the best or one within 5% of it in 1 of 1 cases$' "$WORK/choice" ||
  fail "summary --choice: no count of right choices"
# Refusals: not JSON (65), no table (66), a bad flag (64).
echo '{"runs": [' >"$WORK/bad.json"
for case in "65 medians $WORK/bad.json" "66 medians $WORK/none.json" "64 medians --draws 0 $WORK/m.json" \
  "64 summary --profiles none $WORK/c/sim-4-{profile}.json"; do
  read -r want args <<<"$case"
  rc=0
  # shellcheck disable=SC2086  # the case's words
  "$stats" $args >/dev/null 2>"$WORK/err" || rc=$?
  expect_exit "$want" "$rc" "stats.py $args"
  [ "$(wc -l <"$WORK/err")" -eq 1 ] && grep -q '^stats.py: error: ' "$WORK/err" ||
    fail "stats.py $args: not a one-line error: $(cat "$WORK/err")"
done

# auto-profiles.sh --efficiency: each policy's mean iterations to the
# target over BSP's, per profile, from the real tables of every sitting
# under --out (two here, one behind a link); runs that did not reach the
# target do not count, and a policy missing a profile gets no row.
sit="$WORK/sittings"
for profile in none slow delay; do
  table "$WORK/s1/run-4-$profile.json" bsp=1@200 backup:1=1@230
  more=()
  [ "$profile" = none ] && more=(ssp:3=1@1500)
  table "$sit/s2/run-4-$profile.json" bsp=1@100 backup:1=1@115 backup:1=-@3000 auto=1@10 "${more[@]}"
done
ln -s "$WORK/s1" "$sit/s1"
"$dir/auto-profiles.sh" --bin "$BIN" --out "$sit" --efficiency >"$WORK/rows" 2>"$WORK/err" ||
  fail "auto-profiles.sh --efficiency exited $?: $(cat "$WORK/err")"
cat "$WORK/rows"
# Rows of share/dmlps/efficiency.tsv.
grep -q $'^row\tbsp\t1.00\t1.00\t1.00\t150 (2), 150 (2), 150 (2) iterations' "$WORK/rows" ||
  fail "--efficiency: no bsp row"
grep -q $'^row\tbackup:1\t1.15\t1.15\t1.15\t172 (2), 172 (2), 172 (2) iterations' "$WORK/rows" ||
  fail "--efficiency: backup:1's row is not the mean of its runs that reached"
grep -q 'ssp\|auto' "$WORK/rows" && fail "--efficiency: a row for a policy without all three profiles"
rc=0
"$dir/auto-profiles.sh" --bin "$BIN" --out "$WORK/empty" --efficiency >/dev/null 2>"$WORK/err" || rc=$?
expect_exit 66 "$rc" "auto-profiles.sh --efficiency without runs"
grep -q "no real runs" "$WORK/err" || fail "--efficiency without runs: $(cat "$WORK/err")"

# auto-profiles.sh --pooled: the summary of every real run under --out,
# sittings pooled (one behind a link): each policy's median over all its
# runs, a run that missed the target the slowest; a profile without runs
# is refused.
pool="$WORK/pool"
table "$pool/a/run-4-none.json" bsp=2.0 backup:1=1.0 auto=2.0
table "$WORK/b/run-4-none.json" bsp=4.0 bsp=3.0 backup:1=5.0 backup:1=- auto=3.2 auto=3.4
table "$pool/a/run-4-slow.json" bsp=6.0 backup:1=2.0 auto=2.6
table "$WORK/b/run-4-slow.json" bsp=6.0 backup:1=2.4
ln -s "$WORK/b" "$pool/b"
"$dir/auto-profiles.sh" --bin "$BIN" --out "$pool" --pooled --profiles none,slow \
  --policies bsp,backup:1 >"$WORK/pooled" 2>"$WORK/err" ||
  fail "auto-profiles.sh --pooled exited $?: $(cat "$WORK/err")"
cat "$WORK/pooled"
grep -q '^== pooled: 14 runs in 4 tables$' "$WORK/pooled" || fail "--pooled: not every run counted"
grep -qE '^none +3 +5 +bsp +3 +3.2 +1.07 +yes$' "$WORK/pooled" ||
  fail "--pooled: none is not the medians of every sitting's runs"
grep -qE '^slow +6 +2.2 +backup:1 +2.2 +2.6 +1.18 +NO$' "$WORK/pooled" ||
  fail "--pooled: slow is not the medians of every sitting's runs"
grep -qE '^total +9 +7.2 +5.8$' "$WORK/pooled" || fail "--pooled: no totals"
grep -q 'every profile: FAIL$' "$WORK/pooled" || fail "--pooled: the 1.1x criterion"
grep -q "total below every fixed policy's total: PASS$" "$WORK/pooled" || fail "--pooled: the total criterion"
rc=0
"$dir/auto-profiles.sh" --bin "$BIN" --out "$pool" --pooled --profiles none,delay \
  --policies bsp,backup:1 >/dev/null 2>"$WORK/err" || rc=$?
expect_exit 66 "$rc" "auto-profiles.sh --pooled without a profile's runs"
grep -q "no run of profile delay" "$WORK/err" || fail "--pooled without delay: $(cat "$WORK/err")"

# auto-profiles.sh --oracle: the policy of each profile's lowest mean
# median, its medians from one sitting against another's fixed medians,
# every ordered pair; auto's own score per sitting; a sitting short of a
# profile is no sitting; one sitting is refused.
sittings="$WORK/oracle"
table "$sittings/a/run-4-none.json" bsp=2.0 backup:1=3.0 auto=2.1
table "$sittings/a/run-4-slow.json" bsp=6.0 backup:1=2.0 auto=2.1
table "$sittings/b/run-4-none.json" bsp=2.4 backup:1=2.2 auto=2.9
table "$sittings/b/run-4-slow.json" bsp=6.0 backup:1=2.5 auto=2.4
table "$sittings/short/run-4-none.json" bsp=1.0 backup:1=1.0 auto=1.0
"$dir/auto-profiles.sh" --bin "$BIN" --out "$sittings" --oracle --profiles none,slow \
  --policies bsp,backup:1 >"$WORK/oracle.txt" 2>"$WORK/err" ||
  fail "auto-profiles.sh --oracle exited $?: $(cat "$WORK/err")"
cat "$WORK/oracle.txt"
grep -q '^== oracle: 2 sittings, 2 ordered pairs$' "$WORK/oracle.txt" ||
  fail "--oracle: not the two whole sittings"
grep -qE '^none +bsp +1/2 +1/2$' "$WORK/oracle.txt" || fail "--oracle: none"
grep -qE '^slow +backup:1 +1/2 +2/2$' "$WORK/oracle.txt" || fail "--oracle: slow"
grep -qE '^all at once +1/2 +1/2$' "$WORK/oracle.txt" || fail "--oracle: all at once"
grep -qE '^total below every +2/2 +1/2$' "$WORK/oracle.txt" || fail "--oracle: the totals"
rc=0
"$dir/auto-profiles.sh" --bin "$BIN" --out "$sittings/a" --oracle --profiles none,slow \
  --policies bsp,backup:1 >/dev/null 2>"$WORK/err" || rc=$?
expect_exit 66 "$rc" "auto-profiles.sh --oracle with one sitting"
grep -q "needs two sittings or more" "$WORK/err" || fail "--oracle with one sitting: $(cat "$WORK/err")"
# auto-profiles.sh --draws: sittings drawn from the runs under --out, each
# chooser's share of them that passes; every run alike in a policy and
# profile (one missed, counted the slowest) makes the shares exact; fewer
# than three runs of a policy, or a count that is not one, is refused.
drawn="$WORK/drawn"
table "$drawn/s/run-4-none.json" bsp=2.0 bsp=2.0 bsp=2.0 backup:1=3.0 backup:1=3.0 backup:1=3.0 \
  backup:1=- auto=2.1 auto=2.1 auto=2.1
table "$drawn/s/run-4-slow.json" bsp=6.0 bsp=6.0 bsp=6.0 backup:1=2.0 backup:1=2.0 backup:1=2.0 \
  auto=2.4 auto=2.4 auto=2.4 auto=2.4
"$dir/auto-profiles.sh" --bin "$BIN" --out "$drawn" --draws 200 --profiles none,slow \
  --policies bsp,backup:1 >"$WORK/draws" 2>"$WORK/err" ||
  fail "auto-profiles.sh --draws exited $?: $(cat "$WORK/err")"
cat "$WORK/draws"
grep -q '^== draws: 200 sittings drawn from 20 runs' "$WORK/draws" || fail "--draws: not every run"
grep -q '^perfect chooser: none bsp, slow backup:1$' "$WORK/draws" || fail "--draws: the perfect picks"
grep -qE '^auto +1.00 +0.00 +0.00 +1.00 +0.00$' "$WORK/draws" || fail "--draws: auto's shares"
grep -qE '^perfect +1.00 +1.00 +1.00 +1.00 +1.00$' "$WORK/draws" || fail "--draws: the perfect chooser's"
grep -qE '^bsp +1.00 +0.00 +0.00 +0.00 +0.00$' "$WORK/draws" || fail "--draws: bsp's"
grep -qE '^backup:1 +0.00 +1.00 +0.00 +0.00 +0.00$' "$WORK/draws" || fail "--draws: backup:1's"
table "$drawn/s/run-4-slow.json" bsp=6.0 bsp=6.0 bsp=6.0 backup:1=2.0 backup:1=2.0 backup:1=2.0 \
  auto=2.4 auto=2.4
rc=0
"$dir/auto-profiles.sh" --bin "$BIN" --out "$drawn" --draws 10 --profiles none,slow \
  --policies bsp,backup:1 >/dev/null 2>"$WORK/err" || rc=$?
expect_exit 66 "$rc" "auto-profiles.sh --draws with two runs of auto"
grep -q "2 runs of auto in profile slow" "$WORK/err" || fail "--draws with two runs: $(cat "$WORK/err")"
rc=0
"$dir/auto-profiles.sh" --bin "$BIN" --out "$drawn" --draws 0 >/dev/null 2>"$WORK/err" || rc=$?
expect_exit 64 "$rc" "auto-profiles.sh --draws 0"
grep -q "is not a count" "$WORK/err" || fail "--draws 0: $(cat "$WORK/err")"
echo "ok"
