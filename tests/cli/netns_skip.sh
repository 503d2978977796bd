# Where network namespaces can be made but not entered (a container without
# the mount rights `ip netns exec` needs), cli.netns_lbbsp skips (77) and
# says why instead of failing, and so does the shard-scaling experiment
# (which cli.netns_shard_scaling runs). An `ip` that fails just that way stands in
# for the real one; `tc` is a no-op.
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" -eq 0 ] || { echo "SKIP: cli.netns_lbbsp skips without root before it reaches namespaces"; exit 77; }
mkdir "$WORK/stub"
cat >"$WORK/stub/ip" <<'STUB'
#!/bin/sh
if [ "$1" = netns ] && [ "$2" = exec ]; then
  echo 'mount --make-rslave /: Permission denied' >&2
  exit 1
fi
exit 0
STUB
printf '#!/bin/sh\nexit 0\n' >"$WORK/stub/tc"
chmod +x "$WORK/stub/ip" "$WORK/stub/tc"
rc=0
PATH="$WORK/stub:$PATH" bash "$(dirname "$0")/netns_lbbsp.sh" >"$WORK/out" 2>&1 || rc=$?
[ "$rc" -eq 77 ] || fail "cli.netns_lbbsp exited $rc, not 77 (skipped): $(cat "$WORK/out")"
grep -q '^SKIP: cannot run a command in a network namespace: mount --make-rslave /: Permission denied' "$WORK/out" ||
  fail "the skip does not say why: $(cat "$WORK/out")"
rc=0
PATH="$WORK/stub:$PATH" "${DMLPS_SOURCE_DIR:?}/share/dmlps/experiments/shard-scaling.sh" \
  --bin "$BIN" --out "$WORK/scaling" >"$WORK/out" 2>&1 || rc=$?
[ "$rc" -eq 77 ] || fail "shard-scaling.sh exited $rc, not 77: $(cat "$WORK/out")"
grep -q 'cannot run a command in a network namespace: mount --make-rslave /: Permission denied' \
  "$WORK/out" || fail "shard-scaling.sh does not say why: $(cat "$WORK/out")"
echo "ok"
