# Three hosts on one machine: network namespaces joined by veth pairs to a
# bridge, addresses in 10.213.0.0/24. The server runs on host 1, one LB-BSP
# worker on host 2 and one on host 3, each over its own address; host 3's
# link is throttled both ways (tc netem rate and delay where the kernel has
# netem, else tc tbf). Training must complete, and LB-BSP must give the
# throttled worker much less batch than the other.
# Needs root and iproute2; skips (77) where namespaces cannot be made or
# entered (ip netns exec needs mount rights a container may lack).
. "$(dirname "$0")/lib.sh"

rate=${DMLPS_NETNS_RATE:-20mbit}  # host 3's link: a softmax push (31 KB) takes 12.5 ms
delay=${DMLPS_NETNS_DELAY:-5ms}   # added each way, where netem exists
iterations=300

skip() {
  echo "SKIP: $*"
  exit 77
}
[ "$(id -u)" -eq 0 ] || skip "needs root to make network namespaces"
{ command -v ip && command -v tc; } >/dev/null || skip "needs iproute2 (ip, tc)"

# Names unique to this run (the shell's pid, in hex: interface names have at
# most 15 characters), so concurrent runs do not collide.
id=$(printf '%x' $$)
ns_of() { echo "dmlps-$id-h$1"; }
bridge=dmb$id
made_ns=()
made_links=()
teardown() {
  local n l
  for l in "${made_links[@]}"; do ip link del "$l" 2>/dev/null || true; done
  for n in "${made_ns[@]}"; do ip netns del "$n" 2>/dev/null || true; done
}
# The processes first (lib.sh's cleanup), then the namespaces they ran in.
on_exit() {
  local rc=$?
  set +e
  (exit "$rc"); cleanup  # lib.sh's; it reads the exit status from $?
  teardown
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Namespaces a killed run left behind (named after a pid no longer alive).
for stale in $(ip netns list 2>/dev/null | sed -nE 's/^dmlps-([0-9a-f]+)-h[0-9].*/\1/p' | sort -u); do
  if ! kill -0 "$((16#$stale))" 2>/dev/null; then
    for h in 1 2 3; do ip netns del "dmlps-$stale-h$h" 2>/dev/null || true; done
    ip link del "dmb$stale" 2>/dev/null || true
  fi
done

ip netns add "$(ns_of 1)" 2>"$WORK/netns.err" || skip "cannot make a network namespace: $(cat "$WORK/netns.err")"
made_ns+=("$(ns_of 1)")
# `ip netns exec` remounts / as a slave and /sys for the namespace: in a
# container without the rights for that (mount --make-rslave / fails) the
# namespace exists but nothing can run in it.
ip netns exec "$(ns_of 1)" true 2>"$WORK/netns.err" ||
  skip "cannot run a command in a network namespace: $(tr '\n' ' ' <"$WORK/netns.err")"
if ! ip link add "$bridge" type bridge 2>"$WORK/netns.err"; then
  skip "cannot make a bridge: $(cat "$WORK/netns.err")"
fi
made_links+=("$bridge")
ip link set "$bridge" up
for h in 1 2 3; do
  ns=$(ns_of "$h")
  if [ "$h" -ne 1 ]; then
    ip netns add "$ns" 2>"$WORK/netns.err" || skip "cannot make a network namespace: $(cat "$WORK/netns.err")"
    made_ns+=("$ns")
  fi
  if ! ip link add "dmv$id$h" type veth peer name eth0 netns "$ns" 2>"$WORK/netns.err"; then
    skip "cannot make a veth pair: $(cat "$WORK/netns.err")"
  fi
  made_links+=("dmv$id$h")
  ip link set "dmv$id$h" master "$bridge" up
  ip -n "$ns" addr add "10.213.0.$h/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
done

# Host 3's link, both ways: what it sends (its pushes) leaves through eth0
# in its namespace; what it receives (the model) leaves the bridge through
# the other end of its pair.
shaping=""
for dev in "$(ns_of 3):eth0" ":dmv${id}3"; do
  ns=${dev%%:*} link=${dev#*:}
  run=(tc)
  [ -n "$ns" ] && run=(ip netns exec "$ns" tc)
  if "${run[@]}" qdisc add dev "$link" root netem delay "$delay" rate "$rate" 2>/dev/null; then
    shaping="netem: $rate, $delay each way"
  elif "${run[@]}" qdisc add dev "$link" root tbf rate "$rate" burst 16kb latency 1s 2>"$WORK/tc.err"; then
    shaping="tbf: $rate each way (no netem in this kernel: no added delay)"
  else
    skip "cannot shape a link with tc: $(cat "$WORK/tc.err")"
  fi
done
echo "three hosts in namespaces dmlps-$id-h1..3; host 3's link: $shaping"

# The server on host 1, the workers on hosts 2 and 3 over the bridge.
ip netns exec "$(ns_of 1)" "$BIN/dmlps-server" --bind tcp://10.213.0.1:5555 \
  --endpoint-file "$WORK/endpoint" --workers 2 --policy lbbsp --lb-mode cpu --predictor ema \
  --model softmax --max-iterations "$iterations" --eval-every 50 --report "$WORK/report" \
  >"$WORK/server.tsv" 2>"$WORK/server.log" &
SERVER_PID=$!
CHILDREN+=("$SERVER_PID")
await_endpoint
pids=()
for h in 2 3; do
  ip netns exec "$(ns_of "$h")" "$BIN/dmlps-worker" --server tcp://10.213.0.1:5555 \
    --rank $((h - 2)) --trace "$WORK/host$h.trace" 2>"$WORK/host$h.log" &
  pids+=("$!")
  CHILDREN+=("$!")
done
wait_for "$SERVER_PID" 120
expect_exit 0 "$RC" "dmlps-server"
for i in 0 1; do
  wait_for "${pids[$i]}" 30
  expect_exit 0 "$RC" "dmlps-worker on host $((i + 2))"
done
grep -q "joined from" "$WORK/server.log" || fail "no worker joined"
grep -q $'^iterations\t'"$iterations"'$' "$WORK/report" || fail "training stopped before $iterations iterations"
acc=$(tail -n 1 "$WORK/server.tsv" | cut -f 3)
awk -v a="$acc" 'BEGIN { exit !(a >= 0.6) }' || fail "accuracy $acc after $iterations iterations: did it train?"

# Each worker's mean batch over the last third of its steps, from the
# samples of its step spans.
mean_batch() {
  "$BIN/dmlps-trace" tsv "$1" | awk -F '\t' -v from=$((iterations * 2 / 3)) '
    $5 == "step" {
      split($7, kv, /[=;]/)
      for (i = 1; i < length(kv); i += 2) {
        if (kv[i] == "clock") c = kv[i + 1]
        if (kv[i] == "samples") v = kv[i + 1]
      }
      if (c >= from) { sum += v; n++ }
    }
    END { if (n) printf "%.1f\n", sum / n; else print "none" }'
}
fast=$(mean_batch "$WORK/host2.trace")
slow=$(mean_batch "$WORK/host3.trace")
echo "LB-BSP's mean batch over iterations $((iterations * 2 / 3))..$iterations: host 2 $fast, host 3 (throttled) $slow; accuracy $acc"
awk -v f="$fast" -v s="$slow" 'BEGIN { exit !(f != "none" && s != "none" && s * 2 <= f) }' ||
  fail "LB-BSP did not move batch away from the throttled host (host 2: $fast, host 3: $slow)"
