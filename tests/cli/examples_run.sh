# Runs every example of README.md (its ```sh blocks) and of the man pages
# (their EXAMPLES sections) that needs no GPU and one host, as written, each
# in a fresh folder: the dmlps binaries come from the build and their runs
# are kept short (flags appended; the last of a repeated flag wins), servers
# listen on free ports. An example passes when it ends within its time and
# no dmlps binary in it failed or printed an error. Those that cannot run
# here are in SKIP below, each with its reason.
. "$(dirname "$0")/lib.sh"
SRC=${DMLPS_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
command -v timeout >/dev/null || { echo "skip: timeout(1) is missing"; exit 77; }
[ -d /usr/share/datasets/fashion-mnist ] ||
  { echo "skip: the examples train on Fashion-MNIST (apt install dataset-fashion-mnist)"; exit 77; }

# An example is named by its file and first line; these are not run.
declare -A SKIP=(
  ["README.md: ./share/dmlps/setup-debian.sh        # compiler, libraries, scdoc, the Fashion-MNIST data set"]="installs packages and builds: the suite runs after it"
  ["README.md: sudo cmake --install build                      # /usr/local/bin, /usr/local/share/man, ..."]="installs into the system"
  ["README.md: ./share/dmlps/setup-debian.sh && cmake -S . -B build && cmake --build build -j\"\$(nproc)\" --target dmlps-server dmlps-worker dmlps-bench && build/cmd/dmlps-bench run"]="the main job, a minute or more; cli.bench_run runs it shrunk"
  ["README.md: ./share/dmlps/setup-debian.sh && cmake -S . -B build && cmake --build build -j\"\$(nproc)\" && ctest --test-dir build --output-on-failure -j\"\$(nproc)\""]="the test suite itself"
  ["README.md: mpirun -np 4 share/dmlps/launch/dmlps-launch --policy bsp --target-accuracy 0.84"]="needs mpirun; cli.mpirun_trains runs it"
  ["dmlps-launch.1.scd: mpirun -np 4 dmlps-launch --policy bsp --target-accuracy 0.84 \\"]="needs mpirun and srun; cli.mpirun_trains runs dmlps-launch"
  ["dmlps-bench.1.scd: dmlps-bench run --workers 2 --slowdown 1,2 --model external --target 0.8 \\"]="needs the example's Python scripts and PyTorch; cli.bench_commands runs them"
  ["dmlps-bench.1.scd: dmlps-bench profile --device cuda --batch 16..4096 --model cnn --format tsv"]="needs a GPU"
  ["dmlps-worker.1.scd: dmlps-server --workers 4 --policy lbbsp --lb-mode gpu --model cnn \\"]="needs a GPU (cuda workers)"
)

# extract FILE: prints the examples of FILE, each as "@@ FIRST-LINE" then its lines.
extract() {
  case "$1" in
    *.md) awk '/^```sh$/ { inside = 1; first = 1; next } /^```$/ { inside = 0 }
               inside { if (first) { print "@@ " $0; first = 0 } print }' "$1" ;;
    *.scd) awk '/^# EXAMPLES/ { ex = 1; next } /^# / { ex = 0 }
                ex && /^```$/ { inside = !inside; first = 1; next }
                ex && inside { sub(/\\\\$/, "\\"); if (first) { print "@@ " $0; first = 0 } print }' "$1" ;;
  esac
}

free_port() {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# The binaries as the examples call them: from the build, runs kept short,
# each exit status noted in $CODES.
dmlps_run() {
  local name=$1 rc=0
  shift
  "$DMLPS_BIN/$name" "$@" || rc=$?
  echo "$name $rc" >>"$CODES"
  return "$rc"
}
dmlps-server() {
  case " $* " in
    *" --coordinator "*) dmlps_run dmlps-server "$@" ;;
    *) dmlps_run dmlps-server "$@" --max-iterations 20 --eval-every 10 --max-seconds 8 ;;
  esac
}
dmlps-worker() { dmlps_run dmlps-worker "$@"; }
dmlps-bench() {
  case "$1" in
    run) dmlps_run dmlps-bench "$@" --repeat 1 --max-iterations 10 --eval-every 10 --target 0 ;;
    sim) dmlps_run dmlps-bench "$@" --repeat 1 --max-iterations 10 ;;
    transport) dmlps_run dmlps-bench "$@" --sizes 256K --rounds 2 ;;
    profile) dmlps_run dmlps-bench "$@" --batch 16..32 --reps 1 ;;
    *) dmlps_run dmlps-bench "$@" ;;
  esac
}
dmlps-trace() { dmlps_run dmlps-trace "$@"; }
dmlps-predict() { dmlps_run dmlps-predict "$@"; }
dmlps-keygen() { dmlps_run dmlps-keygen "$@"; }
export -f dmlps_run dmlps-server dmlps-worker dmlps-bench dmlps-trace dmlps-predict dmlps-keygen
export DMLPS_BIN="$BIN"

# setup NAME: what an example expects to find before it runs (a server for
# a lone worker, the files an earlier example of its page made).
setup() {
  case "$1" in
    "dmlps-worker.1.scd: dmlps-worker" | "dmlps-worker.1.scd: dmlps-worker --delay"* | \
      "dmlps-worker.1.scd: dmlps-worker --slowdown-schedule"*)
      echo "dmlps-server --workers 1 &" ;;
    "dmlps-worker.1.scd: dmlps-worker --server tcp://node1:5555"*)
      echo "dmlps-server --workers 3 --bind tcp://127.0.0.1:$PORT &"
      echo "for r in 0 1; do dmlps-worker --server tcp://127.0.0.1:$PORT --rank \$r & done" ;;
    "dmlps-worker.1.scd: for r in 0 1 2 3; do"*)
      echo "rm -f endpoint; dmlps-server --workers 4 --policy lbbsp --endpoint-file endpoint &"
      echo "while [ ! -s endpoint ]; do sleep 0.1; done" ;;
    "dmlps-server.1.scd: dmlps-server --workers 2 --model softmax --data libsvm:train.svm"*)
      cat <<'MAKE_SVM'
/usr/bin/python3 - <<'PY'
import random
random.seed(1)
for name, n in (("train.svm", 400), ("train.svm.t", 100)):
    with open(name, "w") as f:
        for _ in range(n):
            y = random.randint(0, 1)
            f.write("%d %s\n" % (y, " ".join("%d:%.2f" % (j, random.random() + y) for j in (1, 2, 3))))
PY
MAKE_SVM
      ;;
    "dmlps-trace.1.scd: dmlps-trace plot"*)
      command -v gnuplot >/dev/null || echo "exit 77"
      echo "mkdir -p bsp wbsp; cp server.trace bsp/; cp server.trace wbsp/" ;;
  esac
}

ran=0 skipped=0
for page in "$SRC/README.md" "$SRC"/man/*.scd; do
  file=$(basename "$page")
  folder=$WORK/$file
  mkdir -p "$folder"
  extract "$page" >"$WORK/examples"
  n=0
  while IFS= read -r -d $'\x01' example; do
    [ -n "$example" ] || continue
    first=${example%%$'\n'*}
    name="$file: ${first#@@ }"
    body=${example#*$'\n'}
    n=$((n + 1))
    if [ -n "${SKIP[$name]+set}" ]; then
      echo "skip $name: ${SKIP[$name]}"
      skipped=$((skipped + 1))
      continue
    fi
    PORT=$(free_port)
    CODES=$WORK/codes.$file.$n
    : >"$CODES"
    body=${body//tcp:\/\/127.0.0.1:6000/tcp:\/\/127.0.0.1:$PORT}
    body=${body//tcp:\/\/node1:5555/tcp:\/\/127.0.0.1:$PORT}
    { setup "$name"; echo "$body"; echo wait; } >"$WORK/example.sh"
    rc=0 start=$SECONDS
    (cd "$folder" && DMLPS_PORT=$PORT CODES=$CODES timeout -k 5 150 bash "$WORK/example.sh") \
      >"$WORK/example.out" 2>"$WORK/example.err" || rc=$?
    [ "$rc" -ne 77 ] || { echo "skip $name: its tools are missing"; skipped=$((skipped + 1)); continue; }
    [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] || { cat "$WORK/example.sh" >&2; tail -n 20 "$WORK/example.err" >&2; fail "$name: did not end within 150 s"; }
    if grep -q '^[0-9:. ]*dmlps-[a-z]*\(: [a-z]*\)\?: error:' "$WORK/example.err"; then
      cat "$WORK/example.sh" >&2
      grep 'error:' "$WORK/example.err" >&2
      fail "$name: a dmlps binary printed an error"
    fi
    [ -s "$CODES" ] || fail "$name: ran no dmlps binary"
    while read -r binary code; do
      case "$binary:$code" in
        *:0 | dmlps-server:1) ;;  # a shortened run may miss its target
        *) tail -n 20 "$WORK/example.err" >&2; fail "$name: $binary exited $code" ;;
      esac
    done <"$CODES"
    ran=$((ran + 1))
    echo "ran $name ($((SECONDS - start)) s)"
  done < <(awk 'BEGIN { ORS = "" } /^@@ / && NR > 1 { print "\x01" } { print $0 "\n" } END { print "\x01" }' "$WORK/examples")
done
[ "$ran" -ge 20 ] || fail "only $ran examples ran"
echo "ok: $ran examples ran, $skipped skipped"
