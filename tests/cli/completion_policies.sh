# The completions offer the policies the programs list (--list-policies),
# never a list of their own, and the built man pages show every one: what
# dmlps-server and dmlps-bench print is the registry's, and completing
# --policy, --policies and --candidates offers exactly that (the server's
# --candidates only what auto can switch into), with bash, and with fish
# and zsh where they are installed.
. "$(dirname "$0")/lib.sh"
bin=$BIN
src=${DMLPS_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
tmp=$WORK

failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# The lists: four tab-separated fields a line, none empty, nothing on stderr.
for program in dmlps-server dmlps-bench; do
  "$bin/$program" --list-policies >"$tmp/$program" 2>"$tmp/err" || fail "$program --list-policies failed"
  [[ ! -s $tmp/err ]] || fail "$program --list-policies wrote to stderr: $(cat "$tmp/err")"
  awk -F '\t' 'NF != 4 || $1 == "" || $2 == "" || $3 == "" || $4 == "" { exit 1 }' "$tmp/$program" ||
    fail "$program --list-policies: a line without four fields"
  [[ $(wc -l <"$tmp/$program") -ge 10 ]] || fail "$program --list-policies lists only $(wc -l <"$tmp/$program")"
done
# Other flags are not read, even bad ones.
"$bin/dmlps-server" --list-policies --workers 0 | cmp -s - "$tmp/dmlps-server" ||
  fail "dmlps-server --list-policies read --workers"
"$bin/dmlps-bench" sim --list-policies | cmp -s - "$tmp/dmlps-bench" ||
  fail "dmlps-bench sim --list-policies differs from dmlps-bench --list-policies"
grep -q $'^ssp\t\\[--staleness S\\] \\[--momentum-every N\\]\tswitchable\t' "$tmp/dmlps-server" ||
  fail "dmlps-server --list-policies: ssp's line is $(grep '^ssp' "$tmp/dmlps-server")"
grep -q $'^lbbsp-gpu\t-\tswitchable\t' "$tmp/dmlps-bench" || fail "dmlps-bench lists no lbbsp-gpu"
grep -q $'^lbbsp-gpu\t' "$tmp/dmlps-server" && fail "dmlps-server lists the entry lbbsp-gpu"
cut -f1 "$tmp/dmlps-server" >"$tmp/policies"
cut -f1 "$tmp/dmlps-bench" >"$tmp/entries"
awk -F '\t' '$3 == "switchable" { print $1 }' "$tmp/dmlps-bench" >"$tmp/switchable"
grep -qx wbsp "$tmp/switchable" && fail "wbsp is listed switchable"

# complete_bash LINE: what the bash completion offers at the end of LINE,
# sorted.
complete_bash() { bash_offers "$1" | sort; }
# offers SHELL LINE FILE: completing LINE with SHELL offers the words of FILE.
offers() {
  if ! diff <("complete_$1" "$2") <(sort "$3") >"$tmp/diff"; then
    fail "$1: '$2' offers other than $(basename "$3"): $(tr '\n' ' ' <"$tmp/diff")"
  fi
}

offers bash "$bin/dmlps-server --policy " "$tmp/policies"
offers bash "$bin/dmlps-server --policy=" "$tmp/policies"
offers bash "$bin/dmlps-bench run --policies " "$tmp/entries"
sed 's/^/bsp,/' "$tmp/entries" >"$tmp/after-bsp"
offers bash "$bin/dmlps-bench sim --policies bsp," "$tmp/after-bsp"
offers bash "$bin/dmlps-bench advise --candidates " "$tmp/entries"
offers bash "$bin/dmlps-server --candidates " "$tmp/switchable"
offers bash "$bin/dmlps-launch --policy " "$tmp/policies"
# Only names that start as typed.
grep '^async' "$tmp/policies" >"$tmp/async"
offers bash "$bin/dmlps-server --policy async" "$tmp/async"

if command -v fish >/dev/null; then
  # fish_offers LINE: what fish offers at the end of LINE, the binaries
  # on the path.
  fish_offers() {
    fish --no-config -c "
      set PATH '$bin' \$PATH
      set fish_complete_path '$src/completions/fish' \$fish_complete_path
      complete -C '$1'"
  }
  # Without the option fish offers with a value after "=".
  complete_fish() { fish_offers "$1" | cut -f1 | sed 's/^--[a-z-]*=//' | sort; }
  offers fish "dmlps-server --policy " "$tmp/policies"
  offers fish "dmlps-bench run --policies " "$tmp/entries"
  offers fish "dmlps-bench run --policies bsp," "$tmp/after-bsp"
  offers fish "dmlps-bench advise --candidates=" "$tmp/entries"
  offers fish "dmlps-server --candidates " "$tmp/switchable"
  fish_offers "dmlps-server --policy " >"$tmp/fish"
  grep -q $'^ssp\t\\[--staleness S\\] \\[--momentum-every N\\]: stale synchronous$' "$tmp/fish" ||
    fail "fish: ssp is not described by its flags and what it does"
fi

if command -v zsh >/dev/null; then
  # zsh_offers COMMAND BINARY [switchable] [OPTION...]: what the zsh helper
  # hands _describe while COMMAND is completed, the completion system's two
  # functions it calls played by stubs.
  zsh_offers() {
    zsh -f -c '
      _call_program() { shift; eval "$@"; }
      _describe() { print -rl -- "${(@P)4}"; }
      eval "_dmlps_policies() {
        $(<"$1")
      }"
      words=("$2" --policy "")
      shift 2
      _dmlps_policies "$@"' _ "$src/completions/zsh/_dmlps_policies" "$@"
  }
  zsh_names() { zsh_offers "$@" | cut -d: -f1 | sort; }
  diff <(zsh_names "$bin/dmlps-server" dmlps-server) <(sort "$tmp/policies") >/dev/null ||
    fail "zsh: --policy offers other than the policies"
  diff <(zsh_names "$bin/dmlps-server" dmlps-bench switchable -S ,) <(sort "$tmp/switchable") \
    >/dev/null || fail "zsh: --candidates offers other than the switchable entries"
  zsh_offers "$bin/dmlps-bench" dmlps-bench >"$tmp/zsh"
  grep -qxF 'ssp:ssp[:S]: stale synchronous' "$tmp/zsh" ||
    fail "zsh: ssp is not described by its syntax and what it does"
fi

# The built man pages show every policy, from the list made as they were built.
man=$bin/../man
if [[ -f $man/dmlps-server.1 && -f $man/dmlps-bench.1 ]]; then
  while read -r name; do
    grep -qF "\\fB$name\\fR" "$man/dmlps-server.1" || fail "man dmlps-server(1) does not show $name"
  done <"$tmp/policies"
  while read -r name; do
    grep -qF "\\fB$name\\fR" "$man/dmlps-bench.1" || fail "man dmlps-bench(1) does not show $name"
  done <"$tmp/entries"
  grep -qF '@policy-list@' "$man/dmlps-server.1" "$man/dmlps-bench.1" &&
    fail "a built man page still holds its marker"
fi

if ((failures > 0)); then
  echo "completion_policies: $failures problem(s)" >&2
  exit 1
fi
echo "ok: the completions and man pages list the policies the programs list"
