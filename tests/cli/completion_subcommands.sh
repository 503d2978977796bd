# The bash completion, driven as bash drives it (COMP_WORDS, COMP_CWORD,
# COMP_LINE and the function that `complete -p` names): after a subcommand
# it offers that subcommand's options and the common ones, and never an
# option twice.
. "$(dirname "$0")/lib.sh"
command -v bash >/dev/null || exit 77

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
# offers LINE WORD...: completing LINE offers every WORD.
offers() {
  local line=$1 got
  shift
  got=$(bash_offers "$line")
  for word in "$@"; do grep -qxF -- "$word" <<<"$got" || fail "'$line' does not offer $word"; done
}
# refuses LINE WORD...: completing LINE offers no WORD.
refuses() {
  local line=$1 got
  shift
  got=$(bash_offers "$line")
  for word in "$@"; do grep -qxF -- "$word" <<<"$got" && fail "'$line' offers $word"; done
  return 0
}

# No option offered twice, before a subcommand or after one.
for line in "dmlps-server -" "dmlps-worker -" "dmlps-predict -" "dmlps-keygen -" \
  "dmlps-trace -" "dmlps-bench -" "dmlps-bench run -" "dmlps-bench sim -" \
  "dmlps-bench transport -" "dmlps-bench profile -" "dmlps-bench codec -" \
  "dmlps-trace summary -"; do
  twice=$(bash_offers "$line" | sort | uniq -d)
  [ -z "$twice" ] || fail "'$line' offers twice: $twice"
done

offers "dmlps-trace summary --" --format --help --log-level
refuses "dmlps-trace summary --" --kind --term --window
offers "dmlps-trace plot --" --kind --term --window --help
refuses "dmlps-trace plot --" --format
offers "dmlps-trace merge --" --help --version
refuses "dmlps-trace merge --" --format --kind
# An option and its value before the subcommand do not hide it.
offers "dmlps-trace --format tsv summary --" --format
refuses "dmlps-trace --format tsv summary --" --kind
# Before a subcommand: every option, and the subcommands.
offers "dmlps-trace --" --format --kind --help
offers "dmlps-trace " summary plot merge
offers "dmlps-bench " run sim transport profile codec

offers "dmlps-bench transport --" --transports --sizes --curve --format --help
refuses "dmlps-bench transport --" --workers --link-gbps --bin --device
offers "dmlps-bench run --bin /tmp --" --workers --out --trace-dir --format
refuses "dmlps-bench run --bin /tmp --" --link-gbps --transports --device
offers "dmlps-bench sim --" --workers --link-gbps --compute-cost --format
refuses "dmlps-bench sim --" --bin --out --sizes
# profile borrows a few options from the other groups.
offers "dmlps-bench profile --" --device --factor --reps --batch --model --data --threads --warmup
refuses "dmlps-bench profile --" --workers --sizes --out
# codec borrows --sizes and --repeat; its lists complete entry by entry.
offers "dmlps-bench codec --" --codecs --kernels --sizes --repeat --format
refuses "dmlps-bench codec --" --transports --workers --device --rounds
offers "dmlps-bench codec --codecs fp16,in" fp16,int8
offers "dmlps-bench codec --kernels sc" scalar
# sim and run take the codecs of their pushes and pulls, or a list to compare.
offers "dmlps-bench sim --" --push-codec --pull-codec --codecs
offers "dmlps-bench run --bin /tmp --" --push-codec --pull-codec --codecs
refuses "dmlps-bench codec --" --push-codec --pull-codec
offers "dmlps-bench sim --push-codec in" int8
offers "dmlps-bench run --pull-codec to" topk:0.01 topk:0.1
# Values still complete after a subcommand (the policies from the
# dmlps-bench on the path: completion_policies.sh checks them in full).
PATH=$BIN:$PATH offers "dmlps-bench run --policies " bsp asp
offers "dmlps-trace plot --kind " tta gantt

if ((failures > 0)); then
  echo "completion_subcommands: $failures problem(s)" >&2
  exit 1
fi
echo "ok: each subcommand completes its own options, none twice"
