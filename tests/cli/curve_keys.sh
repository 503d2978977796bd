# dmlps-keygen and the key flags: key files made private and never
# overwritten by accident; bad, missing or readable secret key files, a
# CURVE server that would admit nobody or anybody, and half-given flags are
# refused with one line and the right exit status before anything starts.
. "$(dirname "$0")/lib.sh"

one_error() {  # one_error BINARY PATTERN: exactly one error line, matching
  [ "$(grep -c "^$1: error:" "$WORK/err")" -eq 1 ] || fail "expected one error line: $(cat "$WORK/err")"
  grep -q "^$1: error: .*$2" "$WORK/err" || fail "expected '$2': $(cat "$WORK/err")"
}

mkdir -p "$WORK/workers"
run_tool 0 dmlps-keygen "$WORK/server" "$WORK/workers/w0"
[ "$(wc -l <"$WORK/out")" -eq 2 ] || fail "keygen did not print two public keys"
grep -qxF -- "$(head -n 1 "$WORK/out")" "$WORK/server.pub" || fail "printed key is not the server's"
[ "$(stat -c %a "$WORK/server.key")" = 600 ] || fail "the secret key is not mode 600"
cp "$WORK/server.key" "$WORK/server.key.before"
run_tool 64 dmlps-keygen "$WORK/server"
one_error dmlps-keygen "server.key exists (--force replaces it)"
cmp -s "$WORK/server.key" "$WORK/server.key.before" || fail "keygen overwrote a key without --force"
run_tool 0 dmlps-keygen --force "$WORK/server"
cmp -s "$WORK/server.key" "$WORK/server.key.before" && fail "--force did not replace the key"
run_tool 64 dmlps-keygen
# A name with a comma is one name.
run_tool 0 dmlps-keygen "$WORK/site,a"
[ -f "$WORK/site,a.key" ] && [ -f "$WORK/site,a.pub" ] || fail "keygen split 'site,a': $(ls "$WORK")"

data=(--bind 'tcp://127.0.0.1:*')
# CURVE never runs open: both flags or neither.
run_tool 64 dmlps-server "${data[@]}" --curve-secret "$WORK/server.key"
one_error dmlps-server "--curve-secret and --curve-allow go together"
run_tool 64 dmlps-worker --curve-secret "$WORK/workers/w0.key"
one_error dmlps-worker "--curve-secret and --curve-server-key go together"
# An allow folder with no key would admit nobody: refused.
mkdir -p "$WORK/empty"
run_tool 65 dmlps-server "${data[@]}" --curve-secret "$WORK/server.key" --curve-allow "$WORK/empty"
one_error dmlps-server "no worker public keys"
run_tool 66 dmlps-server "${data[@]}" --curve-secret "$WORK/server.key" --curve-allow "$WORK/none"
run_tool 66 dmlps-server "${data[@]}" --curve-secret "$WORK/none.key" --curve-allow "$WORK/workers"
one_error dmlps-server "none.key: no such file"
# A secret others can read is refused, with the fix.
chmod 644 "$WORK/server.key"
run_tool 65 dmlps-server "${data[@]}" --curve-secret "$WORK/server.key" --curve-allow "$WORK/workers"
one_error dmlps-server "mode 0644.*chmod 600"
chmod 600 "$WORK/server.key"
printf '# not a key\nhello\n' >"$WORK/bad.key"
chmod 600 "$WORK/bad.key"
run_tool 65 dmlps-server "${data[@]}" --curve-secret "$WORK/bad.key" --curve-allow "$WORK/workers"
one_error dmlps-server "bad.key:2: not a key"
printf 'garbage\n' >"$WORK/workers/broken.pub"
run_tool 65 dmlps-server "${data[@]}" --curve-secret "$WORK/server.key" --curve-allow "$WORK/workers"
one_error dmlps-server "broken.pub:1: not a key"
rm "$WORK/workers/broken.pub"
run_tool 65 dmlps-worker --curve-secret "$WORK/bad.key" --curve-server-key "$WORK/server.pub" \
  --connect-timeout 1
one_error dmlps-worker "bad.key:2: not a key"
run_tool 66 dmlps-worker --curve-secret "$WORK/workers/w0.key" --curve-server-key "$WORK/nope.pub" \
  --connect-timeout 1
run_tool 64 dmlps-server "${data[@]}" --max-connections 1 --workers 2
one_error dmlps-server "--max-connections must be at least --workers"
run_tool 64 dmlps-server "${data[@]}" --max-message-bytes 1000
one_error dmlps-server "max-message-bytes 1000 is less than a worker's push"
echo "ok: key files and flags checked"
