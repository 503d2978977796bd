# A hostile Slurm node list in the environment of every binary: 12,000
# groups of a million numbers in one name (120 KB, a million million
# names), a name of 120,000 characters a million times, a range of a
# billion. --help and --version still print and exit 0; a normal start of
# dmlps-server, dmlps-worker and dmlps-launch refuses in one line naming the
# variable and exits 64 (a usage error), never aborting on bad_alloc. Each
# runs with its address space capped at 4 GiB, so that expanding such a
# list fails at once rather than exhausting the machine.
. "$(dirname "$0")/lib.sh"
src=${DMLPS_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
launch=$src/share/dmlps/launch/dmlps-launch

groups=$(/usr/bin/python3 -c 'print("n" + "[0-999999]" * 12000)')
long=$(/usr/bin/python3 -c 'print("a" * 120000 + "[0-999999]")')
lists=("$groups" "$long" "node[0-999999999]")

# run_with LIST OUT ERR CMD...: CMD as Slurm's rank 0 of 2 on node list
# LIST, its address space capped; sets RC.
run_with() {
  local list=$1 out=$2 err=$3
  shift 3
  RC=0
  (ulimit -v 4194304 && exec env -i PATH="$PATH" SLURM_PROCID=0 SLURM_NTASKS=2 \
    SLURM_JOB_NODELIST="$list" timeout -k 5 60 "$@") >"$out" 2>"$err" || RC=$?
}

programs=()
for program in dmlps-server dmlps-worker dmlps-bench dmlps-predict dmlps-trace dmlps-keygen; do
  [ -x "$BIN/$program" ] && programs+=("$program")
done
for list in "${lists[@]}"; do
  what="a node list of ${#list} bytes (${list:0:20}...)"
  for program in "${programs[@]}"; do
    for flag in --help --version; do
      run_with "$list" "$WORK/out" "$WORK/err" "$BIN/$program" "$flag"
      expect_exit 0 "$RC" "$program $flag under $what"
      [ -s "$WORK/out" ] || fail "$program $flag under $what printed nothing"
      [ ! -s "$WORK/err" ] || fail "$program $flag under $what: $(head -c 300 "$WORK/err")"
    done
  done
  for program in dmlps-server dmlps-worker; do
    run_with "$list" "$WORK/out" "$WORK/err" "$BIN/$program"
    expect_exit 64 "$RC" "$program under $what"
    if [ "$(wc -l <"$WORK/err")" -ne 2 ] || [ "$(wc -c <"$WORK/err")" -ge 400 ]; then
      fail "$program under $what: not one short error line (and 'Try'): $(head -c 600 "$WORK/err")"
    fi
    grep -q "^$program: error: SLURM_JOB_NODELIST: host list '" "$WORK/err" ||
      fail "$program under $what: $(head -c 300 "$WORK/err")"
  done
  # dmlps-launch starts dmlps-server as rank 0, which refuses so.
  run_with "$list" "$WORK/out" "$WORK/err" "$launch" --bin "$BIN"
  expect_exit 64 "$RC" "dmlps-launch under $what"
  grep -q "^dmlps-server: error: SLURM_JOB_NODELIST: host list '" "$WORK/err" ||
    fail "dmlps-launch under $what: $(head -c 300 "$WORK/err")"
done
echo "hostile node lists: --help and --version exit 0 from ${#programs[@]} binaries," \
  "a start exits 64 in one line: $(head -n 1 "$WORK/err")"
