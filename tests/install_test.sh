#!/bin/sh
# install_test.sh BINARY_DIR — hk as a program outside the tree sees it:
# `cmake --install` into a temporary prefix, then a tiny external C program
# is built with pkg-config (shared and static) and with find_package(hk)
# (hk::hk and hk::hk_static), and each is run. The installed hk command
# must work too.
set -eu
BIN=$(cd "$1" && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
P="$T/prefix"
# Build the outside program as hk was built: the same compiler, and the same
# sanitizers (an instrumented libhk needs an instrumented program).
CC=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$BIN/CMakeCache.txt")
SAN=$(sed -n 's/^HK_SANITIZE:[A-Z]*=//p' "$BIN/CMakeCache.txt")
CFLAGS="-std=c11 -Wall -Wextra -Werror"
[ -z "$SAN" ] || CFLAGS="$CFLAGS -fsanitize=$SAN"
cmake --install "$BIN" --prefix "$P" >"$T/install.log"

for f in include/hk.h include/hk_stdlib.h bin/hk; do
  [ -e "$P/$f" ] || { echo "FAIL: $f not installed"; exit 1; }
done
LIBDIR=$(dirname "$(find "$P" -name 'libhk.so' | head -1)")
[ -n "$LIBDIR" ] && [ -e "$LIBDIR/libhk.a" ] || { echo "FAIL: libraries not installed"; exit 1; }
"$P/bin/hk" run arange_f32 start=1 step=1 --n 4 --out "out=$T/x.npy"
[ "$("$P/bin/hk" run sum_f32 "x=$T/x.npy")" = '{"out": [10]}' ] ||
  { echo "FAIL: the installed hk command"; exit 1; }

cat >"$T/app.c" <<'C'
#include <hk.h>
#include <stdio.h>

int main(void) {
  float x[1000], y[1000], out[1000], s;
  for (int i = 0; i < 1000; i++) {
    x[i] = (float)i;
    y[i] = 2.0f * (float)i;
  }
  hk_add_f32(x, y, out, 1000);
  hk_sum_f32(out, &s, 1000);
  if (s != 1498500.0f || hk_strerror(HK_EINVAL)[0] == '\0') {
    printf("wrong: %g\n", s);
    return 1;
  }
  printf("ok %s\n", hk_dtype_name(HK_F32));
  return 0;
}
C

export PKG_CONFIG_PATH="$LIBDIR/pkgconfig"
# shellcheck disable=SC2046
$CC $CFLAGS "$T/app.c" -o "$T/app_pc" $(pkg-config --cflags --libs hk)
LD_LIBRARY_PATH="$LIBDIR" "$T/app_pc" | grep -q "^ok f32" || { echo "FAIL: pkg-config (shared)"; exit 1; }
# shellcheck disable=SC2046
$CC $CFLAGS -DHK_STATIC_DEFINE "$T/app.c" -o "$T/app_pcs" \
  $(pkg-config --cflags hk) "$LIBDIR/libhk.a" $(pkg-config --static --libs-only-l hk | sed 's/-lhk//')
"$T/app_pcs" | grep -q "^ok f32" || { echo "FAIL: pkg-config (static)"; exit 1; }
echo "pkg-config: shared and static builds run"

mkdir "$T/proj"
cp "$T/app.c" "$T/proj/"
cat >"$T/proj/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.16)
project(app C)
find_package(hk 0.1 REQUIRED)
add_executable(app_shared app.c)
target_link_libraries(app_shared PRIVATE hk::hk)
add_executable(app_static app.c)
target_link_libraries(app_static PRIVATE hk::hk_static)
CM
cmake -S "$T/proj" -B "$T/proj/build" -DCMAKE_PREFIX_PATH="$P" \
  -DCMAKE_C_COMPILER="$CC" -DCMAKE_C_FLAGS="${SAN:+-fsanitize=$SAN}" >"$T/cmake.log" 2>&1 ||
  { cat "$T/cmake.log"; echo "FAIL: find_package(hk)"; exit 1; }
cmake --build "$T/proj/build" >"$T/build.log" 2>&1 ||
  { cat "$T/build.log"; echo "FAIL: building against hk::hk"; exit 1; }
"$T/proj/build/app_shared" | grep -q "^ok f32" || { echo "FAIL: hk::hk"; exit 1; }
"$T/proj/build/app_static" | grep -q "^ok f32" || { echo "FAIL: hk::hk_static"; exit 1; }
echo "find_package(hk): hk::hk and hk::hk_static build and run"
