# Checkpoints crafted with a valid checksum: counters no run reaches
# (iteration 2^63-1, a policy counter of -2^63) are refused with one line
# and exit 65 before any arithmetic on them; one whose momentum holds 3e38
# is taken, and the updates that would overflow the model are refused
# while the model stays finite.
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3

write_good_checkpoint 20

# craft IN OUT KEY=VALUE...: rewrites one counter of the metadata (or the
# policy's state, as one value; or, for "momentum", every float of the
# optimizer's state), then the header's size and the CRC. Python's standard
# library only: the msgpack it edits is a map of names to scalars.
craft() {
  "$PY" - "$@" <<'PY'
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

resume_refused() {  # FILE WHY
  local rc=0
  timeout 30 "$BIN/dmlps-server" --bind 'tcp://127.0.0.1:*' --workers 1 --model softmax \
    --batch 32 --resume "$1" >/dev/null 2>"$WORK/resume.log" || rc=$?
  expect_exit 65 "$rc" "dmlps-server --resume $(basename "$1")"
  grep -q "^dmlps-server: error: .*$2" "$WORK/resume.log" ||
    fail "$(basename "$1"): no '$2' in: $(cat "$WORK/resume.log")"
  [ "$(grep -c "error" "$WORK/resume.log")" -eq 1 ] || fail "more than one line of error"
}
craft "$WORK/good.ckpt" "$WORK/iteration.ckpt" iteration=9223372036854775807
craft "$WORK/good.ckpt" "$WORK/version.ckpt" version=9223372036854775807
craft "$WORK/good.ckpt" "$WORK/samples.ckpt" samples=9223372036854775807
craft "$WORK/good.ckpt" "$WORK/extra.ckpt" policy_extra=-9223372036854775808
resume_refused "$WORK/iteration.ckpt" "implausible count (iteration 9223372036854775807"
resume_refused "$WORK/version.ckpt" "implausible count"
resume_refused "$WORK/samples.ckpt" "implausible count"
resume_refused "$WORK/extra.ckpt" "policy's state holds an implausible count"

# A momentum of 3e38 everywhere: taken (it is finite; and so the crafting
# is sound), and training goes on without the model ever becoming NaN or
# infinite. At --lr 2 its first step (2 * 0.9 * 3e38) would overflow a
# float: every such update is refused and the model stays as saved.
craft "$WORK/good.ckpt" "$WORK/momentum.ckpt" momentum=3e38
rm -f "$WORK/endpoint"
"$BIN/dmlps-server" --bind 'tcp://127.0.0.1:*' --endpoint-file "$WORK/endpoint" --workers 1 \
  --model softmax --batch 32 --lr 2 --resume "$WORK/momentum.ckpt" --max-iterations 60 \
  --eval-every 10 --save-model "$WORK/model.f32" >"$WORK/server.tsv" 2>"$WORK/server.log" &
SERVER_PID=$!
CHILDREN+=("$SERVER_PID")
await_endpoint
start_worker w1
wait_for "$SERVER_PID" 60
expect_exit 0 "$RC" "dmlps-server resuming a momentum of 3e38"
wait_for "$WORKER_PID" 30
grep -q "refused: it would make the model non-finite" "$WORK/server.log" ||
  fail "no update was refused"
"$PY" - "$WORK/model.f32" <<'PY' || fail "the saved model is not finite"
import math, struct, sys
data = open(sys.argv[1], "rb").read()
values = struct.unpack("<%df" % (len(data) // 4), data)
sys.exit(0 if values and all(math.isfinite(v) for v in values) else 1)
PY
echo "ok: hostile counters refused; a momentum of 3e38 left the model finite"
