# dmlps-keygen in a fresh folder: the README's CURVE example runs as written
# (the workers/ folder is made), and a run that would overwrite a key is
# refused whole, one line per refusal, before anything is written.
. "$(dirname "$0")/lib.sh"

"$BIN/dmlps-keygen" --help >/dev/null
command -v timeout >/dev/null || exit 77

# The example, as the README gives it, with the binaries run from $BIN on a
# free port and the run kept short.
example=$(awk '/^```sh$/ { block = "" ; inside = 1; next }
  /^```$/ { if (inside && block ~ /^dmlps-keygen server workers/) { printf "%s", block; exit } inside = 0; next }
  inside { block = block $0 "\n" }' "$(dirname "$0")/../../README.md")
[ -n "$example" ] || fail "no CURVE example in README.md"
echo "$example"
workers=0
worker_pids=()
dmlps-keygen() {
  local rc=0
  timeout 60 "$BIN/dmlps-keygen" "$@" >"$WORK/keys.out" || rc=$?
  expect_exit 0 "$rc" "dmlps-keygen $*"
}
dmlps-server() { start_server "$@" --max-iterations 40 --eval-every 20; }
dmlps-worker() {
  start_worker "worker-$workers" "$@"
  worker_pids+=("$WORKER_PID")
  workers=$((workers + 1))
}
mkdir "$WORK/fresh"
cd "$WORK/fresh"
while IFS= read -r line; do
  eval "${line% &}"
done <<<"$example"
[ "$workers" -eq 2 ] || fail "the example started $workers workers, not 2"
wait_for "$SERVER_PID" 120
expect_exit 0 "$RC" "dmlps-server"
for pid in "${worker_pids[@]}"; do
  wait_for "$pid" 30
  expect_exit 0 "$RC" "dmlps-worker"
done
[ "$(wc -l <"$WORK/keys.out")" -eq 3 ] || fail "keygen did not print three public keys"
grep -q "CURVE on: .*2 worker keys admitted" "$WORK/server.log" || fail "CURVE was not on"

# Run again: every existing target refused at once, nothing written.
for f in server.key workers/w0.pub; do cp "$f" "$WORK/$(basename "$f").before"; done
rm workers/w1.key workers/w1.pub
rc=0
"$BIN/dmlps-keygen" server workers/w0 workers/w1 new/w2 >"$WORK/out" 2>"$WORK/err" || rc=$?
cat "$WORK/err"
expect_exit 64 "$rc" "dmlps-keygen over existing keys"
[ "$(wc -l <"$WORK/err")" -eq 2 ] || fail "expected two lines, one per refused name"
grep -qxF "dmlps-keygen: error: server.key exists (--force replaces it)" "$WORK/err" ||
  fail "server.key not refused"
grep -qxF "dmlps-keygen: error: workers/w0.key exists (--force replaces it)" "$WORK/err" ||
  fail "workers/w0.key not refused"
[ ! -s "$WORK/out" ] || fail "a public key was printed, so something was written"
[ ! -e workers/w1.key ] && [ ! -e new ] || fail "keys were written although others were refused"
cmp -s server.key "$WORK/server.key.before" || fail "server.key was changed"
cmp -s workers/w0.pub "$WORK/w0.pub.before" || fail "workers/w0.pub was changed"
echo "ok: the README example ran in a fresh folder; a repeated run was refused whole"
