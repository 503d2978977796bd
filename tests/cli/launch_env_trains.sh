# dmlps-launch with nothing but a launcher's environment: no flag names a
# rank, a world size or the server. First torchrun's variables (RANK,
# WORLD_SIZE, MASTER_ADDR, MASTER_PORT, LOCAL_RANK), set by hand, with
# Slurm's set too in the reverse order (torchrun's win) and a listener on
# MASTER_PORT standing in for torchrun's store (the server takes the port
# above); then a Kubernetes indexed Job's (JOB_COMPLETION_INDEX, the pod's
# HOSTNAME, DMLPS_WORLD_SIZE, DMLPS_SERVER); then, where torchrun is
# installed, under torchrun itself. Each cluster trains a few BSP iterations
# with launcher rank 0 the server and rank R worker R-1. Last, bad values:
# one line and exit 78 from dmlps-launch, 64 from the binaries.
. "$(dirname "$0")/lib.sh"
src=${DMLPS_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
launch=$src/share/dmlps/launch/dmlps-launch

# Two free ports in a row (another test may still take one first; then the
# server says so and the test fails rather than hangs).
free_pair() {
  local p
  while true; do
    p=$((20000 + RANDOM % 40000))
    if ! command -v ss >/dev/null ||
       ! ss -Htln "( sport = :$p or sport = :$((p + 1)) )" | grep -q .; then
      echo "$p"
      return
    fi
  done
}

# check_cluster NAME SIZE: the ranks of cluster NAME, started with
# start_rank, all exit 0 within 120 s; the server saw itself as rank 0 of
# SIZE and waited for SIZE-1 workers; launcher rank R ran as worker R-1.
RANK_PIDS=()
check_cluster() {
  local name=$1 size=$2 r
  for r in "${!RANK_PIDS[@]}"; do
    wait_for "${RANK_PIDS[$r]}" 120
    expect_exit 0 "$RC" "$name: launcher rank $r"
  done
  check_roles "$name" "$size" "$WORK/$name-0.log"
  RANK_PIDS=()
}

# check_roles NAME SIZE LOG: the server's LOG says it waited for SIZE-1
# workers; the trace NAME-R.trace of launcher rank R is worker R-1's.
check_roles() {
  local name=$1 size=$2 log=$3 r node
  grep -q "all $((size - 1)) workers ready" "$log" ||
    fail "$name: the server did not wait for $((size - 1)) workers"
  for ((r = 1; r < size; r++)); do
    node=$("$BIN/dmlps-trace" tsv "$WORK/$name-$r.trace" | awk -F '\t' 'NR == 2 { print $2 }')
    [ "$node" = "worker-$((r - 1))" ] || fail "$name: launcher rank $r ran as '$node'"
  done
}

# start_rank NAME R VAR=VALUE...: starts launcher rank R of cluster NAME with
# only the given variables (and PATH); each worker traces to NAME-%r.trace.
start_rank() {
  local name=$1 r=$2
  shift 2
  env -i PATH="$PATH" "$@" "$launch" --bin "$BIN" \
    --policy bsp --model mlp:32 --max-iterations 30 --eval-every 10 \
    --worker-args --trace "$WORK/$name-%r.trace" \
    >"$WORK/$name-$r.tsv" 2>"$WORK/$name-$r.log" &
  RANK_PIDS+=("$!")
  CHILDREN+=("$!")
}

# 1. torchrun's variables; a listener holds MASTER_PORT as torchrun's store does.
master_port=$(free_pair)
/usr/bin/python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(); time.sleep(300)' \
  "$master_port" 2>"$WORK/store.log" &
CHILDREN+=("$!")
for r in 0 1 2 3; do
  start_rank torch "$r" RANK="$r" WORLD_SIZE=4 LOCAL_RANK="$r" MASTER_ADDR=127.0.0.1 \
    MASTER_PORT="$master_port" SLURM_PROCID=$((3 - r)) SLURM_NTASKS=4
done
check_cluster torch 4
grep -q "rank 0 of 4 under torchrun" "$WORK/torch-0.log" ||
  fail "the server did not see itself as rank 0 of 4 under torchrun"
grep -qE "listening on tcp://[^ ]*:$((master_port + 1))" "$WORK/torch-0.log" ||
  fail "the server did not listen at MASTER_PORT + 1 = $((master_port + 1))"
echo "torchrun's variables: 1 server at MASTER_PORT + 1, 3 workers: $(tail -n 1 "$WORK/torch-0.tsv")"

# 2. A Kubernetes indexed Job's: the pod's index and hostname, the world
# size and the server's address from the manifest.
port=$(free_pair)
for r in 0 1 2; do
  start_rank k8s "$r" JOB_COMPLETION_INDEX="$r" HOSTNAME="train-$r" DMLPS_WORLD_SIZE=3 \
    DMLPS_SERVER="tcp://127.0.0.1:$port" DMLPS_PORT="$port"
done
check_cluster k8s 3
grep -q "rank 0 of 3 under kubernetes" "$WORK/k8s-0.log" ||
  fail "the server did not see itself as rank 0 of 3 under kubernetes"
echo "a Kubernetes indexed Job's variables: 1 server, 2 workers: $(tail -n 1 "$WORK/k8s-0.tsv")"

# 3. torchrun itself: one host, 3 processes, its store at --master_port.
# (--redirects and --tee 2: Debian's torchrun 1.13 under Python 3.11 fails
# on its default of 0, which its Std.from_str no longer finds.)
if command -v torchrun >/dev/null && /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  master_port=$(free_pair)
  rc=0
  env -i PATH="$PATH" HOME="$WORK" timeout -s TERM -k 10 180 torchrun --nproc_per_node 3 \
    --master_port "$master_port" --redirects 2 --tee 2 --log_dir "$WORK/torchrun-logs" \
    --no_python "$launch" --bin "$BIN" \
    --policy bsp --model mlp:32 --max-iterations 30 --eval-every 10 \
    --worker-args --trace "$WORK/torchrun-%r.trace" \
    >"$WORK/torchrun.tsv" 2>"$WORK/torchrun.log" || rc=$?
  expect_exit 0 "$rc" "torchrun --nproc_per_node 3 dmlps-launch"
  grep -q "rank 0 of 3 under torchrun" "$WORK/torchrun.log" ||
    fail "under torchrun, the server did not see itself as rank 0 of 3"
  check_roles torchrun 3 "$WORK/torchrun.log"
  echo "torchrun --nproc_per_node 3: 1 server, 2 workers: $(tail -n 1 "$WORK/torchrun.tsv")"
else
  echo "(torchrun or PyTorch for /usr/bin/python3 is not installed: its own run is left out)"
fi

# 4. Bad values: one line naming the variable, exit 78 (configuration).
bad_launch() {
  local want=$1
  shift
  rc=0
  env -i PATH="$PATH" "$@" "$launch" --bin "$BIN" >"$WORK/bad.out" 2>"$WORK/bad.err" || rc=$?
  expect_exit 78 "$rc" "dmlps-launch with $*"
  [ "$(wc -l <"$WORK/bad.err")" -eq 1 ] || fail "dmlps-launch with $*: not one line: $(cat "$WORK/bad.err")"
  grep -q "^dmlps-launch: error: .*$want" "$WORK/bad.err" ||
    fail "dmlps-launch with $*: '$(cat "$WORK/bad.err")' does not name $want"
}
bad_launch "RANK='x'" RANK=x WORLD_SIZE=2 MASTER_ADDR=127.0.0.1
bad_launch "RANK=4 is not below WORLD_SIZE=4" RANK=4 WORLD_SIZE=4 MASTER_ADDR=127.0.0.1
bad_launch "MASTER_ADDR" RANK=1 WORLD_SIZE=2
bad_launch "WORLD_SIZE" RANK=1 MASTER_ADDR=127.0.0.1
bad_launch "MASTER_PORT" RANK=1 WORLD_SIZE=2 MASTER_ADDR=a MASTER_PORT=65535
bad_launch "DMLPS_WORLD_SIZE" JOB_COMPLETION_INDEX=1 HOSTNAME=j-1 DMLPS_SERVICE=s
bad_launch "DMLPS_WORLD_SIZE='0'" JOB_COMPLETION_INDEX=0 DMLPS_WORLD_SIZE=0 DMLPS_SERVER=tcp://a:1
bad_launch "HOSTNAME='j-3'" JOB_COMPLETION_INDEX=1 DMLPS_WORLD_SIZE=2 HOSTNAME=j-3 DMLPS_SERVICE=s
bad_launch "DMLPS_SERVICE" JOB_COMPLETION_INDEX=1 DMLPS_WORLD_SIZE=2 HOSTNAME=j-1
bad_launch "no launcher's rank"

# The binaries started directly: a usage error (64) naming the variable.
for vars in "RANK=1 WORLD_SIZE=2" "RANK=one WORLD_SIZE=2 MASTER_ADDR=a" \
            "JOB_COMPLETION_INDEX=2 DMLPS_WORLD_SIZE=2 DMLPS_SERVER=tcp://a:1"; do
  for program in dmlps-server dmlps-worker; do
    rc=0
    # shellcheck disable=SC2086
    env -i PATH="$PATH" $vars "$BIN/$program" >/dev/null 2>"$WORK/bad.err" || rc=$?
    expect_exit 64 "$rc" "$program with $vars"
    grep -qE "^$program: error: .*(MASTER_ADDR|RANK='one'|JOB_COMPLETION_INDEX=2)" "$WORK/bad.err" ||
      fail "$program with $vars: $(cat "$WORK/bad.err")"
  done
done
echo "bad launcher variables: one line, exit 78 from dmlps-launch and 64 from the binaries"
