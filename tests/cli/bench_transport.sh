# dmlps-bench transport, shrunk: small payloads, a few rounds, every kind of
# row (memcpy, sum on 1 and 2 threads, zmq, zmq-chunks, dmlps with 1 and 2
# workers, dmlps-sharded over 1 and 2 shards, and with --curve dmlps-curve)
# over tcp and ipc; the table's structure, TSV columns and JSON; bad flags
# exit 64.
. "$(dirname "$0")/lib.sh"
bench=$BIN/dmlps-bench
small=(--sizes 64K,256K --chunk-bytes 64K --worker-counts 1,2 --shards 1,2 --shard-workers 2
  --rounds 3 --warmup 1)

# TSV: a header and one row per measurement, figures positive.
"$bench" transport "${small[@]}" --format tsv >"$WORK/table.tsv" 2>"$WORK/bench.log" ||
  fail "dmlps-bench transport exited $?"
# Per size: memcpy, sum on 1 and 2 threads; per transport: zmq, (zmq-chunks
# for 256K), dmlps x2, dmlps-sharded x2. 2 sizes: 2 * 3 + 2 * (5 + 6) = 28 rows.
expect_tsv "$WORK/table.tsv" \
  $'transport\tbytes\twhat\tworkers\tmedian_ms\tmin_ms\tmax_ms\trounds\tgbps\tvs_zmq\tvs_memcpy\tshards\tspeedup\tthreads' 28
awk -F '\t' 'NR > 1 {
  if (NF != 14) { print "columns: " $0; bad = 1 }
  if (!($5 > 0 && $6 > 0 && $6 <= $5 && $5 <= $7)) { print "times: " $0; bad = 1 }
  if ($8 != 3) { print "rounds: " $0; bad = 1 }
  if (!($9 > 0)) { print "GB/s: " $0; bad = 1 }
  for (c = 10; c <= 11; c++) if ($c != "-" && !($c > 0)) { print "ratio " c ": " $0; bad = 1 }
  if ($3 == "zmq" && $10 != 1) { print "zmq against itself: " $0; bad = 1 }
  if ($3 == "memcpy" && $11 != 1) { print "memcpy against itself: " $0; bad = 1 }
  if ($3 == "dmlps" && ($10 == "-" || $11 == "-")) { print "dmlps without ratios: " $0; bad = 1 }
  if ($1 == "mem" && $4 != 0) { print "workers of a local row: " $0; bad = 1 }
  if (($3 == "dmlps-sharded") != ($12 > 0)) { print "shards: " $0; bad = 1 }
  if (($3 == "dmlps-sharded") != ($13 != "-")) { print "speedup: " $0; bad = 1 }
  if ($3 == "dmlps-sharded" && $12 == 1 && $13 != 1) { print "1 shard against itself: " $0; bad = 1 }
  if (($3 == "sum") != ($14 > 0)) { print "threads: " $0; bad = 1 }
  if ($3 == "sum") sums[$2 " " $14] = 1
  # GB/s is every worker'"'"'s push and reply per round.
  if ($3 ~ /^dmlps/ && (g = 2 * $4 * $2 / ($5 / 1000) / 1e9) && ($9 / g > 1.001 || $9 / g < 0.999)) {
    print "GB/s of a dmlps row: " $0; bad = 1
  }
  seen[$1 " " $2 " " $3 " " $4 " " $12] = 1
} END {
  split("tcp ipc", ts, " ")
  for (i in ts) {
    if (!((ts[i] " 65536 zmq 0 0") in seen)) { print "no zmq row for " ts[i]; bad = 1 }
    if (!((ts[i] " 262144 zmq-chunks 0 0") in seen)) { print "no zmq-chunks row for " ts[i]; bad = 1 }
    if (!((ts[i] " 262144 dmlps 2 0") in seen)) { print "no 2-worker row for " ts[i]; bad = 1 }
    if (!((ts[i] " 262144 dmlps-sharded 2 2") in seen)) { print "no 2-shard row for " ts[i]; bad = 1 }
  }
  if (!(("mem 65536 memcpy 0 0") in seen) || !(("mem 262144 sum 0 0") in seen)) { print "no local rows"; bad = 1 }
  if (!(("262144 1") in sums) || !(("262144 2") in sums)) { print "no sum on 1 and 2 threads"; bad = 1 }
  exit bad
}' "$WORK/table.tsv" || fail "implausible table"
grep -q "tcp 256K dmlps with 2 workers: median" "$WORK/bench.log" || fail "no progress on stderr"
grep -q "ipc 64K dmlps-sharded over 2 shards with 2 workers: median" "$WORK/bench.log" ||
  fail "no progress of the sharded rows on stderr"

# Table: a title, a header, the rows, and the aggregation line per size. No
# goal lines: they are for 4M and 64M.
"$bench" transport "${small[@]}" --transports ipc --worker-counts 1 >"$WORK/table.txt" \
  2>/dev/null || fail "table format exited $?"
cat "$WORK/table.txt"
expect_table "$WORK/table.txt" "^dmlps-bench transport: payloads 64K,256K over ipc" \
  "^transport  size  what .*workers  shards  threads  median ms.*vs zmq  vs memcpy  speedup$"
[ "$(grep -c '^ipc ' "$WORK/table.txt")" -eq 9 ] || fail "expected 9 ipc rows"
grep -q '^ipc  *256K  *dmlps-sharded  *2  *2  ' "$WORK/table.txt" || fail "no 2-shard row in the table"
[ "$(grep -c '^aggregation: ' "$WORK/table.txt")" -eq 4 ] || fail "expected 4 aggregation lines"
grep -q '^aggregation: 256K summed on 2 threads at .* memcpy' "$WORK/table.txt" ||
  fail "no aggregation line for 2 threads"
# Without sharded rows, the table keeps its columns.
"$bench" transport --sizes 64K --transports ipc --worker-counts 1 --shards none --rounds 1 \
  --warmup 0 >"$WORK/plain.txt" 2>/dev/null || fail "--shards none exited $?"
sed -n 2p "$WORK/plain.txt" | grep -q "^transport  size  what  *workers  threads  median ms.*vs memcpy$" ||
  fail "--shards none: not the plain header"
if grep -q 'sharded' "$WORK/plain.txt"; then fail "--shards none measured sharded rows"; fi

# --sharded-only, 3 shards of uneven slices (65536 floats) each streamed in 2
# chunks, 3 workers: only the sharded rows, the speedup against 1 shard.
"$bench" transport --sizes 256K --chunk-bytes 64K --transports tcp --sharded-only --shards 1,3 \
  --shard-workers 3 --rounds 3 --warmup 1 --format json >"$WORK/sharded.json" 2>/dev/null ||
  fail "--sharded-only exited $?"
if grep -q '^goal: ' "$WORK/table.txt"; then fail "goal lines for sizes without goals"; fi

# --curve: a dmlps-curve row beside each dmlps row, both transports, with
# ratios; encrypted round trips cannot beat plaintext ZeroMQ by much. The
# check compares fastest rounds (min_ms, column 6): a median of 3 rounds
# under a loaded parallel suite can put the plain reference far above the
# encrypted one.
"$bench" transport --sizes 256K --chunk-bytes 64K --worker-counts 1 --shards none --rounds 3 \
  --warmup 1 --curve --format tsv >"$WORK/curve.tsv" 2>/dev/null || fail "--curve exited $?"
cat "$WORK/curve.tsv"
awk -F '\t' 'NR > 1 { seen[$1 " " $3 " " $4] = $10; fastest[$1 " " $3 " " $4] = $6 } END {
  split("tcp ipc", ts, " ")
  for (i in ts) {
    if (!((ts[i] " dmlps 1") in seen)) { print "no dmlps row for " ts[i]; bad = 1 }
    r = seen[ts[i] " dmlps-curve 1"]
    if (r == "" || r == "-" || !(r > 0)) { print "no dmlps-curve ratio for " ts[i]; bad = 1 }
    c = fastest[ts[i] " dmlps-curve 1"]; z = fastest[ts[i] " zmq 0"]
    if (!(z > 0) || !(c > 0.5 * z)) { print "implausible dmlps-curve row for " ts[i] ": fastest " c " ms, zmq " z " ms"; bad = 1 }
  }
  exit bad
}' "$WORK/curve.tsv" || fail "the --curve rows are missing or implausible"

# JSON parses, with rows, config and goals (4M measured: its goal line;
# streamed in 4 chunks, so zmq-chunks is measured too).
"$bench" transport --sizes 4M --transports ipc --worker-counts 1 --shards none --rounds 2 \
  --warmup 0 --chunk-bytes 1M --format json >"$WORK/table.json" 2>/dev/null || fail "--format json exited $?"
if command -v python3 >/dev/null; then
  python3 - "$WORK/table.json" <<'PY' || fail "bad JSON: $(cat "$WORK/table.json")"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["config"]["sizes"] == [4 << 20], doc["config"]
whats = [r["what"] for r in doc["rows"]]
assert whats == ["memcpy", "sum", "sum", "zmq", "zmq-chunks", "dmlps"], whats
assert [r["threads"] for r in doc["rows"]] == [0, 1, 2, 0, 0, 0], doc["rows"]
assert doc["config"]["sum_threads"] == [1, 2], doc["config"]
for r in doc["rows"]:
    assert r["median_ms"] > 0 and r["min_ms"] <= r["median_ms"] <= r["max_ms"], r
    assert r["gbps"] > 0 and r["rounds"] == 2, r
    for k in ("vs_zmq", "vs_memcpy"):
        assert r[k] is None or r[k] > 0, r
goals = doc["goals"]
assert len(goals) == 1 and goals[0]["transport"] == "ipc" and goals[0]["limit"] == 1.15, goals
assert goals[0]["value"] > 0 and isinstance(goals[0]["met"], bool), goals
PY
  python3 - "$WORK/sharded.json" <<'PY' || fail "bad sharded JSON: $(cat "$WORK/sharded.json")"
import json, sys
doc = json.load(open(sys.argv[1]))
c = doc["config"]
assert c["shards"] == [1, 3] and c["shard_workers"] == 3 and c["sharded_only"], c
rows = doc["rows"]
assert [(r["what"], r["shards"], r["workers"]) for r in rows] == \
    [("dmlps-sharded", 1, 3), ("dmlps-sharded", 3, 3)], rows
assert rows[0]["speedup"] == 1, rows[0]
ratio = rows[0]["median_ms"] / rows[1]["median_ms"]
assert abs(rows[1]["speedup"] - ratio) < 1e-9 * ratio, rows
for r in rows:
    assert r["vs_zmq"] is None and r["vs_memcpy"] is None and r["rounds"] == 3, r
    assert abs(r["gbps"] - 6 * (256 << 10) / r["median_ms"] / 1e6) < 1e-6 * r["gbps"], r
assert "dmlps-sharded with 1,3 server shards and 3 workers" in doc["title"], doc["title"]
PY
else
  echo "python3 missing: JSON not checked"
fi

# Bad flags: every problem reported, exit 64; another subcommand's flag refused.
rc=0
"$bench" transport --sizes 4M,3,x --transports tcp,udp --worker-counts 0 --rounds 0 \
  --chunk-bytes 0 --format yaml >"$WORK/bad.out" 2>"$WORK/bad.err" || rc=$?
expect_exit 64 "$rc" "bad transport flags"
cat "$WORK/bad.err"
for want in "--sizes: 'x'" "--rounds" "--chunk-bytes" "--format"; do
  grep -q -- "$want" "$WORK/bad.err" || fail "no error naming $want"
done
[ ! -s "$WORK/bad.out" ] || fail "a usage error wrote to stdout"
rc=0
"$bench" transport --sizes 4M,6 --transports udp --worker-counts 0 --sum-threads 0 >/dev/null \
  2>"$WORK/bad2.err" || rc=$?
expect_exit 64 "$rc" "invalid transport config"
for want in "--sizes: 6 bytes" "unknown transport 'udp'" "--worker-counts: 0" "--sum-threads: 0"; do
  grep -q -- "$want" "$WORK/bad2.err" || fail "no error naming $want: $(cat "$WORK/bad2.err")"
done
rc=0
"$bench" transport --sizes 8 --shards 4 --shard-workers 65 >/dev/null 2>"$WORK/bad4.err" || rc=$?
expect_exit 64 "$rc" "bad shard flags"
for want in "--shards: 4 shards need at least 4 floats" "--shard-workers"; do
  grep -q -- "$want" "$WORK/bad4.err" || fail "no error naming $want: $(cat "$WORK/bad4.err")"
done
[ "$(wc -l <"$WORK/bad4.err")" -eq 3 ] || fail "not one line per problem: $(cat "$WORK/bad4.err")"
rc=0
"$bench" transport --shards 2,y --sharded-only >/dev/null 2>"$WORK/bad5.err" || rc=$?
expect_exit 64 "$rc" "a shard count that is not a number"
grep -q -- "--shards: 'y' is not a number of shards" "$WORK/bad5.err" || fail "no error for --shards y"
rc=0
"$bench" transport --policies bsp >/dev/null 2>"$WORK/bad3.err" || rc=$?
expect_exit 64 "$rc" "a flag of dmlps-bench run"
grep -q -- "--policies does not apply to transport" "$WORK/bad3.err" || fail "no error for --policies"
echo "ok: dmlps-bench transport tabulates, bad flags exit 64"
