# Shared helpers for the CLI scenarios: real processes on loopback, free ports
# chosen by the server itself, every wait bounded, every child killed on exit.
set -euo pipefail

BIN=${DMLPS_BIN:?DMLPS_BIN must name the folder holding dmlps-server}
TEST_BIN=${DMLPS_TEST_BIN:-$BIN/../tests}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/dmlps-cli.XXXXXX")
CHILDREN=()

cleanup() {
  local rc=$?
  for pid in "${CHILDREN[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ "$rc" -ne 0 ]; then
    for f in "$WORK"/*.log; do
      [ -f "$f" ] || continue
      echo "--- $(basename "$f") (last 15 lines)" >&2
      tail -n 15 "$f" >&2
    done
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# The job secret of every server, shard, evaluator and announcing worker a
# test starts (docs/security.md); a test of the roles unsets it.
"$BIN/dmlps-keygen" --secret "$WORK/secret" >"$WORK/keygen.log" 2>&1 ||
  fail "$BIN/dmlps-keygen could not write the job secret"
export DMLPS_SECRET_FILE="$WORK/secret"

# start_server ARGS...: starts dmlps-server on a free loopback port; sets
# SERVER_PID and ENDPOINT. stdout goes to $WORK/server.tsv, stderr to server.log.
start_server() {
  rm -f "$WORK/endpoint"
  "$BIN/dmlps-server" --bind 'tcp://127.0.0.1:*' --endpoint-file "$WORK/endpoint" "$@" \
    >"$WORK/server.tsv" 2>"$WORK/server.log" &
  SERVER_PID=$!
  CHILDREN+=("$SERVER_PID")
  await_endpoint
}

# await_endpoint: waits until the server started as SERVER_PID has written
# its address to $WORK/endpoint, and sets ENDPOINT; fails the test when the
# server exits first or takes more than 30 s.
await_endpoint() {
  for _ in $(seq 300); do
    [ -s "$WORK/endpoint" ] && break
    kill -0 "$SERVER_PID" 2>/dev/null || fail "dmlps-server exited before listening"
    sleep 0.1
  done
  [ -s "$WORK/endpoint" ] || fail "dmlps-server did not listen within 30 s"
  ENDPOINT=$(cat "$WORK/endpoint")
}

# restart_server ARGS...: starts dmlps-server again on $ENDPOINT, after the
# one started before exited; sets SERVER_PID. The earlier one's output moves
# to $WORK/server-1.tsv and server-1.log.
restart_server() {
  mv "$WORK/server.log" "$WORK/server-1.log"
  mv "$WORK/server.tsv" "$WORK/server-1.tsv"
  "$BIN/dmlps-server" --bind "$ENDPOINT" "$@" >"$WORK/server.tsv" 2>"$WORK/server.log" &
  SERVER_PID=$!
  CHILDREN+=("$SERVER_PID")
}

# start_worker NAME ARGS...: starts dmlps-worker against $ENDPOINT; its pid is
# stored in WORKER_PID and its stderr in $WORK/NAME.log.
start_worker() {
  local name=$1
  shift
  "$BIN/dmlps-worker" --server "$ENDPOINT" "$@" 2>"$WORK/$name.log" &
  WORKER_PID=$!
  CHILDREN+=("$WORKER_PID")
}

# server_refuses WHY ARGS...: dmlps-server with ARGS exits 64 before
# anything starts, with one error line that matches the regular expression
# WHY.
server_refuses() {
  local why=$1 rc=0
  shift
  timeout 30 "$BIN/dmlps-server" --bind 'tcp://127.0.0.1:*' "$@" >/dev/null 2>"$WORK/err" ||
    rc=$?
  expect_exit 64 "$rc" "dmlps-server $*"
  [ "$(grep -c "error" "$WORK/err")" -eq 1 ] || fail "dmlps-server $*: $(cat "$WORK/err")"
  grep -q -- "^dmlps-server: error: .*$why" "$WORK/err" ||
    fail "dmlps-server $*: no '$why' in: $(cat "$WORK/err")"
}

# wait_for PID SECONDS: waits for a child and sets RC to its exit status;
# fails the test when it is still running after SECONDS. (Not in $(...): a
# subshell cannot wait for its parent's children.)
wait_for() {
  local pid=$1 limit=$2
  for _ in $(seq $((limit * 10))); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    fail "process $pid still running after $limit s"
  fi
  RC=0
  wait "$pid" || RC=$?
}

# run_tool WANT-EXIT BINARY ARGS...: runs $BIN/BINARY with ARGS for at most
# 60 s, its stdout into $WORK/out and its stderr into $WORK/err; fails the
# test unless it exits WANT-EXIT.
run_tool() {
  local want=$1 bin=$2 rc=0
  shift 2
  timeout 60 "$BIN/$bin" "$@" >"$WORK/out" 2>"$WORK/err" || rc=$?
  expect_exit "$want" "$rc" "$bin $*"
}

# expect_exit WANT GOT WHAT
expect_exit() {
  [ "$2" -eq "$1" ] || fail "$3: exit status $2, expected $1"
}

# last_accuracy: the accuracy column of the server's last TSV line.
last_accuracy() {
  tail -n 1 "$WORK/server.tsv" | cut -f 3
}

# expect_accuracy TARGET: fails unless the accuracy of the server's last
# TSV line is at least TARGET; sets ACCURACY to it.
expect_accuracy() {
  ACCURACY=$(last_accuracy)
  awk -v a="$ACCURACY" -v t="$1" 'BEGIN { exit !(a >= t) }' ||
    fail "final accuracy $ACCURACY is below $1"
}

# finish_with_evaluator MODEL WHAT PID...: starts an evaluator process of
# MODEL (its log evaluator.log); then the server, WHAT, must exit 0 within
# 120 s, and the processes PID... and the evaluator within 30 s each.
finish_with_evaluator() {
  local model=$1 what=$2
  shift 2
  start_worker evaluator --model "$model" --evaluator
  wait_ok 120 "$what" "$SERVER_PID"
  wait_ok 30 "a member of the job" "$@" "$WORKER_PID"
}

# train_to_target WORKERS TARGET SERVER-ARGS...: runs a whole cluster to the
# target and checks that the server reports it reached, within 300 s. Workers
# get the flags in the WORKER_ARGS array, the last one also those in
# SLOW_WORKER_ARGS (to make it a straggler).
WORKER_ARGS=()
SLOW_WORKER_ARGS=()
train_to_target() {
  local workers=$1 target=$2
  shift 2
  start_server --workers "$workers" --target-accuracy "$target" "$@"
  local pids=()
  for ((r = 0; r < workers; r++)); do
    if [ "$r" -eq $((workers - 1)) ]; then
      start_worker "worker-$r" "${WORKER_ARGS[@]}" "${SLOW_WORKER_ARGS[@]}"
    else
      start_worker "worker-$r" "${WORKER_ARGS[@]}"
    fi
    pids+=("$WORKER_PID")
  done
  wait_ok 300 "dmlps-server" "$SERVER_PID"
  wait_ok 30 "dmlps-worker" "${pids[@]}"
  head -n 1 "$WORK/server.tsv" | grep -q $'^seconds\titeration\taccuracy\tloss$' ||
    fail "the TSV header is missing"
  expect_accuracy "$target"
  grep -q "reached accuracy" "$WORK/server.log" || fail "the server did not report the target"
  echo "reached accuracy $ACCURACY: $(tail -n 1 "$WORK/server.tsv")"
}

# wait_log FILE REGEX SECONDS: waits until a line of FILE matches the
# extended regular expression; fails the test after SECONDS.
wait_log() {
  local file=$1 regex=$2 limit=$3
  for _ in $(seq $((limit * 10))); do
    grep -qE -- "$regex" "$file" 2>/dev/null && return 0
    sleep 0.1
  done
  fail "no line matching '$regex' in $(basename "$file") within $limit s"
}

# wait_iteration N SECONDS: waits until the server's TSV has an evaluation
# at iteration N or later.
wait_iteration() {
  local want=$1 limit=$2
  for _ in $(seq $((limit * 10))); do
    awk -F '\t' -v n="$want" 'NR > 1 && $2 >= n { found = 1 } END { exit !found }' \
      "$WORK/server.tsv" 2>/dev/null && return 0
    sleep 0.1
  done
  fail "the server did not reach iteration $want within $limit s"
}

# The header of the TSV tables of dmlps-bench run and sim.
BENCH_TSV_HEADER=$'policy\truns\treached\tseconds_median\tseconds_min\tseconds_max\titerations\tsamples\tcompute_ratio_mean\tcompute_ratio_min\twait_share\twasted_samples\taccuracy\tspeedup\tbytes_per_worker'

# expect_tsv FILE HEADER ROWS: shows FILE in the log, and fails unless its
# first line is exactly HEADER and ROWS lines follow it.
expect_tsv() {
  cat "$1"
  head -n 1 "$1" | grep -qxF -- "$2" || fail "unexpected TSV header"
  [ "$(wc -l <"$1")" -eq $(($3 + 1)) ] || fail "expected a header and $3 rows"
}

# expect_table FILE TITLE HEADER: fails unless the first line of FILE matches
# the regular expression TITLE and its second line HEADER.
expect_table() {
  head -n 1 "$1" | grep -q -- "$2" || fail "no title line"
  sed -n 2p "$1" | grep -q -- "$3" || fail "no header line"
}

# report_value FILE KEY: the value of KEY in a --report file.
report_value() {
  awk -F '\t' -v k="$2" '$1 == k { print $2 }' "$1"
}

# rss_of PID: the resident memory of process PID in MiB.
rss_of() { awk '/VmRSS/ { print int($2 / 1024) }' "/proc/$1/status"; }

# server_rss: the resident memory of $SERVER_PID in MiB.
server_rss() { rss_of "$SERVER_PID"; }

# watch_rss SECONDS [PID]: samples the memory of PID (default $SERVER_PID)
# every 0.5 s for SECONDS; sets RSS_PEAK to the most seen; fails the test
# when the process exits meanwhile.
watch_rss() {
  local pid=${2:-$SERVER_PID} now
  RSS_PEAK=$(rss_of "$pid")
  for _ in $(seq $(($1 * 2))); do
    sleep 0.5
    kill -0 "$pid" 2>/dev/null || fail "process $pid died during the attack"
    now=$(rss_of "$pid")
    if [ "$now" -gt "$RSS_PEAK" ]; then RSS_PEAK=$now; fi
  done
}

# start_attack_peer ARGS...: starts dmlps-attack-peer ARGS, its stdout
# added to $WORK/attack.out and its stderr to attack.log; its pid goes to
# PEER_PID.
start_attack_peer() {
  "$TEST_BIN/dmlps-attack-peer" "$@" >>"$WORK/attack.out" 2>>"$WORK/attack.log" &
  PEER_PID=$!
  CHILDREN+=("$PEER_PID")
}

# server_alive WHAT: fails the test when the server has died under WHAT.
server_alive() {
  kill -0 "$SERVER_PID" 2>/dev/null || fail "the server died under $1"
}

# attack_rss SECONDS PID WHAT PEER-ARGS...: runs dmlps-attack-peer PEER-ARGS
# (start_attack_peer) while watch_rss samples PID's memory for SECONDS;
# sets RSS_BEFORE and RSS_PEAK, and fails the test unless the peer, named
# WHAT, exits 0 within 30 s more.
attack_rss() {
  local seconds=$1 pid=$2 what=$3
  shift 3
  RSS_BEFORE=$(rss_of "$pid")
  start_attack_peer "$@"
  watch_rss "$seconds" "$pid"
  wait_ok 30 "$what" "$PEER_PID"
  echo "RSS of process $pid: $RSS_BEFORE MiB before, at most $RSS_PEAK MiB during the attack"
}

# expect_rss_within MIB WHAT: fails unless RSS_PEAK is at most MIB above
# RSS_BEFORE; WHAT names the process.
expect_rss_within() {
  [ "$RSS_PEAK" -le $((RSS_BEFORE + $1)) ] ||
    fail "$2 grew from $RSS_BEFORE to $RSS_PEAK MiB (bound: $1 MiB more)"
}

# wait_ok SECONDS WHAT PID...: waits for each child in turn, SECONDS each,
# and fails the test unless each exits 0; WHAT names them.
wait_ok() {
  local limit=$1 what=$2 pid
  shift 2
  for pid in "$@"; do
    wait_for "$pid" "$limit"
    expect_exit 0 "$RC" "$what (pid $pid)"
  done
}

# train_one_worker SECONDS WHAT: a worker joins the server's running job,
# which must then end with exit status 0 within SECONDS, and the worker's
# within 30 s more; WHAT says after what, in messages.
train_one_worker() {
  start_worker w0
  wait_ok "$1" "dmlps-server after $2" "$SERVER_PID"
  wait_ok 30 "worker 0 after $2" "$WORKER_PID"
}

# write_good_checkpoint ITERATIONS: a softmax run of one worker writes a
# checkpoint every 10 iterations to $WORK/good.ckpt, for the tests that
# craft bad ones from it; fails the test when none is written.
write_good_checkpoint() {
  start_server --workers 1 --model softmax --batch 32 --max-iterations "$1" --eval-every 10 \
    --checkpoint "$WORK/good.ckpt" --checkpoint-every 10
  start_worker w0
  wait_for "$SERVER_PID" 60
  expect_exit 0 "$RC" "dmlps-server writing checkpoints"
  wait_for "$WORKER_PID" 30
  [ -s "$WORK/good.ckpt" ] || fail "no checkpoint written"
}

# craft_checkpoint IN OUT KEY=VALUE: rewrites one counter of the metadata
# (or the policy's state, as one value; or, for "momentum", every float of
# the optimizer's state; for "params", every parameter), then the header's
# size and the CRC. Python's standard library only: the msgpack it edits is
# a map of names to scalars.
craft_checkpoint() {
  /usr/bin/python3 - "$@" <<'PY'
import struct, sys, zlib
src, dst, edit = sys.argv[1:]
b = open(src, "rb").read()
magic, fmt, meta_size, n_params, n_state = struct.unpack_from("<8sIIQQ", b, 0)
meta = b[32:32 + meta_size]
floats = b[32 + meta_size:len(b) - 4]
key, value = edit.split("=")

def int_end(at):  # where the msgpack integer at `at` ends
    t = meta[at]
    if t < 0x80 or t >= 0xe0: return at + 1
    return at + 1 + {0xcc: 1, 0xcd: 2, 0xce: 4, 0xcf: 8, 0xd0: 1, 0xd1: 2, 0xd2: 4, 0xd3: 8}[t]

def packed_int(v):
    return b"\xcf" + struct.pack(">Q", v) if v >= 0 else b"\xd3" + struct.pack(">q", v)

if key == "momentum":
    floats = floats[:4 * n_params] + struct.pack("<%df" % n_state, *([float(value)] * n_state))
elif key == "params":
    floats = struct.pack("<%df" % n_params, *([float(value)] * n_params)) + floats[4 * n_params:]
else:
    name = bytes([0xa0 | len(key)]) + key.encode()
    at = meta.index(name) + len(name)
    if key == "policy_extra":
        assert meta[at] & 0xf0 == 0x90, "policy_extra is not a short array"
        end = at + 1
        for _ in range(meta[at] & 0x0f): end = int_end(end)
        meta = meta[:at] + b"\x91" + packed_int(int(value)) + meta[end:]
    else:
        meta = meta[:at] + packed_int(int(value)) + meta[int_end(at):]
body = struct.pack("<8sIIQQ", magic, fmt, len(meta), n_params, n_state) + meta + floats
open(dst, "wb").write(body + struct.pack("<I", zlib.crc32(body) & 0xFFFFFFFF))
PY
}

# finish_cluster TAG SHARDS: waits for the server shards in CLUSTER_SHARDS
# (120 s each) and then the workers in CLUSTER_WORKERS (30 s each), each to
# exit 0, and writes TAG.model, the shards' saved slices TAG.0 .. TAG.(S-1)
# in order: the whole model.
finish_cluster() {
  local tag=$1 shards=$2 pid k
  for pid in "${CLUSTER_SHARDS[@]}"; do
    wait_for "$pid" 120
    expect_exit 0 "$RC" "server shard (pid $pid) of $tag"
  done
  for pid in "${CLUSTER_WORKERS[@]}"; do
    wait_for "$pid" 30
    expect_exit 0 "$RC" "worker (pid $pid) of $tag"
  done
  : >"$WORK/$tag.model"
  for ((k = 0; k < shards; k++)); do cat "$WORK/$tag.$k" >>"$WORK/$tag.model"; done
}

# start_shard INDEX COUNT ARGS...: starts shard INDEX of COUNT against shard
# 0 at $ENDPOINT; its pid goes to SHARD_PID, its log to shard-INDEX.log (or
# $SHARD_LOG.log when SHARD_LOG is set).
start_shard() {
  local index=$1 count=$2
  shift 2
  "$BIN/dmlps-server" --bind 'tcp://127.0.0.1:*' --shard "$index/$count" \
    --coordinator "$ENDPOINT" "$@" 2>"$WORK/${SHARD_LOG:-shard-$index}.log" &
  SHARD_PID=$!
  CHILDREN+=("$SHARD_PID")
}

# start_workers N PREFIX ARGS...: starts N workers, PREFIX0 .. PREFIX(N-1)
# (their logs PREFIXr.log), each with ARGS; their pids go to WORKERS.
start_workers() {
  local n=$1 prefix=$2 r
  shift 2
  WORKERS=()
  for ((r = 0; r < n; r++)); do
    start_worker "$prefix$r" "$@"
    WORKERS+=("$WORKER_PID")
  done
}

# attacked_run SECONDS ATTACKER SERVER-ARGS...: a server for 4 workers (BSP,
# mlp:128) with SERVER-ARGS; ATTACKER, a command line of a program in
# $TEST_BIN in which @ stands for the server's address (its output in
# attacker.out, its log attacker.log); then 3 workers, worker-0..2. Waits
# SECONDS for the server and sets SERVER_RC to its exit status, then 30 s
# for each of the others, which must exit 0; sets ITERATION to the last
# evaluation's.
attacked_run() {
  local seconds=$1 attacker
  shift
  local line=$1
  shift
  start_server --workers 4 --policy bsp --model mlp:128 "$@"
  read -r -a attacker <<<"${line//@/$ENDPOINT}"
  "$TEST_BIN/${attacker[0]}" "${attacker[@]:1}" >"$WORK/attacker.out" 2>"$WORK/attacker.log" &
  local pids=("$!")
  CHILDREN+=("$!")
  start_workers 3 worker-
  wait_for "$SERVER_PID" "$seconds"
  SERVER_RC=$RC
  wait_ok 30 "the attacker, then the workers" "${pids[@]}" "${WORKERS[@]}"
  ITERATION=$(tail -n 1 "$WORK/server.tsv" | cut -f 2)
}

# start_checkpointing_shards SECONDS WORKER-ARGS...: a job of 2 shards that
# goes on through a lost shard 1: shard 0 (BSP, softmax to 0.8, at most
# SECONDS, a checkpoint every 10 iterations to ckpt.0, its report in
# $WORK/report), shard 1 with SHARD1_ARGS (its checkpoint ckpt.1: the flags
# to start it again with) and 3 workers w0..w2 with WORKER-ARGS, all
# noticing a lost peer within 2 s; sets SHARD_PID and WORKERS.
SHARD1_ARGS=(--heartbeat-ms 100 --worker-timeout 2 --checkpoint "$WORK/ckpt.1")
start_checkpointing_shards() {
  local seconds=$1
  shift
  start_server --shard 0/2 --workers 3 --policy bsp --model softmax --batch 32 --lr 0.02 \
    --eval-every 10 --target-accuracy 0.8 --max-iterations 3000 --max-seconds "$seconds" \
    --heartbeat-ms 100 --worker-timeout 2 --checkpoint "$WORK/ckpt.0" --checkpoint-every 10 \
    --report "$WORK/report"
  start_shard 1 2 "${SHARD1_ARGS[@]}"
  start_workers 3 w --heartbeat-ms 100 --server-timeout 10 --reconnect-timeout 40 "$@"
}

# cluster_ckpt_flags TAG CKPT K: sets CKPT_FLAGS to shard K's checkpoint
# flags in run_cluster (which see).
cluster_ckpt_flags() {
  local tag=$1 ckpt=$2 k=$3
  CKPT_FLAGS=()
  [ "$ckpt" = none ] && return
  CKPT_FLAGS=(--checkpoint "$WORK/$tag.ckpt.$k")
  [ "$k" = 0 ] && CKPT_FLAGS+=(--checkpoint-every "${EVERY:-10}")
  [ "$ckpt" = resume ] && CKPT_FLAGS+=(--resume "$WORK/$tag.ckpt.$k")
  return 0
}

# run_cluster SHARDS WORKERS TAG CKPT SERVER-ARGS...: shard 0 (with
# SERVER-ARGS), SHARDS - 1 more shards (logs TAG-shard-K.log) and WORKERS
# workers (TAG-worker-R, --rank R, each with CLUSTER_WORKER_ARGS) to the
# end, every one exiting 0 (finish_cluster). Shard K saves its slice to
# TAG.K; TAG.model is the whole model and TAG.tsv shard 0's TSV. CKPT:
# none; save (shard K checkpoints to TAG.ckpt.K, shard 0 every ${EVERY:-10}
# iterations); resume (the same, going on from TAG.ckpt.K).
CLUSTER_WORKER_ARGS=()
run_cluster() {
  local shards=$1 workers=$2 tag=$3 ckpt=$4 k r
  shift 4
  cluster_ckpt_flags "$tag" "$ckpt" 0
  start_server --shard "0/$shards" --workers "$workers" --save-model "$WORK/$tag.0" \
    "${CKPT_FLAGS[@]}" "$@"
  CLUSTER_SHARDS=("$SERVER_PID")
  for ((k = 1; k < shards; k++)); do
    cluster_ckpt_flags "$tag" "$ckpt" "$k"
    SHARD_LOG=$tag-shard-$k start_shard "$k" "$shards" --save-model "$WORK/$tag.$k" \
      "${CKPT_FLAGS[@]}"
    CLUSTER_SHARDS+=("$SHARD_PID")
  done
  CLUSTER_WORKERS=()
  for ((r = 0; r < workers; r++)); do
    start_worker "$tag-worker-$r" --rank "$r" "${CLUSTER_WORKER_ARGS[@]}"
    CLUSTER_WORKERS+=("$WORKER_PID")
  done
  finish_cluster "$tag" "$shards"
  cp "$WORK/server.tsv" "$WORK/$tag.tsv"
}

# bash_offers LINE: what the bash completion (completions/bash/dmlps) offers
# at the end of LINE, one a line, driven as bash drives it: COMP_WORDS,
# COMP_CWORD, COMP_LINE and the function `complete -p` names for the
# command (for a path, its file name's, as bash looks it up).
bash_offers() {
  local src=${DMLPS_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
  bash --norc --noprofile -c '
    source "$1" || exit 1
    read -r -a COMP_WORDS <<<"$2"
    [[ $2 == *" " ]] && COMP_WORDS+=("")
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    COMP_LINE=$2
    COMP_POINT=${#COMP_LINE}
    spec=$(complete -p "${COMP_WORDS[0]##*/}") || exit 2
    [[ $spec =~ -F\ ([^ ]+) ]] || exit 3
    COMPREPLY=()
    "${BASH_REMATCH[1]}" "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
    if ((${#COMPREPLY[@]} > 0)); then printf "%s\n" "${COMPREPLY[@]}"; fi
  ' _ "$src/completions/bash/dmlps" "$1"
}
