#!/bin/sh
# soak.sh [RELOADS [ROUNDS]] — the long runs the suite keeps short:
#  - eight threads calling kernels while another rewrites and reloads their
#    file RELOADS times (default 1,000), on tier jit and on tier auto (the
#    opt worker and the disk cache), under ThreadSanitizer (build-tsan, as
#    tools/test.sh configures it). Every result is checked against the old
#    or the new code.
#  - two, then eight processes compiling the same kernel file into one empty
#    cache at once, ROUNDS times each (default 20; test_opt's cache race,
#    the suite runs one round), in the gcc build (build-test).
set -eu
cd "$(dirname "$0")/.."
n=${1:-1000}
rounds=${2:-20}
dir=build-tsan
cmake -S . -B "$dir" -DHK_WERROR=ON -DCMAKE_C_COMPILER=clang \
  -DCMAKE_BUILD_TYPE=Debug -DHK_SANITIZE=thread -DHK_CUDA=OFF \
  >"$dir.configure.log" 2>&1 || { cat "$dir.configure.log"; exit 1; }
cmake --build "$dir" -j "$(nproc 2>/dev/null || echo 2)" --target test_registry \
  >"$dir.build.log" 2>&1 || { tail -30 "$dir.build.log"; exit 1; }
echo "==== $n reloads under load, ThreadSanitizer"
HK_SOAK_RELOADS=$n "$dir/tests/test_registry"

dir=build-test
mkdir -p "$dir"
cmake -S . -B "$dir" -DHK_WERROR=ON >"$dir/configure.log" 2>&1 ||
  { cat "$dir/configure.log"; exit 1; }
cmake --build "$dir" -j "$(nproc 2>/dev/null || echo 2)" --target test_opt \
  >"$dir/build.log" 2>&1 || { tail -30 "$dir/build.log"; exit 1; }
echo "==== $rounds rounds of 2 and 8 processes racing into one empty cache"
HK_RACE_ROUNDS=$rounds "$dir/tests/test_opt"
