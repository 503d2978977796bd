# Tiny data files that declare huge sizes: a 30-byte LIBSVM file naming
# feature 2147483647, IDX headers declaring images of 40000 x 40000 pixels.
# Server and worker refuse them before allocating anything for them, with
# one line and exit 65 (not an out-of-memory abort); --max-features moves
# the bound.
. "$(dirname "$0")/lib.sh"

run() {  # run WANT-EXIT WHY BINARY ARGS...: stderr into $WORK/err
  local want=$1 why=$2 bin=$3 rc=0
  shift 3
  timeout 60 "$BIN/$bin" "$@" >/dev/null 2>"$WORK/err" || rc=$?
  expect_exit "$want" "$rc" "$bin $*"
  grep -q "^$bin: error: .*$why" "$WORK/err" || fail "$bin: no '$why' in: $(cat "$WORK/err")"
  [ "$(grep -c "error" "$WORK/err")" -eq 1 ] || fail "$bin: more than one line of error"
}

# 30 bytes: a label and one feature at the largest index LIBSVM allows.
printf '1 2147483647:1.0\n1 1:0.5 2:1\n' >"$WORK/huge.svm"
[ "$(stat -c %s "$WORK/huge.svm")" -le 30 ] || fail "the file is not tiny"
cp "$WORK/huge.svm" "$WORK/huge.svm.t"
run 65 "feature index 2147483647 is beyond --max-features 67108864" \
  dmlps-server --bind 'tcp://127.0.0.1:*' --model softmax --data "libsvm:$WORK/huge.svm"

# A small file passes the default, and not a bound below its features.
printf '1 1:0.5 300:1\n0 2:1\n' >"$WORK/small.svm"
cp "$WORK/small.svm" "$WORK/small.svm.t"
run 65 "feature index 300 is beyond --max-features 100" \
  dmlps-server --bind 'tcp://127.0.0.1:*' --model softmax --data "libsvm:$WORK/small.svm" \
  --max-features 100

# IDX headers alone: 10 images of 40000 x 40000 pixels (64 GB as floats).
mkdir -p "$WORK/idx"
for set in train t10k; do
  printf '\x00\x00\x08\x03\x00\x00\x00\x0a\x00\x00\x9c\x40\x00\x00\x9c\x40' \
    >"$WORK/idx/$set-images-idx3-ubyte"
  printf '\x00\x00\x08\x01\x00\x00\x00\x0a\x01\x02\x03\x04\x05\x06\x07\x08\x09\x00' \
    >"$WORK/idx/$set-labels-idx1-ubyte"
done
run 65 "images of 40000 x 40000 pixels are beyond --max-features" \
  dmlps-server --bind 'tcp://127.0.0.1:*' --model softmax --data "idx:$WORK/idx"
# Raised past them, the bound is the machine's memory.
run 65 "more than this machine's memory" \
  dmlps-server --bind 'tcp://127.0.0.1:*' --model softmax --data "idx:$WORK/idx" \
  --max-features 2000000000
run 64 "max-features" dmlps-server --max-features 0

# The worker reads its own data after joining: a server on sane data, a
# worker on the tiny hostile files.
start_server --workers 1 --model softmax --data "libsvm:$WORK/small.svm" --max-iterations 5
run 65 "feature index 2147483647 is beyond --max-features 67108864" \
  dmlps-worker --server "$ENDPOINT" --data "libsvm:$WORK/huge.svm"
run 65 "images of 40000 x 40000 pixels are beyond --max-features" \
  dmlps-worker --server "$ENDPOINT" --data "idx:$WORK/idx"
kill -0 "$SERVER_PID" 2>/dev/null || fail "the server did not outlive the refused workers"
echo "ok: tiny files declaring huge sizes refused with exit 65 by server and worker"
