#!/usr/bin/env bash
# The thread-safety annotations of base/mutex.h are checked: clang with
# -Wthread-safety (as every clang build of dmlps compiles) rejects a member
# marked GUARDED_BY touched without its mutex, a REQUIRES function called
# without it and a lock never released, and accepts the same code written
# correctly. Skipped (exit 77) where clang++ is missing.
set -euo pipefail

src=${DMLPS_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
command -v clang++ >/dev/null || { echo "SKIP: no clang++"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dmlps-tsa.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# check NAME EXPECT BODY: compiles a class using Mutex with BODY as its
# methods; EXPECT is "pass" or the warning text that must stop it.
check() {
  local name=$1 expect=$2 body=$3
  cat >"$tmp/$name.cc" <<CC
#include "dmlps/base/mutex.h"
class Counter {
 public:
$body
 private:
  dmlps::Mutex mutex_;
  dmlps::CondVar changed_;
  int value_ GUARDED_BY(mutex_) = 0;
  void BumpLocked() REQUIRES(mutex_) { ++value_; }
};
CC
  if clang++ -std=c++20 -fsyntax-only -Wthread-safety -Werror -I"$src/libcore/include" \
      "$tmp/$name.cc" 2>"$tmp/$name.err"; then
    [ "$expect" = pass ] || { cat "$tmp/$name.err"; echo "FAIL: $name compiled, expected: $expect" >&2; exit 1; }
  else
    if [ "$expect" = pass ] || ! grep -q "$expect" "$tmp/$name.err"; then
      cat "$tmp/$name.err" >&2
      echo "FAIL: $name: expected ${expect}" >&2
      exit 1
    fi
  fi
  echo "ok: $name ($expect)"
}

check guarded pass '
  void Bump() { dmlps::MutexLock lock(&mutex_); BumpLocked(); changed_.SignalAll(); }
  int WaitPositive() {
    dmlps::MutexLock lock(&mutex_);
    while (value_ <= 0) changed_.Wait(&mutex_);
    return value_;
  }'
check unguarded_write "requires holding mutex" '
  void Bump() { ++value_; }'
check unguarded_call "requires holding mutex" '
  void Bump() { BumpLocked(); }'
check never_released "still held at the end of function" '
  void Bump() { mutex_.Lock(); ++value_; }'
check wait_unlocked "requires holding mutex" '
  void Await() { changed_.Wait(&mutex_); }'
echo "thread_safety: 5 cases as expected"
