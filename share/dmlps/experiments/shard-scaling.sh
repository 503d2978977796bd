#!/usr/bin/env bash
# Server shards across hosts, where the links are the limit. One network
# namespace per server shard and per worker, joined by veth pairs to a
# bridge; every host's link is capped both ways with tc (tbf), so each
# shard's host receives the pushes and sends the models over a link of
# its own. 8 workers train under BSP with 1, 2 and 4 shards; the model is
# large and the batch small, so that moving the model dominates the
# iteration. Prints the aggregate push+pull throughput (every worker's
# push and model, over the wall time of training), the time per iteration
# and the speed-up over 1 shard: medians of --repeat runs, as a markdown
# table (table.md in --out) or TSV (--format tsv; table.tsv in --out).
# Needs root and iproute2 (ip, tc). Exits 77 where namespaces, bridges,
# veth pairs or tc cannot be used here; 70 when a run fails. Everything it
# starts is killed and every namespace and link removed on exit.
NAME=shard-scaling.sh
SUMMARY='  --shards LIST   shard counts to compare, 1 first (default 1,2,4)
  --workers N     workers, each on a host of its own (default 8)
  --rate RATE     every host'"'"'s link, each way, as tc says it (default 200mbit)
  --model SPEC    the model (default mlp:512: 1.6 MB pushed and pulled)
  --batch B       samples per worker step (default 8)
  --iterations N  BSP iterations per run (default 40)
  --timeout S     seconds a run may take before it fails (default 600)
  --format F      markdown or tsv (default markdown)
  -- ARGS         passed on to shard 0'"'"'s dmlps-server (after the above)'
. "$(dirname "$0")/common.sh"
shard_list=1,2,4 workers=8 rate=200mbit model=mlp:512 batch=8 iterations=40 timeout=600
format=markdown
option --shards LIST shard_list
option --workers N workers
option --rate RATE rate
option --model SPEC model
option --batch B batch
option --iterations N iterations
option --timeout S timeout
option --format F format
REST=SERVER-ARGS
check_options() {
  IFS=, read -r -a shard_counts <<<"$shard_list"
  max_shards=0
  for s in "${shard_counts[@]}"; do
    [[ "$s" =~ ^[1-9][0-9]*$ ]] && [ "$s" -le 64 ] || die 64 "--shards: '$s' is not a count from 1 to 64"
    if [ "$s" -gt "$max_shards" ]; then max_shards=$s; fi
  done
  [ "${shard_counts[0]:-}" = 1 ] || die 64 "--shards must start with 1 (the speed-up is over 1 shard)"
  local v
  for v in workers:"$workers" batch:"$batch" iterations:"$iterations" timeout:"$timeout" repeat:"$repeat"; do
    count "--${v%%:*}" "${v#*:}"
  done
  [ "$workers" -le 200 ] || die 64 "--workers: at most 200 (one host each)"
  [[ "$rate" =~ ^[0-9]+(\.[0-9]+)?[kmgKMG]?(bit|bps)$ ]] || die 64 "--rate: '$rate' is not a tc rate (e.g. 200mbit)"
  case "$format" in markdown | tsv) ;; *) die 64 "--format: '$format' is not markdown or tsv" ;; esac
}
bench_script "$@"
find_bin dmlps-server dmlps-worker

unavailable() {
  echo "$NAME: cannot run here: $*" >&2
  exit 77
}
[ "$(id -u)" -eq 0 ] || unavailable "needs root to make network namespaces"
{ command -v ip && command -v tc; } >/dev/null || unavailable "needs iproute2 (ip, tc)"

# Names unique to this run (the shell's pid in hex; interface names have at
# most 15 characters). Hosts: s0.. the shards, w0.. the workers.
id=$(printf '%x' $$)
bridge=dssb$id
ns_of() { echo "dmss-$id-$1"; }
made_ns=() made_links=() pids=()
on_exit() {
  local rc=$? pid n l
  set +e
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null; done
  for l in "${made_links[@]}"; do ip link del "$l" 2>/dev/null; done
  for n in "${made_ns[@]}"; do ip netns del "$n" 2>/dev/null; done
  exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# What a killed run left behind (named after a pid no longer alive).
for stale in $(ip netns list 2>/dev/null | sed -nE 's/^dmss-([0-9a-f]+)-.*/\1/p' | sort -u); do
  kill -0 "$((16#$stale))" 2>/dev/null && continue
  for n in $(ip netns list | sed -nE "s/^(dmss-$stale-[a-z0-9]+).*/\\1/p"); do ip netns del "$n" 2>/dev/null || true; done
  ip link del "dssb$stale" 2>/dev/null || true
done

# add_host NAME ADDRESS: a namespace with its end of a veth pair on the
# bridge at 10.214.0.ADDRESS, the link capped at --rate both ways: what the
# host sends leaves its eth0, what it receives leaves the bridge's end.
add_host() {
  local ns outer
  ns=$(ns_of "$1")
  outer=dsv$id$1
  ip netns add "$ns" 2>"$out/netns.err" || unavailable "cannot make a network namespace: $(cat "$out/netns.err")"
  made_ns+=("$ns")
  ip netns exec "$ns" true 2>"$out/netns.err" ||
    unavailable "cannot run a command in a network namespace: $(tr '\n' ' ' <"$out/netns.err")"
  ip link add "$outer" type veth peer name eth0 netns "$ns" 2>"$out/netns.err" ||
    unavailable "cannot make a veth pair: $(cat "$out/netns.err")"
  made_links+=("$outer")
  ip link set "$outer" master "$bridge" up
  ip -n "$ns" addr add "10.214.$(($2 / 256)).$(($2 % 256))/16" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
  ip netns exec "$ns" tc qdisc add dev eth0 root tbf rate "$rate" burst 64kb latency 100ms \
    2>"$out/tc.err" || unavailable "cannot shape a link with tc: $(cat "$out/tc.err")"
  tc qdisc add dev "$outer" root tbf rate "$rate" burst 64kb latency 100ms 2>"$out/tc.err" ||
    unavailable "cannot shape a link with tc: $(cat "$out/tc.err")"
}
ip link add "$bridge" type bridge 2>"$out/netns.err" || unavailable "cannot make a bridge: $(cat "$out/netns.err")"
made_links+=("$bridge")
ip link set "$bridge" up
for ((k = 0; k < max_shards; k++)); do add_host "s$k" $((k + 1)); done
for ((r = 0; r < workers; r++)); do add_host "w$r" $((r + 256)); done
shard_address() { echo "10.214.0.$(($1 + 1))"; }
echo "$((max_shards + workers)) hosts in namespaces $(ns_of s0) ..., every link $rate each way (tbf)" >&2

# await_gone PID SECONDS WHAT [LOST]: waits for a started process; fails
# the run when it is still running after SECONDS or exits other than 0 (or
# LOST, which is then only reported).
await_gone() {
  local pid=$1 limit=$2 what=$3 lost=${4:-0} rc=0
  for ((i = 0; i < limit * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    echo "$NAME: $what still running after $limit s" >&2
    exit 70
  fi
  wait "$pid" || rc=$?
  if [ "$rc" -ne 0 ] && [ "$rc" -eq "$lost" ]; then
    echo "$NAME: warning: $what exited $rc: it lost shard 0 after the run (logs in $out)" >&2
  elif [ "$rc" -ne 0 ]; then
    echo "$NAME: $what exited $rc (logs in $out)" >&2
    exit 70
  fi
}

# run_cluster S DIR PORT: one training run on S shards, its report in DIR.
run_cluster() {
  local s=$1 dir=$2 port=$3 k r first=${#pids[@]}
  local coordinator="tcp://$(shard_address 0):$port"
  mkdir -p "$dir"
  local shard0=()
  [ "$s" -gt 1 ] && shard0=(--shard "0/$s")
  ip netns exec "$(ns_of s0)" "$bin/dmlps-server" "${shard0[@]}" --bind "$coordinator" \
    --workers "$workers" --policy bsp --model "$model" --batch "$batch" \
    --max-iterations "$iterations" --eval-every 1000000000 --report "$dir/report" "${extra[@]}" \
    >"$dir/server.tsv" 2>"$dir/shard-0.log" &
  pids+=("$!")
  for ((k = 1; k < s; k++)); do
    ip netns exec "$(ns_of "s$k")" "$bin/dmlps-server" --shard "$k/$s" \
      --coordinator "$coordinator" --bind "tcp://$(shard_address "$k"):$port" \
      2>"$dir/shard-$k.log" &
    pids+=("$!")
  done
  for ((r = 0; r < workers; r++)); do
    ip netns exec "$(ns_of "w$r")" "$bin/dmlps-worker" --server "$coordinator" --rank "$r" \
      --server-timeout 10 --reconnect-timeout 5 2>"$dir/worker-$r.log" &
    pids+=("$!")
  done
  await_gone "${pids[$first]}" "$timeout" "shard 0 of $s"
  # Shard 0 has written its report. A worker whose Stop was still queued
  # behind the last models on its capped link when shard 0 exited (after
  # ZeroMQ's linger) gives up on it (69): its figures are in the report.
  for ((k = first + 1; k < ${#pids[@]}; k++)); do
    if [ "$k" -lt $((first + s)) ]; then
      await_gone "${pids[$k]}" 60 "shard $((k - first)) of $s"
    else
      await_gone "${pids[$k]}" 60 "worker $((k - first - s)) of the $s-shard run" 69
    fi
  done
  pids=("${pids[@]:0:$first}")
}

# The model's bytes, from shard 0's log of a run (every push and model
# carries them all, cut over the shards).
model_bytes() {
  sed -nE 's/.*[^0-9]([0-9]+) parameters.*/\1/p' "$1" | head -n 1 | awk '{ print $1 * 4 }'
}

# The runs: repeat r of every shard count before repeat r + 1 of any.
port=6000
for ((rep = 1; rep <= repeat; rep++)); do
  for s in "${shard_counts[@]}"; do
    dir=$out/runs/s$s-r$rep
    echo "run $rep of $repeat: $s shard(s), $workers workers, $model, $iterations iterations" >&2
    run_cluster "$s" "$dir" "$port"
    port=$((port + 1))
    bytes=$(model_bytes "$dir/shard-0.log")
    [ -n "$bytes" ] || { echo "$NAME: no parameter count in $dir/shard-0.log" >&2; exit 70; }
    awk -F '\t' -v s="$s" -v b="$bytes" -v w="$workers" '
      { v[$1] = $2 }
      END { printf "%d\t%s\t%s\t%.0f\n", s, v["iterations"], v["seconds"], b * w * 2 * v["iterations"] }' \
      "$dir/report" >>"$out/runs.tsv"
  done
done

# The table: per shard count, the median, min and max time per iteration
# over the runs, the throughput at the median and the speed-up over 1 shard;
# as markdown (table.md) and as TSV (table.tsv).
table() {
  awk -F '\t' -v fmt="$1" -v rate="$rate" -v w="$workers" -v m="$model" -v order="$shard_list" '
  function sort(a, n,   i, j, t) {
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
  }
  { n[$1]++; ms[$1, n[$1]] = 1000 * $3 / $2; moved[$1] = $4 / $2 }
  END {
    if (fmt == "tsv") print "shards\truns\titeration_ms_median\titeration_ms_min\titeration_ms_max\tmbytes_per_s\tspeedup"
    else {
      printf "%d workers, %s, every host'"'"'s link %s each way; medians of %d runs\n\n", w, m, rate, n[1]
      print "| shards | runs | ms/iteration (median) | min | max | push+pull MB/s | speed-up |"
      print "|---|---|---|---|---|---|---|"
    }
    count = split(order, list, ",")
    for (c = 1; c <= count; c++) {
      s = list[c]
      for (i = 1; i <= n[s]; i++) a[i] = ms[s, i]
      sort(a, n[s])
      med = n[s] % 2 ? a[(n[s] + 1) / 2] : (a[n[s] / 2] + a[n[s] / 2 + 1]) / 2
      if (s == 1) base = med
      mbps = moved[s] / med / 1000
      if (fmt == "tsv") printf "%d\t%d\t%.1f\t%.1f\t%.1f\t%.2f\t%.2f\n", s, n[s], med, a[1], a[n[s]], mbps, base / med
      else printf "| %d | %d | %.1f | %.1f | %.1f | %.2f | %.2fx |\n", s, n[s], med, a[1], a[n[s]], mbps, base / med
    }
  }' "$out/runs.tsv"
}
table markdown >"$out/table.md"
table tsv >"$out/table.tsv"
if [ "$format" = tsv ]; then cat "$out/table.tsv"; else cat "$out/table.md"; fi
echo "runs, logs and the table: $out" >&2
