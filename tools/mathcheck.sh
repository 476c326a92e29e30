#!/bin/sh
# mathcheck.sh [JOBS] [N] — the full accuracy check of common/hkmath.h
# against long double (tools/mathcheck.c): every one of the 2^32 float
# inputs of each float function (sin and cos: |x| < 2^28), N random pairs
# for powf and pow, and N random doubles for each double function (default
# 10^8).
# Runs JOBS checks at a time (default: the cores). Long: on one core of a
# 2-core AVX2 EPYC VM, 4 min (rsqrt) to 32 min (sigmoid, sharing the
# machine) per float function, 2.8 hours for all ten, two at a time (run
# to the end on 2026-11-26: every one within 1.5 ulp; exp, tanh, sigmoid
# and log again on 2026-11-27 after their fused multiply-adds, the same;
# expp1, added then, 20 min: 1.171; sigmoid and exp after their new forms
# that evening: 1.441 and 1.014);
# the suite runs a sampled version (ctest math_ulp).
# Built for this CPU (MATHCHECK_MARCH, default -march=native; empty for
# the compiler's default): the results are the same bits either way, but
# without FMA instructions every fmaf in hkmath.h is a libm call.
# Exit status 1 when a bound (2 ulp float, 3 ulp double) is exceeded.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
jobs=${1:-$(nproc)}
n=${2:-100000000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
${CC:-cc} -O2 ${MATHCHECK_MARCH--march=native} -ffp-contract=off \
  -fno-math-errno -I"$here/common" \
  "$here/tools/mathcheck.c" -o "$tmp/mathcheck" -lm
fns="exp tanh sigmoid log expm1 log1p erf sin cos rsqrt expp1"
{
  for f in $fns; do echo "f32 $f 1"; done
  echo "f32 pow $n"
  echo "f64 pow $n"
  for f in $fns; do echo "f64 $f $n"; done
} | xargs -P "$jobs" -L 1 "$tmp/mathcheck" > "$tmp/out" 2>&1 && rc=0 || rc=1
sort "$tmp/out"
exit $rc
