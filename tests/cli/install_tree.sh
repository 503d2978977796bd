# cmake --install puts what a newcomer needs where they look for it: every
# binary and dmlps-launch in bin/ (dmlps-launch with its version, starting the
# binaries beside it), the developer scripts (check-hardening.sh, fuzz.sh,
# regen-docs.sh) in share/dmlps, a man page and completions for each binary.
. "$(dirname "$0")/lib.sh"

build=$(cd "$BIN/.." && pwd)
[ -f "$build/cmake_install.cmake" ] || { echo "SKIP: $build is not a cmake build folder"; exit 77; }
prefix=$WORK/prefix
cmake --install "$build" --prefix "$prefix" >"$WORK/install.log" 2>&1 ||
  fail "cmake --install failed: $(tail -n 5 "$WORK/install.log")"
version=$("$BIN/dmlps-server" --version | sed -n 's/^dmlps-server //p')
for name in dmlps-server dmlps-worker dmlps-trace dmlps-bench dmlps-predict dmlps-keygen dmlps-launch; do
  [ -x "$prefix/bin/$name" ] || fail "bin/$name is not installed"
  [ "$("$prefix/bin/$name" --version)" = "$name $version" ] || fail "bin/$name --version: $("$prefix/bin/$name" --version)"
  [ -f "$prefix/share/bash-completion/completions/$name" ] || fail "no bash completion for $name"
  [ -f "$prefix/share/zsh/vendor-completions/_$name" ] || fail "no zsh completion for $name"
  [ -f "$prefix/share/fish/vendor_completions.d/$name.fish" ] || fail "no fish completion for $name"
  if command -v scdoc >/dev/null; then
    [ -f "$prefix/share/man/man1/$name.1" ] || fail "no man page for $name"
  fi
done
# The efficiency tables auto and advise read, where the binaries find them.
[ -f "$prefix/share/dmlps/efficiency.tsv" ] || fail "share/dmlps/efficiency.tsv is not installed"
for script in check-hardening.sh fuzz.sh regen-docs.sh setup-debian.sh launch/dmlps-launch; do
  [ -x "$prefix/share/dmlps/$script" ] || fail "share/dmlps/$script is not installed executable"
done
for script in check-hardening.sh fuzz.sh regen-docs.sh; do
  "$prefix/share/dmlps/$script" --help >"$WORK/help" 2>&1 || fail "share/dmlps/$script --help failed: $(cat "$WORK/help")"
done
# bin/dmlps-launch under a launcher's rank 1 becomes the bin/dmlps-worker
# beside it (which refuses --threads 0: it ran).
rc=0
env -u DMLPS_BIN OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=2 PATH=/usr/bin:/bin \
  "$prefix/bin/dmlps-launch" --worker-args --threads 0 >"$WORK/launch.out" 2>"$WORK/launch.err" || rc=$?
[ "$rc" -eq 64 ] && grep -q '^dmlps-worker: error: --threads' "$WORK/launch.err" ||
  fail "dmlps-launch did not start bin/dmlps-worker (exit $rc): $(cat "$WORK/launch.err")"
echo "ok: installed tree under $prefix is complete"
