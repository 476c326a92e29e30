#!/usr/bin/env bash
# gpu_check.sh — the GPU check of hk's CUDA backend, in one command, on a
# machine with an NVIDIA GPU and the CUDA toolkit (/usr/local/cuda):
#
#   1. configures and builds hk in build-gpu (gcc, Release);
#   2. runs the GPU tests: ctest -R
#      "cuda|nvrtc|gen_compile|^python$|cli_numpy_check" (the Python
#      module's with CuPy or PyTorch where installed, and hk run
#      --backend cuda against NumPy);
#   3. runs build-gpu/hk-gpu-bench (launch overhead, bandwidth, pool, warm
#      load, and the targets), passing this script's arguments on to it:
#        tools/gpu_check.sh --json gpu.json      # also write the records
#        tools/gpu_check.sh --quick              # a shorter bench
#   4. prints a short summary table.
#
# Dependencies: tools/setup.sh installs the Debian packages, as for
# tools/test.sh. Where they cannot be installed (no network, no apt) but
# were copied under a prefix, set HK_DEPS_PREFIX to it instead:
#   HK_DEPS_PREFIX/include/libtcc.h, HK_DEPS_PREFIX/include/cjson/cJSON.h,
#   HK_DEPS_PREFIX/lib/libtcc.a, HK_DEPS_PREFIX/lib/libcjson.so*
# Then setup.sh is not run, CMake searches the prefix, and the compiler,
# linker and loader get its include and lib folders (CPATH, LIBRARY_PATH,
# LD_LIBRARY_PATH).
#
# Other settings: HK_GPU_BUILD_DIR (default build-gpu), HK_GPU_CMAKE_ARGS
# (more cmake arguments), HK_GPU_BENCH_ARCH (the architecture of the bench's
# cubin; default: the GPU's own, from nvidia-smi, else sm_90).
#
# Exits non-zero when the build, a test or the bench fails; missed
# performance targets are reported, not failures.
set -eu -o pipefail
cd "$(dirname "$0")/.."

BUILD=${HK_GPU_BUILD_DIR:-build-gpu}
JOBS=$(nproc 2>/dev/null || echo 2)
status=0

if [ -n "${HK_DEPS_PREFIX:-}" ]; then
  prefix=$(cd "$HK_DEPS_PREFIX" && pwd)
  for f in include/libtcc.h include/cjson/cJSON.h lib/libtcc.a; do
    if [ ! -e "$prefix/$f" ]; then
      echo "gpu_check: HK_DEPS_PREFIX=$prefix has no $f" >&2
      exit 1
    fi
  done
  export CPATH="$prefix/include${CPATH:+:$CPATH}"
  export LIBRARY_PATH="$prefix/lib${LIBRARY_PATH:+:$LIBRARY_PATH}"
  export LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  prefix_args=(-DCMAKE_PREFIX_PATH="$prefix")
  echo "==== dependencies from HK_DEPS_PREFIX=$prefix (tools/setup.sh not run)"
else
  prefix_args=()
  tools/setup.sh
fi

# The toolkit in its standard place, for CMake's detection and the tests.
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="$PATH:/usr/local/cuda/bin"
fi

# cli_numpy_check's NumPy: the first python3 that has it (on images whose
# NumPy lives in a venv, /usr/bin/python3 may lack it).
if [ -z "${HK_NUMPY_PYTHON:-}" ] && ! /usr/bin/python3 -c 'import numpy' \
  2>/dev/null && command -v python3 >/dev/null 2>&1 &&
  python3 -c 'import numpy' 2>/dev/null; then
  HK_NUMPY_PYTHON=$(command -v python3)
  export HK_NUMPY_PYTHON
fi

# The GPU, and the architecture of the bench's cubin.
gpu="none found (nvidia-smi missing or failing)"
arch=${HK_GPU_BENCH_ARCH:-}
if command -v nvidia-smi >/dev/null 2>&1 &&
  line=$(nvidia-smi --query-gpu=name,driver_version,compute_cap \
    --format=csv,noheader 2>/dev/null | head -1) && [ -n "$line" ]; then
  IFS=',' read -r gname gdriver gcap <<<"$line"
  gcap=$(echo "$gcap" | tr -d ' ')
  gpu="$gname (driver$gdriver, compute capability $gcap)"
  if [ -z "$arch" ] && [ -n "$gcap" ]; then
    arch="sm_${gcap/./}"
  fi
fi
arch=${arch:-sm_90}
echo "==== GPU: $gpu"

# ---- 1. configure and build -------------------------------------------------
summary_build="not run"
summary_tests="not run"
summary_bench="not run"
bench_out="$BUILD/gpu-bench.txt"

summary() {
  echo
  echo "==== GPU check summary"
  printf '  %-8s %s\n' "GPU" "$gpu"
  printf '  %-8s %s\n' "build" "$summary_build"
  printf '  %-8s %s\n' "tests" "$summary_tests"
  printf '  %-8s %s\n' "bench" "$summary_bench"
  if [ -s "$bench_out" ] && grep -q '^== targets' "$bench_out"; then
    sed -n '/^== targets/,/not measured$/p' "$bench_out" | sed '1d'
  fi
  if [ "$status" -eq 0 ]; then
    echo "==== GPU check passed"
  else
    echo "==== GPU check FAILED"
  fi
}

echo "==== configure and build ($BUILD, gcc, Release, bench cubin $arch)"
mkdir -p "$BUILD"
rm -f "$bench_out"
# shellcheck disable=SC2086
if ! cmake -S . -B "$BUILD" -DCMAKE_C_COMPILER=gcc -DCMAKE_BUILD_TYPE=Release \
  -DHK_GPU_BENCH_ARCH="$arch" ${prefix_args[@]+"${prefix_args[@]}"} \
  ${HK_GPU_CMAKE_ARGS:-} \
  >"$BUILD/configure.log" 2>&1; then
  tail -30 "$BUILD/configure.log"
  summary_build="configure FAILED ($BUILD/configure.log)"
  status=1
  summary
  exit 1
fi
if ! cmake --build "$BUILD" -j "$JOBS" >"$BUILD/build.log" 2>&1; then
  grep -E "error|warning" "$BUILD/build.log" | head -50 || true
  tail -20 "$BUILD/build.log"
  summary_build="FAILED ($BUILD/build.log)"
  status=1
  summary
  exit 1
fi
summary_build="ok ($BUILD)"
if grep -qi "cuda" "$BUILD/configure.log"; then
  grep -i "cuda" "$BUILD/configure.log" | sed 's/^/  /' | head -5
fi

# ---- 2. the GPU tests ---------------------------------------------------------
echo "==== tests: ctest -R \"cuda|nvrtc|gen_compile|^python$|cli_numpy_check\""
tests_log="$BUILD/gpu-tests.log"
if (cd "$BUILD" && ctest -R "cuda|nvrtc|gen_compile|^python$|cli_numpy_check" --output-on-failure \
  --no-tests=error -j "$JOBS") 2>&1 | tee "$tests_log"; then
  tests_ok=1
else
  tests_ok=0
  status=1
fi
total=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#' "$tests_log" || true)
passed=$(grep -E '^ *[0-9]+/[0-9]+ Test +#' "$tests_log" | grep -c ' Passed ' || true)
skipped=$(grep -E '^ *[0-9]+/[0-9]+ Test +#' "$tests_log" | grep -c 'Skipped' || true)
failed=$((total - passed - skipped))
summary_tests="$passed passed, $failed failed, $skipped skipped (of $total)"
[ "$tests_ok" -eq 1 ] || summary_tests="$summary_tests: FAILED ($tests_log)"
# Say why each skipped test was skipped.
last="$BUILD/Testing/Temporary/LastTest.log"
if [ "$skipped" -gt 0 ] && [ -f "$last" ]; then
  awk '/^[0-9]+\/[0-9]+ Test: /{t=$3} /^SKIPPED: /{print "  skipped " t ": " substr($0, 10)}' "$last"
fi

# ---- 3. the bench --------------------------------------------------------------
bench="$BUILD/hk-gpu-bench"
if [ ! -x "$bench" ]; then
  summary_bench="not built: was the CUDA toolkit found? ($BUILD/configure.log)"
  status=1
else
  echo "==== bench: $bench $*"
  set +e
  "$bench" "$@" 2>&1 | tee "$bench_out"
  brc=${PIPESTATUS[0]}
  set -e
  case $brc in
  0)
    if grep -q '^no CUDA device' "$bench_out"; then
      summary_bench="no GPU: $(grep -m1 '^no CUDA device' "$bench_out")"
      status=1
    else
      summary_bench="ok ($bench_out)"
    fi
    ;;
  1) summary_bench="bad arguments: $*"; status=1 ;;
  *) summary_bench="FAILED, exit $brc (a measurement failed; $bench_out)"; status=1 ;;
  esac
fi

summary
exit "$status"
