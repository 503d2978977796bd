# share/dmlps/experiments/shard-scaling.sh at a tiny size: 4 workers and
# 1 or 2 server shards, each on a host (network namespace) of its own with
# its link capped at 50 Mbit/s, so that every shard's link is the limit.
# With 2 shards each link carries half the model, so the cluster must move
# clearly more bytes per second than with 1; shards that took their turns
# (one link busy at a time) would not. Everything the script made is gone
# afterwards. Skips (77) where namespaces cannot be made or entered.
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root to make network namespaces"; exit 77; }
{ command -v ip && command -v tc; } >/dev/null || { echo "SKIP: needs iproute2 (ip, tc)"; exit 77; }
script="${DMLPS_SOURCE_DIR:?}/share/dmlps/experiments/shard-scaling.sh"

rc=0
timeout 300 "$script" --bin "$BIN" --out "$WORK/out" --repeat 1 --shards 1,2 --workers 4 \
  --rate 50mbit --model mlp:128 --iterations 8 --timeout 120 --format tsv \
  >"$WORK/table.tsv" 2>"$WORK/script.log" || rc=$?
if [ "$rc" -eq 77 ]; then
  echo "SKIP: $(tail -n 1 "$WORK/script.log")"
  exit 77
fi
cat "$WORK/script.log"
expect_exit 0 "$rc" "shard-scaling.sh"
cat "$WORK/table.tsv"
head -n 1 "$WORK/table.tsv" | grep -qxF \
  $'shards\truns\titeration_ms_median\titeration_ms_min\titeration_ms_max\tmbytes_per_s\tspeedup' ||
  fail "unexpected TSV header"
[ "$(wc -l <"$WORK/table.tsv")" -eq 3 ] || fail "expected rows for 1 and 2 shards"
[ -s "$WORK/out/table.md" ] || fail "no markdown table in --out"
one=$(awk -F '\t' '$1 == 1 { print $6 }' "$WORK/table.tsv")
two=$(awk -F '\t' '$1 == 2 { print $6 }' "$WORK/table.tsv")
# 4 workers x 2 x 407 KB per iteration over a 6.25 MB/s link: about 3 MB/s
# at the least with 1 shard (pushes and models may overlap), 2x that at best
# with 2.
awk -v a="$one" 'BEGIN { exit !(a >= 2 && a <= 14) }' ||
  fail "1 shard moved $one MB/s: is the link not capped at 50 Mbit/s?"
awk -v a="$one" -v b="$two" 'BEGIN { exit !(b >= 1.3 * a) }' ||
  fail "2 shards moved $two MB/s, not clearly more than 1 shard's $one MB/s"
# Nothing left behind: the script's namespaces and links are gone.
id=$(sed -nE 's/.* namespaces dmss-([0-9a-f]+)-s0 .*/\1/p' "$WORK/script.log")
[ -n "$id" ] || fail "the script did not name its namespaces"
! ip netns list | grep -q "^dmss-$id-" || fail "namespaces dmss-$id-* left behind"
! ip link show "dssb$id" >/dev/null 2>&1 || fail "bridge dssb$id left behind"
echo "1 shard: $one MB/s, 2 shards: $two MB/s"
