# dmlps-bench codec, shrunk: a row per codec and size, the encoded sizes
# and compression ratios each codec's format implies, figures that agree
# with each other (no speed is judged: the machine's load decides those);
# table, TSV and JSON; the kernel sets; bad flags 64.
. "$(dirname "$0")/lib.sh"
bench=$BIN/dmlps-bench

"$bench" codec --sizes 64K,1M --repeat 2 --format tsv >"$WORK/codec.tsv" 2>"$WORK/codec.log" ||
  fail "dmlps-bench codec exited $?"
cat "$WORK/codec.tsv"
head -n 1 "$WORK/codec.tsv" | grep -q $'^codec\tkernels\tbytes\tencoded_bytes\tratio\tencode_ms\tdecode_ms\tadd_ms\tmemcpy_ms\tencode_gbps\tdecode_gbps\tadd_gbps\tmemcpy_gbps\tvs_memcpy\tpays_below_gbps\trepeat$' ||
  fail "unexpected TSV header"
# The default codecs, in order, for each size.
[ "$(tail -n +2 "$WORK/codec.tsv" | cut -f 1,3 | paste -sd ' ')" = \
  "$(printf 'fp16\t65536 bf16\t65536 int8\t65536 topk:0.01\t65536 fp16\t1048576 bf16\t1048576 int8\t1048576 topk:0.01\t1048576')" ] ||
  fail "expected fp16, bf16, int8, topk:0.01 at 64K and 1M"
awk -F '\t' '
  function ceil(x) { return x == int(x) ? x : int(x) + 1 }
  function near(a, b) { return (a - b)^2 <= (1e-3 * b)^2 + 1e-12 }
  NR > 1 {
    n = $3 / 4
    if ($1 == "fp16" || $1 == "bf16") want = 2 * n
    else if ($1 == "int8") want = 4 * ceil(n / 256) + n
    else if ($1 == "topk:0.01") want = 4 * ceil(n / 65536) + 6 * ceil(0.01 * n)
    if (NF != 16) { print "columns: " $0; bad = 1 }
    if ($4 != want) { print "encoded bytes " $4 ", not " want ": " $0; bad = 1 }
    if (!near($5, $3 / $4)) { print "ratio: " $0; bad = 1 }
    if ($1 ~ /^(fp16|bf16)$/ && $5 != 2) { print "a half is not half a float: " $0; bad = 1 }
    if ($1 == "int8" && !($5 >= 3.9 && $5 < 4)) { print "int8 ratio: " $0; bad = 1 }
    if ($1 == "topk:0.01" && !($5 >= 50)) { print "topk:0.01 ratio: " $0; bad = 1 }
    if (!($6 > 0 && $7 > 0 && $8 > 0 && $9 > 0)) { print "times: " $0; bad = 1 }
    # The rates and ratios follow from the medians.
    if (!near($10, $3 / ($6 * 1e6)) || !near($11, $3 / ($7 * 1e6)) || !near($13, $3 / ($9 * 1e6))) {
      print "GB/s: " $0; bad = 1
    }
    if (!near($14, $9 / ($6 + $7))) { print "vs memcpy: " $0; bad = 1 }
    if (!near($15, 8 * ($3 - $4) / (($6 + $7) * 1e6))) { print "pays below: " $0; bad = 1 }
    if ($16 != 2) { print "repeat: " $0; bad = 1 }
    rows++
  } END { exit bad || rows != 8 }' "$WORK/codec.tsv" || fail "rows that do not add up"
grep -q "int8 1M on .*: encode .* GB/s" "$WORK/codec.log" || fail "no progress on stderr"

# Table: title, header, rows, then int8's goal line for each size; the
# scalar kernels beside auto's.
"$bench" codec --codecs int8,none,topk:0.5 --sizes 4K --kernels scalar,auto --repeat 1 \
  >"$WORK/codec.txt" 2>/dev/null || fail "table format exited $?"
cat "$WORK/codec.txt"
expect_table "$WORK/codec.txt" "^dmlps-bench codec: one core, kernels scalar,.* (auto)" \
  "^codec  *kernels  *size  *ratio  *encode GB/s  *decode GB/s  *add GB/s  *memcpy GB/s  *vs memcpy  *pays below Gbit/s$"
[ "$(sed -n '3,8p' "$WORK/codec.txt" | awk '{ print $1 "/" $3 "/" $4 }' | paste -sd ' ')" = \
  "int8/4K/3.94 none/4K/1.00 topk:0.5/4K/1.33 int8/4K/3.94 none/4K/1.00 topk:0.5/4K/1.33" ] ||
  fail "expected int8, none and topk:0.5 at 4K with their ratios, twice"
[ "$(sed -n '3,5p' "$WORK/codec.txt" | awk '{ print $2 }' | sort -u)" = scalar ] ||
  fail "the first set's rows are not scalar"
auto_set=$(sed -n '6,8p' "$WORK/codec.txt" | awk '{ print $2 }' | sort -u)
[ "$auto_set" = avx2 ] || [ "$auto_set" = scalar ] || fail "auto's rows ran on '$auto_set'"
[ "$(grep -c '^goal: int8 encode+decode at 4K on .*: .*x memcpy.s speed (.* 0.25x): \(met\|not met\)$' \
  "$WORK/codec.txt")" -eq 2 ] || fail "expected a goal line per int8 row"

# The AVX2 set where the CPU has AVX2, F16C and FMA; elsewhere one line, 69.
rc=0
"$bench" codec --codecs fp16 --sizes 4K --kernels avx2 --repeat 1 --format tsv \
  >"$WORK/avx2.tsv" 2>"$WORK/avx2.err" || rc=$?
flags=$(grep -m 1 '^flags' /proc/cpuinfo 2>/dev/null || true)
if [[ " $flags " == *" avx2 "* && " $flags " == *" f16c "* && " $flags " == *" fma "* ]]; then
  expect_exit 0 "$rc" "codec --kernels avx2 on a CPU with AVX2"
  [ "$(tail -n +2 "$WORK/avx2.tsv" | cut -f 2)" = avx2 ] || fail "no avx2 row"
  [ "$auto_set" = avx2 ] || fail "auto ran $auto_set on a CPU with AVX2"
else
  expect_exit 69 "$rc" "codec --kernels avx2 on a CPU without AVX2"
  grep -q '^dmlps-bench: error: --kernels avx2: ' "$WORK/avx2.err" || fail "$(cat "$WORK/avx2.err")"
fi

"$bench" codec --codecs bf16 --sizes 8K --repeat 3 --format json >"$WORK/codec.json" 2>/dev/null ||
  fail "--format json exited $?"
/usr/bin/python3 - "$WORK/codec.json" <<'PY' || fail "bad JSON: $(cat "$WORK/codec.json")"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["title"].startswith("dmlps-bench codec"), doc
assert doc["config"] == {"codecs": ["bf16"], "sizes": [8192], "kernels": ["auto"], "repeat": 3}, doc
(row,) = doc["rows"]
assert row["codec"] == "bf16" and row["bytes"] == 8192 and row["encoded_bytes"] == 4096, row
assert row["ratio"] == 2 and row["repeat"] == 3 and row["encode_ms"] > 0, row
PY

# Bad flags: every problem at once, exit 64; another subcommand's flag refused.
rc=0
"$bench" codec --codecs fp16,int4,topk:2 --sizes 3,4M --repeat 0 --kernels gpu \
  >"$WORK/bad.out" 2>"$WORK/bad.err" || rc=$?
expect_exit 64 "$rc" "bad codec flags"
cat "$WORK/bad.err"
for want in "--codecs: 'int4'" "--sizes: 3 bytes" "--repeat" "--kernels: 'gpu'"; do
  grep -q -- "$want" "$WORK/bad.err" || fail "no error naming $want"
done
[ ! -s "$WORK/bad.out" ] || fail "an error wrote to stdout"
rc=0
"$bench" codec --transports tcp >/dev/null 2>"$WORK/bad2.err" || rc=$?
expect_exit 64 "$rc" "a flag of dmlps-bench transport"
grep -q -- "--transports does not apply to codec" "$WORK/bad2.err" || fail "no error for --transports"
echo "ok: dmlps-bench codec times the codecs against memcpy"
