# The installed library serves a program of its own: `cmake --install`
# into a temporary prefix, the installed C++ example (its own softmax
# regression through dmlps::worker::Computation) built against it with
# find_package(dmlps), and 2 of them trained against a real
# `dmlps-server --model softmax` to 0.78 test accuracy.
. "$(dirname "$0")/lib.sh"
command -v cmake >/dev/null && command -v c++ >/dev/null || {
  echo "skip: no cmake or C++ compiler"
  exit 77
}
BUILD=$(dirname "$BIN")
cmake --install "$BUILD" --component dev --prefix "$WORK/prefix" >"$WORK/install.log" 2>&1 ||
  fail "cmake --install --component dev failed"
[ -f "$WORK/prefix/lib/cmake/dmlps/dmlpsConfig.cmake" ] ||
  [ -n "$(find "$WORK/prefix" -name dmlpsConfig.cmake)" ] || fail "no dmlpsConfig.cmake installed"
example="$WORK/prefix/share/dmlps/examples/cpp-trainer"
[ -f "$example/main.cc" ] || fail "the example was not installed"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$example" -B "$WORK/example" -DCMAKE_PREFIX_PATH="$WORK/prefix" "${launcher[@]}" \
  >"$WORK/example-configure.log" 2>&1 || fail "configuring the example failed"
cmake --build "$WORK/example" -j2 >"$WORK/example-build.log" 2>&1 || fail "building the example failed"
start_server --workers 2 --model softmax --policy bsp --target-accuracy 0.78 \
  --max-iterations 1500 --eval-every 25
pids=()
for r in 0 1; do
  "$WORK/example/dmlps-cpp-trainer" "$ENDPOINT" 2>"$WORK/trainer-$r.log" >"$WORK/trainer-$r.out" &
  pids+=($!)
  CHILDREN+=($!)
done
wait_for "$SERVER_PID" 120
expect_exit 0 "$RC" "dmlps-server"
for pid in "${pids[@]}"; do
  wait_for "$pid" 30
  expect_exit 0 "$RC" "dmlps-cpp-trainer"
done
awk -v a="$(last_accuracy)" 'BEGIN { exit !(a >= 0.78) }' || fail "final accuracy $(last_accuracy)"
grep -q "reached accuracy" "$WORK/server.log" || fail "the server did not report the target"
echo "ok: accuracy $(last_accuracy); $(cat "$WORK/trainer-0.out")"
