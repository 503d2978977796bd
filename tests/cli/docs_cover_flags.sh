#!/usr/bin/env bash
# Every option a binary's --help lists is documented and completed: for each
# binary, every long option (and its short form) must have an entry in its
# man page, be offered by the bash completion and appear in the zsh and fish
# completions; the man page's option groups must be those of --help, in the
# same order. --help must exit 0 and write only to stdout; --version must
# print "NAME X.Y.Z".
#
# Environment: DMLPS_BIN, the folder holding the binaries; DMLPS_SOURCE_DIR,
# the source tree (default: two levels above this script).
#
# What counts as present:
#   man page  an option entry line: *--name* or *-n*, *--name*, then the
#             option's argument; groups as "## <Group> options" subsections
#   bash      a candidate the registered completion function offers after
#             "NAME -"
#   zsh       an _arguments spec: --name followed by = [ } ' , or +
#   fish      a complete line with -l name (and -s n)
set -euo pipefail

bin=${DMLPS_BIN:?DMLPS_BIN must name the folder holding the dmlps binaries}
src=${DMLPS_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
binaries=(dmlps-server dmlps-worker dmlps-trace dmlps-bench dmlps-predict dmlps-keygen dmlps-launch)
bash_file=$src/completions/bash/dmlps

tmp=$(mktemp -d "${TMPDIR:-/tmp}/dmlps-docs.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

failures=0
checked=0
fail() {
  echo "docs_cover_flags: $*" >&2
  failures=$((failures + 1))
}

# Prints, one a line, what the bash completion registered for $1 offers for
# the word $2 typed after it.
bash_candidates() {
  bash --norc --noprofile -c '
    source "$1" || exit 1
    spec=$(complete -p "$2" 2>/dev/null) || { echo "no completion registered for $2" >&2; exit 2; }
    [[ $spec =~ -F\ ([^ ]+) ]] || { echo "completion for $2 is not a function: $spec" >&2; exit 3; }
    COMP_LINE="$2 $3"
    COMP_POINT=${#COMP_LINE}
    COMP_WORDS=("$2" "$3")
    COMP_CWORD=1
    COMPREPLY=()
    "${BASH_REMATCH[1]}" "$2" "$3" "$2"
    if ((${#COMPREPLY[@]} > 0)); then printf "%s\n" "${COMPREPLY[@]}"; fi
  ' _ "$bash_file" "$1" "$2"
}

# Whether a "complete" line of fish file $1, or of the shared file it
# sources when it calls the shared function, names option $3 with -$2 (l
# for a long option, s for a short one) or its long spelling.
fish_completes() {
  local long_form=--long-option files=("$1")
  if [[ $2 == s ]]; then long_form=--short-option; fi
  if grep -q '^__dmlps_complete_common ' "$1"; then files+=("$(dirname "$1")/__dmlps_common.fish"); fi
  grep -Eqh "^[[:space:]]*complete[[:space:]].*[[:space:]](-$2|$long_form)[[:space:]]+'?$3'?([[:space:]]|\$)" "${files[@]}"
}

# Checks that option $2 of binary $1 (say --name, or -n) is documented and
# completed: its man page entry matches $4 (named $3 in the message), the
# bash completion offers it, the zsh completion matches $5, and a fish
# complete line names $7 as a -$6 option.
check_option() {
  local name=$1 option=$2 man_label=$3 man_re=$4 zsh_re=$5 fish_kind=$6 fish_name=$7
  if [[ -f $man ]] && ! grep -Eq "$man_re" "$man"; then
    fail "$name: $man_label is missing from man/$name.1.scd"
  fi
  if ! grep -qxF -- "$option" "$tmp/bash"; then
    fail "$name: $option is missing from the bash completion"
  fi
  if [[ -f $zsh_file ]] && ! grep -Eq "$zsh_re" "$zsh_file"; then
    fail "$name: $option is missing from completions/zsh/_$name"
  fi
  if [[ -f $fish_file ]] && ! fish_completes "$fish_file" "$fish_kind" "$fish_name"; then
    fail "$name: $option is missing from completions/fish/$name.fish"
  fi
}

# Syntax checks, with each shell that is installed.
if [[ -f $bash_file ]]; then
  bash -n "$bash_file" || fail "bash -n rejects $bash_file"
else
  fail "missing $bash_file"
fi
for name in "${binaries[@]}"; do
  if command -v zsh >/dev/null && [[ -f $src/completions/zsh/_$name ]]; then
    zsh -n "$src/completions/zsh/_$name" || fail "zsh -n rejects completions/zsh/_$name"
  fi
  if command -v fish >/dev/null && [[ -f $src/completions/fish/$name.fish ]]; then
    fish --no-execute "$src/completions/fish/$name.fish" ||
      fail "fish --no-execute rejects completions/fish/$name.fish"
  fi
done
if command -v fish >/dev/null; then
  fish --no-execute "$src/completions/fish/__dmlps_common.fish" ||
    fail "fish --no-execute rejects completions/fish/__dmlps_common.fish"
fi
if command -v scdoc >/dev/null; then
  for page in "$src"/man/*.scd; do
    scdoc <"$page" >"$tmp/page.roff" 2>"$tmp/scdoc.err" ||
      fail "scdoc rejects ${page#"$src"/}: $(cat "$tmp/scdoc.err")"
    # scdoc drops a lone backslash at the end of a line and leaves the space
    # before it: an example's continuation is lost in the rendered page, and
    # a pasted command loses its arguments. Continuations need \\ in the
    # source; in the roff, no example line may end in a space.
    awk -v page="${page#"$src"/}" '
      /^\.nf/ { example = 1; next }
      /^\.fi/ { example = 0; next }
      example && / $/ { print page ": example line ends without its continuation: " $0; bad = 1 }
      END { exit bad }' "$tmp/page.roff" >"$tmp/continuations" ||
      fail "$(cat "$tmp/continuations")"
  done
fi

for name in "${binaries[@]}"; do
  exe=$bin/$name
  man=$src/man/$name.1.scd
  zsh_file=$src/completions/zsh/_$name
  fish_file=$src/completions/fish/$name.fish
  if [[ ! -x $exe ]]; then
    fail "$exe is not an executable"
    continue
  fi

  # --help: exit 0, stdout only.
  rc=0
  "$exe" --help >"$tmp/help" 2>"$tmp/help.err" || rc=$?
  [[ $rc -eq 0 ]] || fail "$name --help exited with $rc"
  [[ -s $tmp/help ]] || fail "$name --help wrote nothing to stdout"
  [[ ! -s $tmp/help.err ]] || fail "$name --help wrote to stderr: $(head -n 3 "$tmp/help.err")"

  # --version: exit 0, one line "NAME X.Y.Z".
  rc=0
  "$exe" --version >"$tmp/version" 2>"$tmp/version.err" || rc=$?
  [[ $rc -eq 0 ]] || fail "$name --version exited with $rc"
  version=$(cat "$tmp/version")
  if [[ $(wc -l <"$tmp/version") -ne 1 ]] ||
     ! [[ $version =~ ^"$name "[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.]+)?$ ]]; then
    fail "$name --version printed '$version', expected '$name X.Y.Z'"
  fi

  # The options and groups --help lists.
  mapfile -t longs < <(sed -nE 's/^  (-[A-Za-z], |    )--([A-Za-z0-9][A-Za-z0-9-]*).*/\2/p' "$tmp/help")
  mapfile -t pairs < <(sed -nE 's/^  -([A-Za-z]), --([A-Za-z0-9][A-Za-z0-9-]*).*/\1 \2/p' "$tmp/help")
  mapfile -t groups < <(sed -nE 's/^ (.+) options:$/\1/p' "$tmp/help")
  if ((${#longs[@]} < 5)); then
    fail "$name --help lists only ${#longs[@]} long options; is its format still cxxopts'?"
    continue
  fi
  checked=$((checked + ${#longs[@]}))

  for file in "$man" "$zsh_file" "$fish_file"; do
    [[ -f $file ]] || fail "missing ${file#"$src"/}"
  done
  if ! bash_candidates "$name" - >"$tmp/bash" 2>"$tmp/bash.err"; then
    fail "the bash completion failed for $name: $(cat "$tmp/bash.err")"
  fi

  # The man page's option groups, in the order of --help.
  if [[ -f $man ]]; then
    mapfile -t man_groups < <(sed -nE 's/^## (.+) options$/\1/p' "$man")
    if [[ "${man_groups[*]}" != "${groups[*]}" ]]; then
      fail "$name: the option groups of man/$name.1.scd ($(IFS=,; echo "${man_groups[*]}")) differ from --help ($(IFS=,; echo "${groups[*]}"))"
    fi
  fi

  for flag in "${longs[@]}"; do
    check_option "$name" "--$flag" "--$flag" "^\*(-[A-Za-z]\*, \*)?--$flag\*" \
      "(^|[^A-Za-z0-9_-])--$flag(=|\[|\}|'|,|\+)" l "$flag"
  done
  for pair in "${pairs[@]}"; do
    short=${pair% *} long=${pair#* }
    check_option "$name" "-$short" "-$short (--$long)" "^\*-$short\*, \*--$long\*" \
      "(^|[^A-Za-z0-9_-])-$short(,|\}|\[|'|=|\+)" s "$short"
  done

  if [[ -f $zsh_file ]] && [[ $(head -n 1 "$zsh_file") != "#compdef $name" ]]; then
    fail "completions/zsh/_$name does not start with '#compdef $name'"
  fi
done

if ((failures > 0)); then
  echo "docs_cover_flags: $failures problem(s)" >&2
  exit 1
fi
echo "docs_cover_flags: ok, $checked options of ${#binaries[@]} binaries documented and completed"
