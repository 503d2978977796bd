# Bad flags, missing and corrupt data, a taken address: one line per problem
# on stderr and the exit code sysexits.h gives for it.
. "$(dirname "$0")/lib.sh"

run_tool 64 dmlps-server --workers abc
grep -q "^dmlps-server: error: --workers: 'abc' is not an integer$" "$WORK/err" || fail "bad --workers message"
run_tool 64 dmlps-server --workers 0 --lr -1 --policy nope --batch 1x
[ "$(grep -c '^dmlps-server: error:' "$WORK/err")" -eq 4 ] || fail "not every problem reported: $(cat "$WORK/err")"
run_tool 64 dmlps-server --threads 0
grep -q "^dmlps-server: error: --threads: 0 is outside \[1, 256\]$" "$WORK/err" || fail "bad --threads message"
[ "$(grep -c 'error:' "$WORK/err")" -eq 1 ] || fail "more than one line for --threads 0"
run_tool 64 dmlps-server --threads 257
# An unknown flag: one line, with the known flag it most resembles.
run_tool 64 dmlps-server --polcy bsp
grep -q "^dmlps-server: error: unknown option '--polcy'; did you mean --policy?$" "$WORK/err" ||
  fail "no guess for --polcy: $(cat "$WORK/err")"
[ "$(grep -c 'error:' "$WORK/err")" -eq 1 ] || fail "more than one line for --polcy"
run_tool 64 dmlps-server --threads two
# taking FLAG: the policies that take --FLAG, as dmlps-server --list-policies
# lists them, "a, b or c".
taking() {
  "$BIN/dmlps-server" --list-policies | awk -F '\t' -v flag="[--$1" '
    index($2, flag " ") || index($2, flag "]") { names[++n] = $1 }
    END { for (i = 1; i <= n; i++) printf "%s%s", names[i], i == n ? "\n" : i == n - 1 ? " or " : ", " }'
}
[ "$(taking staleness)" = ssp ] || fail "the policies taking --staleness: $(taking staleness)"
run_tool 64 dmlps-server --staleness 2
grep -q "staleness applies only to --policy ssp" "$WORK/err" || fail "--staleness without ssp accepted"
run_tool 64 dmlps-server --momentum-every 4
grep -qF "momentum-every applies only to --policy $(taking momentum-every)" "$WORK/err" ||
  fail "--momentum-every with bsp: $(cat "$WORK/err")"
run_tool 64 dmlps-server --switch-at 0.5
grep -qF "switch-at applies only to --policy $(taking switch-at)" "$WORK/err" ||
  fail "--switch-at without sync-switch: $(cat "$WORK/err")"
run_tool 64 dmlps-server --policy sync-switch --switch-at 1.5 --max-iterations 10
grep -q "switch-at: 1.5 is outside" "$WORK/err" || fail "--switch-at 1.5: $(cat "$WORK/err")"
run_tool 64 dmlps-server --policy sync-switch --switch-at 0.5 --switch-online
grep -q "exclude each other" "$WORK/err" || fail "--switch-at with --switch-online accepted"
run_tool 64 dmlps-server --policy sync-switch
grep -q "give --target-accuracy or --max-iterations" "$WORK/err" || fail "sync-switch with no place to switch"
run_tool 64 dmlps-server --model mlp:12x
run_tool 64 dmlps-server --data csv:/tmp/x
run_tool 64 dmlps-server --log-level loud
run_tool 64 dmlps-server --no-such-flag
run_tool 64 dmlps-server stray-argument
run_tool 64 dmlps-worker --slowdown 0.5
run_tool 64 dmlps-worker --delay-prob 0.5
grep -q "delay-prob needs --delay-ms" "$WORK/err" || fail "no hint for --delay-ms"
run_tool 64 dmlps-worker --rank -2
run_tool 64 dmlps-worker --slowdown-schedule 0:1,150
grep -q "slowdown-schedule: entry 2" "$WORK/err" || fail "the bad schedule entry is not named"
run_tool 64 dmlps-worker --bandwidth-mbps -3
run_tool 64 dmlps-server --policy backup --backup 4 --workers 4
grep -q "backup" "$WORK/err" || fail "no reason for the backup count"
run_tool 64 dmlps-server --policy bsp --chunk 8
grep -q -- "--chunk applies only to --policy abps" "$WORK/err" || fail "--chunk without abps accepted"
run_tool 64 dmlps-server --policy abps --chunk 128 --batch 64
run_tool 64 dmlps-server --policy lbbsp --lb-mode tpu
run_tool 64 dmlps-server --policy lbbsp --predictor crystal-ball
run_tool 0 dmlps-server --help
grep -q -- "--target-accuracy" "$WORK/out" || fail "--help does not go to stdout"
[ ! -s "$WORK/err" ] || fail "--help wrote to stderr"
run_tool 0 dmlps-worker --version
grep -q "^dmlps-worker [0-9]" "$WORK/out" || fail "no version"

# Missing data: 66, before any network activity.
run_tool 66 dmlps-server --data "idx:$WORK/none" --bind 'tcp://127.0.0.1:*'
grep -q "$WORK/none" "$WORK/err" || fail "the missing path is not named"
run_tool 66 dmlps-worker --data "libsvm:$WORK/none.svm" --connect-timeout 1

# Corrupt data: 65.
mkdir -p "$WORK/corrupt"
for f in t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
  printf 'this is not an IDX file at all' >"$WORK/corrupt/$f"
done
run_tool 65 dmlps-server --data "idx:$WORK/corrupt" --bind 'tcp://127.0.0.1:*'
printf '1 1:0.5 2:0.25\n' >"$WORK/bad.svm"
printf '1 1:0.5 2:nan\n' >"$WORK/bad.svm.t"
run_tool 65 dmlps-server --data "libsvm:$WORK/bad.svm" --bind 'tcp://127.0.0.1:*' --model softmax
grep -q "bad.svm.t:1" "$WORK/err" || fail "the corrupt line is not named: $(cat "$WORK/err")"

# An address in use: 69.
start_server --workers 1
run_tool 69 dmlps-server --bind "$ENDPOINT"
grep -q "cannot bind $ENDPOINT" "$WORK/err" || fail "bind error unclear: $(cat "$WORK/err")"
for f in "$WORK"/err; do [ "$(wc -l <"$f")" -le 2 ] || fail "long error output"; done
echo "ok: bad input handled"
