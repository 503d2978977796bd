# Live progress: on a terminal, dmlps-bench run and sim keep one status line
# on stderr (which run of how many, the iteration, the accuracy, the time)
# and the server one of how many workers have joined; stdout stays clean.
# Without a terminal, or with --quiet, there is none of it. The terminal is
# a pseudo-terminal from Python's pty module.
. "$(dirname "$0")/lib.sh"
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3) || { echo "SKIP: no python3 for a pseudo-terminal"; exit 77; }
[ -d /usr/share/datasets/fashion-mnist ] ||
  { echo "SKIP: the runs train on Fashion-MNIST (apt install dataset-fashion-mnist)"; exit 77; }

# on_tty SECONDS OUT ERR CMD...: runs CMD with stderr on a pseudo-terminal
# (stdout to OUT), for at most SECONDS (then SIGTERM); what the terminal
# showed goes to ERR; with UNTIL set, also once the terminal has shown
# that text. Exits with CMD's status.
cat >"$WORK/on_tty.py" <<'PY'
import os, pty, select, signal, subprocess, sys, time
limit, out, err, cmd = float(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4:]
master, slave = pty.openpty()
with open(out, "wb") as o:
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=o, stderr=slave)
os.close(slave)
shown, end = b"", time.time() + limit
until, seen = os.environ.get("UNTIL", "").encode(), False
while True:
    if until and not seen and until in shown:
        seen, end = True, time.time()
    if time.time() > end and p.poll() is None:
        p.send_signal(signal.SIGTERM)
        end = time.time() + 30
    ready, _, _ = select.select([master], [], [], 0.1)
    if ready:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    elif p.poll() is not None:
        break
open(err, "wb").write(shown)
sys.exit(p.wait())
PY
on_tty() { "$py" "$WORK/on_tty.py" "$@"; }

bench=$BIN/dmlps-bench
tiny=(--workers 2 --model softmax --batch 16 --lr 0.1 --eval-every 5 --target 0
      --max-iterations 40 --policies bsp,asp --compute-cost 50,2 --format tsv)

# sim on a terminal: "[2/2] asp run 1/1: ..., iteration N, accuracy A ..."
on_tty 120 "$WORK/sim.tsv" "$WORK/sim.tty" "$bench" sim "${tiny[@]}" || fail "dmlps-bench sim exited $?"
grep -aq $'\r\033\\[K\\[2/2\\] asp run 1/1: [0-9.]* s, iteration [0-9]*, accuracy 0\\.[0-9]*' "$WORK/sim.tty" ||
  fail "no status line from dmlps-bench sim on a terminal: $(tr '\r' '\n' <"$WORK/sim.tty" | tail -n 5)"
! grep -q $'\r\\|\033' "$WORK/sim.tsv" || fail "the status line reached stdout"
# Not a terminal: no status line at all.
"$bench" sim "${tiny[@]}" >"$WORK/plain.tsv" 2>"$WORK/plain.err" || fail "dmlps-bench sim exited $?"
! grep -q $'\r\\|\033\\|run 1/1:' "$WORK/plain.err" || fail "a status line without a terminal"
cmp -s "$WORK/sim.tsv" "$WORK/plain.tsv" || fail "a terminal changed the table"
# --quiet: none either.
on_tty 120 "$WORK/quiet.tsv" "$WORK/quiet.tty" "$bench" sim "${tiny[@]}" --quiet || fail "dmlps-bench sim --quiet exited $?"
! grep -aq 'run 1/1:' "$WORK/quiet.tty" || fail "--quiet showed a status line"

# run on a terminal: a real cluster, the same line.
on_tty 120 "$WORK/run.tsv" "$WORK/run.tty" "$bench" run --workers 2 --model softmax --batch 32 \
  --eval-every 10 --target 0 --max-iterations 40 --policies bsp --format tsv ||
  fail "dmlps-bench run exited $?"
grep -aq $'\r\033\\[K\\[1/1\\] bsp run 1/1: [0-9.]* s' "$WORK/run.tty" ||
  fail "no status line from dmlps-bench run on a terminal: $(tr '\r' '\n' <"$WORK/run.tty" | tail -n 5)"
! grep -q $'\r\\|\033' "$WORK/run.tsv" || fail "the status line reached stdout"

# The server on a terminal, waiting: how many have joined. It is stopped
# once it counts the worker, or after 30 s: a worker loading Fashion-MNIST
# beside ctest -j2's other tests took over the 4 s given before to join.
UNTIL='1 of 2 joined' "$py" "$WORK/on_tty.py" 30 "$WORK/server.tsv" "$WORK/server.tty" "$BIN/dmlps-server" \
  --bind 'tcp://127.0.0.1:*' --endpoint-file "$WORK/endpoint" --workers 2 --model softmax &
SERVER_PID=$!
CHILDREN+=("$SERVER_PID")
await_endpoint
start_worker w0
wait_for "$SERVER_PID" 60
# A worker whose data is in the page cache can join before the first line
# is drawn: then the first shows it already.
grep -aqE 'waiting for workers: [01] of 2 joined' "$WORK/server.tty" ||
  fail "the waiting server showed no status line"
grep -aq 'waiting for workers: 1 of 2 joined' "$WORK/server.tty" ||
  fail "the status line did not count the worker that joined: $(tr '\r' '\n' <"$WORK/server.tty" | tail -n 5)"
# Without a terminal (lib.sh's start_server logs to a file): log lines only.
start_server --workers 2 --model softmax
sleep 1.5
kill "$SERVER_PID"
! grep -q 'waiting for workers:\|'$'\033' "$WORK/server.log" || fail "a status line in the server's log file"
echo "ok"
