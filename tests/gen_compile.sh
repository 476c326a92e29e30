#!/bin/sh
# gen_compile.sh HK SOURCE_DIR BINARY_DIR — the generated source compiles.
#
# For every kernel file of the stdlib, the example plugins and the schema
# examples: `hk gen` C must compile with gcc and clang under -Wall -Wextra
# -Werror (and -pedantic-errors), and with tcc, which is what the JIT uses.
# With a CUDA toolkit, `hk gen --target cuda` of the plugins and examples
# and the stdlib's generated CUDA (once, as hk_stdlib.cu; the build has
# compiled it when it made the fatbin with HK_WERROR) must compile with nvcc
# for sm_80 (device code). The stdlib's C, which the build compiles with
# -Werror, is checked here against -pedantic-errors only. Prints SKIPPED (exit 77)
# only for what this machine cannot check.
set -eu
HK=$1
SRC=$2
BIN=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

files=$(ls "$SRC"/stdlib_kernels/*.json "$SRC"/plugins/*.json \
          "$SRC"/schemas/examples/*.json 2>/dev/null | grep -v '/bad_' || true)
[ -n "$files" ] || { echo "no kernel files found under $SRC"; exit 1; }

# the compilers run as many files at once as there are cores (a failure
# is written to OUT.fail and printed after)
jobs=$(nproc 2>/dev/null || echo 2)
# The stdlib's C is compiled by the build itself, optimised, with -Werror
# (HK_WERROR, as tools/test.sh builds: gcc in one suite, clang in
# another): here its files are only checked against -pedantic-errors
# (-fsyntax-only: 18 s of compiler time -> 2 on a 2-core VM). Everything
# else, and the stdlib of a build without -Werror, compiles at -O2.
stdlib_mode=-O2
grep -q "HK_WERROR:BOOL=ON" "$BIN/CMakeCache.txt" 2>/dev/null &&
  stdlib_mode=-fsyntax-only
count=0
: >"$tmp/c.list"
for f in $files; do
  base=$(basename "$f" .json)
  dir=$(basename "$(dirname "$f")")
  out="$tmp/${dir}_$base.c"
  "$HK" gen "$f" -o "$out" || { echo "FAIL: hk gen $f"; fail=1; continue; }
  mode=-O2
  [ "$dir" = stdlib_kernels ] && mode=$stdlib_mode
  printf '%s %s %s\n' "$out" "$f" "$mode" >>"$tmp/c.list"
  count=$((count + 1))
done
xargs -P "$jobs" -L 1 sh -c '
  out=$0 f=$1 mode=$2
  for cc in gcc clang; do
    command -v $cc >/dev/null || continue
    if ! $cc -std=c11 -pedantic-errors -Wall -Wextra -Werror $mode -fPIC -c \
        "$out" -o "$out.$cc.o" 2>"$out.$cc.log"; then
      { echo "FAIL: $cc rejects the C generated from $f:"; cat "$out.$cc.log"; } \
        >>"$out.fail"
    fi
  done
  if command -v tcc >/dev/null; then
    if ! tcc -c "$out" -o "$out.tcc.o" 2>"$out.tcc.log" || [ -s "$out.tcc.log" ]; then
      { echo "FAIL: tcc rejects (or warns about) the C generated from $f:"
        cat "$out.tcc.log"; } >>"$out.fail"
    fi
  fi' <"$tmp/c.list"
for r in "$tmp"/*.c.fail; do
  [ -e "$r" ] || continue
  cat "$r"
  fail=1
done
echo "generated C of $count kernel files compiles with gcc, clang and tcc"

NVCC=${NVCC:-}
[ -n "$NVCC" ] || NVCC=$(command -v nvcc || true)
[ -n "$NVCC" ] || [ ! -x /usr/local/cuda/bin/nvcc ] || NVCC=/usr/local/cuda/bin/nvcc
if [ -z "$NVCC" ]; then
  [ "$fail" -eq 0 ] || exit 1
  echo "SKIPPED: no nvcc (CUDA toolkit) on this machine: CUDA source not compiled"
  exit 77
fi
# sm_80, the oldest architecture hk builds for (what an older GPU lacks
# fails there); NVRTC compiles the same sources for sm_80 and sm_90 in
# test_nvrtc, and the stdlib's fatbin is built for both
archs="-gencode arch=compute_80,code=sm_80"
# nvcc takes seconds a file: as many at once as there are cores. Device
# code only (-cubin): the generated CUDA holds kernels and device functions,
# nothing for the host compiler but the launch stubs nvcc writes itself,
# and its passes were half of nvcc's time (2.0 -> 0.9 s a file)
nvcc_one() { # OUT F: compiles OUT (from F), noting a failure in OUT.fail
  # shellcheck disable=SC2086
  if ! "$NVCC" -std=c++17 $archs -Werror all-warnings -cubin "$1" -o "$1.cubin" \
      >"$1.log" 2>&1; then
    { echo "FAIL: nvcc rejects the CUDA generated from $2:"; cat "$1.log"; } \
      >"$1.fail"
  fi
}
ncu=0
running=0
for f in $files; do
  base=$(basename "$f" .json)
  dir=$(basename "$(dirname "$f")")
  # the stdlib's kernels are all in hk_stdlib.cu, compiled once below
  [ "$dir" = stdlib_kernels ] && continue
  out="$tmp/${dir}_$base.cu"
  if ! "$HK" gen "$f" --target cuda -o "$out" 2>"$out.gen.log"; then
    grep -q "no kernel in this file targets cuda" "$out.gen.log" && continue
    echo "FAIL: hk gen --target cuda $f:"; cat "$out.gen.log"; fail=1; continue
  fi
  nvcc_one "$out" "$f" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait
    running=0
  fi
  ncu=$((ncu + 1))
done
wait
for r in "$tmp"/*.cu.fail; do
  [ -e "$r" ] || continue
  cat "$r"
  fail=1
done
# The stdlib's: the build compiled it already when it made the fatbin (with
# -Werror all-warnings under HK_WERROR); otherwise here.
if [ -f "$BIN/generated/hk_stdlib.fatbin" ] &&
   [ "$BIN/generated/hk_stdlib.fatbin" -nt "$BIN/generated/hk_stdlib.cu" ] &&
   grep -q "HK_WERROR:BOOL=ON" "$BIN/CMakeCache.txt" 2>/dev/null; then
  echo "the stdlib's generated CUDA was compiled by the build (nvcc -Werror)"
else
  # shellcheck disable=SC2086
  if ! "$NVCC" -std=c++17 $archs -Werror all-warnings -c "$BIN/generated/hk_stdlib.cu" \
      -o "$tmp/stdlib_cu.o" >"$tmp/stdlib_cu.log" 2>&1; then
    echo "FAIL: nvcc rejects the stdlib's generated CUDA:"; cat "$tmp/stdlib_cu.log"
    fail=1
  fi
fi
echo "generated CUDA of $ncu plugin and example kernel files and of the stdlib compiles with nvcc"
exit $fail
