# The local-SGD policies do not run on sharded servers yet (the shards
# beyond 0 would need the outer optimizer): every shard refuses them with
# one error line (and the usual pointer to --help) and exit 64, before it
# reads any data or binds.
. "$(dirname "$0")/lib.sh"
refused() {  # ARGS...
  local rc=0
  timeout 30 "$BIN/dmlps-server" --bind 'tcp://127.0.0.1:*' "$@" >/dev/null 2>"$WORK/err" || rc=$?
  expect_exit 64 "$rc" "dmlps-server $*"
  [ "$(grep -c "error" "$WORK/err")" -eq 1 ] || fail "dmlps-server $*: $(cat "$WORK/err")"
  local first
  first=$(head -n 1 "$WORK/err")
  [[ $first == "dmlps-server: error: --policy $policy does not work with sharded servers"* ]] ||
    fail "dmlps-server $*: $(cat "$WORK/err")"
}
for policy in localsgd async-localsgd; do
  refused --workers 2 --policy "$policy" --shard 0/2
  refused --workers 2 --policy "$policy" --shard 1/2 --coordinator tcp://127.0.0.1:9
done
