# dmlps-bench and dmlps-trace: a subcommand's --help shows its own flags,
# the program's --help all of them, and an unknown flag gets one line with
# the known flag it most resembles. (Apart from cli.bad_input, which the
# sanitizer builds run without these two programs.)
. "$(dirname "$0")/lib.sh"

run_tool 64 dmlps-bench run --wrkers=3
grep -q "^dmlps-bench: error: unknown option '--wrkers'; did you mean --workers?$" "$WORK/err" ||
  fail "no guess for --wrkers: $(cat "$WORK/err")"
run_tool 64 dmlps-trace summary --frobnicate
grep -q "^dmlps-trace: error: unknown option '--frobnicate'$" "$WORK/err" || fail "a guess for --frobnicate"
# A subcommand's --help shows that subcommand's flags only, as git's does.
run_tool 0 dmlps-bench run --help
grep -q '^dmlps-bench run: ' "$WORK/out" || fail "dmlps-bench run --help does not name run"
grep -q -- '--trace-dir' "$WORK/out" || fail "dmlps-bench run --help lacks --trace-dir"
! grep -q -- '--link-gbps\|--sizes' "$WORK/out" || fail "dmlps-bench run --help shows other subcommands' flags"
run_tool 0 dmlps-bench profile --help
grep -q -- '--reps' "$WORK/out" && grep -q -- '--batch' "$WORK/out" || fail "dmlps-bench profile --help lacks its flags"
! grep -q -- '--policies' "$WORK/out" || fail "dmlps-bench profile --help shows --policies"
run_tool 0 dmlps-trace plot --help
grep -q -- '--kind' "$WORK/out" || fail "dmlps-trace plot --help lacks --kind"
! grep -q -- '--format' "$WORK/out" || fail "dmlps-trace plot --help shows summary's --format"
run_tool 0 dmlps-bench --help
grep -q -- '--link-gbps' "$WORK/out" && grep -q -- '--trace-dir' "$WORK/out" || fail "dmlps-bench --help is not whole"
echo "ok: subcommand help and unknown flags"
