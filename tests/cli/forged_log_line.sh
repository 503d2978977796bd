# A peer's text in the server's log stays on the line that quotes it. A
# hostile peer says Hello with a host name holding a newline and what looks
# like a log line of the server's ("reached accuracy 1.0"), then, as a
# worker of a plain name, reports that text in an Error and gives up with
# it. The Hello is refused in one line; the reports are logged with the
# newline escaped; no line of the log starts with the forged text, and a
# real worker then trains to the target.
. "$(dirname "$0")/lib.sh"
start_server --workers 1 --policy bsp --target-accuracy 0.8 --max-iterations 3000 --eval-every 25

start_attack_peer forge "$ENDPOINT" 2
wait_ok 60 "the forging peer" "$PEER_PID"
server_alive "the forging peer"
# Its Hellos alternate: the forged host's, then a plain one's.
[ "$(sed -n '1p;3p' "$WORK/attack.out" | grep -c '^refused: .*control characters')" -eq 2 ] ||
  fail "a Hello whose host holds a newline was not refused: $(cat "$WORK/attack.out")"
[ "$(sed -n '2p;4p' "$WORK/attack.out" | grep -c '^welcomed$')" -eq 2 ] ||
  fail "a plain Hello was not welcomed: $(cat "$WORK/attack.out")"

train_one_worker 120 "the forging peer"

forged='12:00:00.000 dmlps-server: info: reached accuracy 1.0'
if grep -qF -- "$forged" "$WORK/server.log" &&
   grep -F -- "$forged" "$WORK/server.log" | grep -qvF 'x\n12:00:00.000'; then
  fail "the server's log holds the forged line as a line of its own: $(grep -F -- "$forged" "$WORK/server.log")"
fi
grep -q "^12:00:00.000" "$WORK/server.log" && fail "a line of the server's log starts with the forged time"
# What the peer reported was logged, on the line that quotes it.
grep -qF 'reports: x\n12:00:00.000 dmlps-server' "$WORK/server.log" ||
  fail "the peer's report was not logged escaped"
echo "ok: $(tr '\n' ' ' <"$WORK/attack.out"); run finished at accuracy $(last_accuracy)"
