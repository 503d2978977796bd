# The option checks the scripts in this folder share. A script sets NAME and
# defines usage() before sourcing this file; each check prints one line,
# "NAME: error: ...", on stderr.

# need_value OPTION LEFT: exits 64 when OPTION, with LEFT arguments from it
# on, has no value after it.
need_value() {
  if [ "$2" -lt 2 ]; then
    echo "$NAME: error: $1 needs a value" >&2
    exit 64
  fi
}

# unknown_option OPTION: exits 64, with the usage on stderr.
unknown_option() {
  echo "$NAME: error: unknown option '$1'" >&2
  usage >&2
  exit 64
}

# check_whole OPTION VALUE: returns 1, saying so, unless VALUE is a positive
# whole number.
check_whole() {
  [[ "$2" =~ ^[1-9][0-9]*$ ]] && return 0
  echo "$NAME: error: $1: '$2' is not a positive whole number" >&2
  return 1
}
