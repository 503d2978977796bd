#!/usr/bin/env bash
# Sharded servers on this host, real against simulated, as docs/simulator.md
# compares one server. For each shard count S: dmlps-bench run with its
# dmlps-server replaced by a wrapper (in --out/bin-S) that starts the real
# one as shard 0 of S and, once it listens, shards 1 to S-1 on loopback;
# then dmlps-bench sim --shards S --shared-cores 2 with the step cost
# given. Prints both tables for each S; compare time per iteration
# (seconds / iterations) and iterations to the target. Exits 70 when a run
# fails.
NAME=shard-agreement.sh
SUMMARY='  --shards LIST       shard counts, each 2 to 64 (default 2,4)
  --policies LIST     policies, as dmlps-bench names them (default bsp,abps,lbbsp)
  --compute-cost A,C  the simulated step: A + C*batch microseconds (default 50,12.4)
  -- ARGS             passed on to dmlps-bench run and sim (e.g. --workers 8)'
USAGE_EXTRA=' [--shards LIST] [--policies LIST] [--compute-cost A,C]'
shard_list=2,4 policies=bsp,abps,lbbsp cost=50,12.4
handle_option() {
  [ $# -ge 2 ] || return 1
  case "$1" in
    --shards) shard_list=$2 ;;
    --policies) policies=$2 ;;
    --compute-cost) cost=$2 ;;
    *) return 1 ;;
  esac
  SHIFT=2
}
. "$(dirname "$0")/common.sh"

IFS=, read -r -a shard_counts <<<"$shard_list"
for s in "${shard_counts[@]}"; do
  if ! [[ "$s" =~ ^[1-9][0-9]*$ ]] || [ "$s" -lt 2 ] || [ "$s" -gt 64 ]; then
    echo "$NAME: error: --shards: '$s' is not a count from 2 to 64" >&2
    exit 64
  fi
done
[[ "$cost" =~ ^[0-9.]+,[0-9.]+$ ]] || { echo "$NAME: error: --compute-cost: '$cost' is not A,C" >&2; exit 64; }

# wrapper S DIR: a dmlps-server in DIR that runs the real one as shard 0 of
# S and starts the other shards once its endpoint file is written. They
# end when shard 0 does (or are killed 10 s later); a signal ends them all.
wrapper() {
  local s=$1 dir=$2
  mkdir -p "$dir"
  ln -sf "$(cd "$bin" && pwd)/dmlps-worker" "$dir/dmlps-worker"
  cat >"$dir/dmlps-server" <<WRAP
#!/usr/bin/env bash
real='$(cd "$bin" && pwd)/dmlps-server'
endpoint=""
args=("\$@")
for ((i = 0; i + 1 < \${#args[@]}; i++)); do
  [ "\${args[i]}" = --endpoint-file ] && endpoint=\${args[i + 1]}
done
"\$real" "\$@" --shard 0/$s &
first=\$!
others=()
trap 'kill "\$first" "\${others[@]}" 2>/dev/null; exit 143' TERM INT
for _ in \$(seq 1200); do
  { [ -n "\$endpoint" ] && [ -s "\$endpoint" ]; } && break
  kill -0 "\$first" 2>/dev/null || break
  sleep 0.05
done
if [ -n "\$endpoint" ] && [ -s "\$endpoint" ]; then
  for ((k = 1; k < $s; k++)); do
    "\$real" --bind 'tcp://127.0.0.1:*' --shard "\$k/$s" --coordinator "\$(head -n 1 "\$endpoint")" \\
      2>"\$(dirname "\$endpoint")/shard-\$k.log" &
    others+=(\$!)
  done
fi
rc=0
wait "\$first" || rc=\$?
for _ in \$(seq 100); do
  alive=0
  for p in "\${others[@]}"; do kill -0 "\$p" 2>/dev/null && alive=1; done
  [ "\$alive" = 0 ] && break
  sleep 0.1
done
kill "\${others[@]}" 2>/dev/null || true
exit "\$rc"
WRAP
  chmod +x "$dir/dmlps-server"
}

for s in "${shard_counts[@]}"; do
  wrapper "$s" "$out/bin-$s"
  echo "== real, $s shards"
  "$bin/dmlps-bench" run --repeat "$repeat" --bin "$out/bin-$s" --policies "$policies" \
    --out "$out/runs-$s" "${extra[@]}" || { echo "$NAME: error: a real run failed ($out/runs-$s)" >&2; exit 70; }
  echo
  echo "== simulated, $s shards"
  "$bin/dmlps-bench" sim --repeat "$repeat" --shards "$s" --shared-cores 2 --compute-cost "$cost" \
    --jitter 0.4 --policies "$policies" "${extra[@]}" || { echo "$NAME: error: the simulation failed" >&2; exit 70; }
  echo
done
