#!/bin/sh
# rows_emulate.sh HK SOURCE_DIR BINARY_DIR — the block-per-row CUDA of the
# rows kernels with a "cuda" body gives their bodies' bits, the axis
# reductions' warp-per-row CUDA its tree's, and the stdlib's strided
# copies the views' elements, checked on the host: `hk gen --target cuda`
# of each such kernel file (hk-gen's stdlib CUDA for the copies), compiled
# as host C++ into rows_emulate.cc (which says how it stands in for the
# GPU).
# Needs a C++ compiler (c++, g++ or clang++); prints SKIPPED (exit 77)
# without one.
set -eu
HK=$1
SRC=$2
BIN=$3
cxx=
for c in c++ g++ clang++; do
  if command -v $c >/dev/null 2>&1; then cxx=$c; break; fi
done
[ -n "$cxx" ] || { echo "SKIPPED: no C++ compiler"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# [--stdlib] FILE, then the -D of its kernels' bases by signature
# (rows_emulate.cc); --stdlib: the CUDA as the build makes the stdlib's
# (hk-gen), which also holds the strided copies
check() {
  stdlib=0
  if [ "$1" = --stdlib ]; then stdlib=1; shift; fi
  f=$1
  shift
  base=$(basename "$(dirname "$f")")_$(basename "$f" .json)
  if [ "$stdlib" -eq 1 ]; then
    "$BIN/hk-gen" --c "$tmp/$base.c" --header "$tmp/$base.h" \
      --cuda "$tmp/$base.cu" "$SRC/$f" ||
      { echo "FAIL: hk-gen --cuda $f"; fail=1; return; }
  else
    "$HK" gen "$SRC/$f" --target cuda -o "$tmp/$base.cu" ||
      { echo "FAIL: hk gen --target cuda $f"; fail=1; return; }
  fi
  if ! "$cxx" -std=c++17 -O0 -ffp-contract=off -fno-math-errno \
      -I"$SRC/common" -I"$SRC/include" -I"$BIN/generated/include" \
      -DEMU_CU="\"$tmp/$base.cu\"" "$@" "$SRC/tests/rows_emulate.cc" \
      -o "$tmp/$base" 2>"$tmp/$base.log"; then
    echo "FAIL: $f: the emulation does not compile:"
    cat "$tmp/$base.log"
    fail=1
    return
  fi
  printf '%s: ' "$f"
  "$tmp/$base" || { echo "FAIL: $f: the block per row differs"; fail=1; }
}

check stdlib_kernels/softmax.json '-DEMU_XY(X)=X(softmax) X(log_softmax)'
check stdlib_kernels/layernorm.json '-DEMU_LN(X)=X(layernorm)'
check plugins/layernorm.json '-DEMU_LN(X)=X(layernorm_rows)'
check stdlib_kernels/reductions.json -DEMU_WROW
check --stdlib stdlib_kernels/fill.json -DEMU_COPY
exit $fail
