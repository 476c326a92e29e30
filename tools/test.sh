#!/bin/sh
# test.sh — the whole test suite: the README's test command, and what CI runs.
#
# Installs what is missing (tools/setup.sh), then builds and runs every test
# twice: with gcc (Release), and with clang under AddressSanitizer and
# UndefinedBehaviorSanitizer (the stdlib's GPU code, compiled by nvcc when
# the CUDA toolkit is there, is built once, in the first); then the
# multithreaded tests (thread pool,
# registry with concurrent reloads) once more under ThreadSanitizer, and
# beside them the libFuzzer targets replay their seed corpora and fuzz
# briefly with a fixed seed (tools/fuzz.sh smoke; skipped without clang's
# libFuzzer). The
# Python module (python/) is built and tested in both suites: pytest (the
# ctest test "python", under ASan + UBSan in the second, about 5 s) and a
# pip install into a fresh venv (python_install, first suite only, about
# 15 s); `tools/test.sh` ends by listing them, or why they were skipped. Tests
# that cannot run on this machine (no GPU, no NumPy) are reported as
# skipped, with the reason. Exits non-zero when any build or test fails.
set -eu
cd "$(dirname "$0")/.."
tools/setup.sh

JOBS=$(nproc 2>/dev/null || echo 2)
status=0
exclude=""
targets=""
# Ninja where it is there (tools/setup.sh installs it): one graph of files,
# so a core compiles the tests while the other compiles the stdlib
# (Make waits for each target's dependencies whole: 25 s more per suite).
if command -v ninja >/dev/null 2>&1; then
  generator=Ninja
else
  generator="Unix Makefiles"
fi

# suite NAME DIR TESTS CMAKE-ARGS...: configure, build and run the tests
# matching the ctest regex TESTS ("" for all) in one build tree; $targets,
# when set, names the targets to build (all of them otherwise).
suite() {
  name=$1
  dir=$2
  tests=$3
  shift 3
  echo "==== $name ($dir)"
  # A tree configured for the other generator cannot be reused.
  if [ -f "$dir/CMakeCache.txt" ] &&
     ! grep -q "^CMAKE_GENERATOR:INTERNAL=$generator\$" "$dir/CMakeCache.txt"; then
    rm -rf "$dir"
  fi
  mkdir -p "$dir"
  # Warnings are errors here (HK_WERROR is off by default for users).
  if ! cmake -G "$generator" -S . -B "$dir" -DHK_WERROR=ON "$@" \
       >"$dir/configure.log" 2>&1; then
    cat "$dir/configure.log"
    echo "==== $name: configure FAILED"
    status=1
    return
  fi
  t0=$(date +%s)
  if ! cmake --build "$dir" -j "$JOBS" ${targets:+--target $targets} \
       >"$dir/build.log" 2>&1; then
    grep -E "error|warning" "$dir/build.log" | head -50 || true
    tail -20 "$dir/build.log"
    echo "==== $name: build FAILED (full log: $dir/build.log)"
    status=1
    return
  fi
  t1=$(date +%s)
  echo "  built in $((t1 - t0)) s"
  if ! (cd "$dir" && ctest --output-on-failure -j "$JOBS" ${tests:+-R "$tests"} \
        ${exclude:+-E "$exclude"}); then
    echo "==== $name: tests FAILED"
    status=1
  fi
  # Say why each skipped test was skipped.
  log="$dir/Testing/Temporary/LastTest.log"
  if [ -f "$log" ]; then
    awk '/^[0-9]+\/[0-9]+ Test: /{t=$3} /^SKIPPED: /{print "  skipped " t ": " substr($0, 10)}' "$log"
  fi
}

# The stdlib's GPU code as compute_80 PTX only: the suite runs no GPU
# (tools/gpu_check.sh builds for the GPU at hand; the default build has
# sm_80 and sm_90 code and the PTX). One architecture halved nvcc's time
# over the stdlib; HK_CUDA_SASS=OFF (no ptxas) takes 16 s of its 34. No
# GPU bench cubin either (a second nvcc compile of the whole stdlib, about
# 35 s; hk-gpu-bench itself is built). test_nvrtc compiles the kernels to
# machine code through NVRTC's back end.
suite "gcc, Release" build-test "" \
  -DCMAKE_C_COMPILER=gcc -DCMAKE_BUILD_TYPE=Release -DHK_CUDA_ARCHS=80 \
  -DHK_CUDA_SASS=OFF -DHK_BUILD_GPU_BENCH_CUBIN=OFF
# gen_compile checks the generated source with the compilers (gcc, clang,
# tcc, nvcc), test_nvrtc with NVRTC (most of its time is NVRTC's own),
# rows_emulate runs generated CUDA as host C++: the first suite runs them;
# nothing of them runs under sanitizers. Nor do the documents' examples
# (doc_examples: 33 s of a core under ASan, each example a program of its
# own that links libhk; the first suite compiles and runs them all).
exclude="^(gen_compile|test_nvrtc|rows_emulate|doc_examples)$"
# Tiers opt and so are objects gcc compiles at run time, uninstrumented
# (24 s of test_reduce's 42 here, compiling; 9 s of test_types'): the
# first suite checks their bits; the sanitized ones run tier jit and the
# stdlib (test_reduce, test_types, test_rows; below too).
HK_TEST_JIT_ONLY=1
export HK_TEST_JIT_ONLY
# and test_reduce's flat reductions reach 200,003 elements, not 2^20
# (threaded, several blocks: the same paths, a fifth of the time);
# test_stdlib's arrays stay under 2^20 (its parallel paths are forced
# below that: 26 s under ASan -> 4)
HK_TEST_SMALL=1
export HK_TEST_SMALL
# (Under sanitizers CMake compiles the stdlib -O1, not -O3: half the
# compile on the suite's critical path, the same test time.)
# The libFuzzer targets (tests/fuzz) are built in this tree too
# (HK_FUZZ_TARGETS: its library is not instrumented for coverage, so a
# tree of their own, 60 s of CPU, is spared; tools/fuzz.sh builds that one
# for long runs).
suite "clang, AddressSanitizer + UndefinedBehaviorSanitizer" build-asan "" \
  -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug \
  -DHK_SANITIZE=address,undefined -DHK_CUDA=OFF -DHK_FUZZ_TARGETS=ON
# They replay every seed, then fuzz each briefly with a fixed seed
# (deterministic; tools/fuzz.sh runs them long), beside the
# ThreadSanitizer suite (single-threaded, about 20 s); their output is
# printed after it.
rm -f build-asan/smoke.out build-asan/smoke.rc
t0=$(date +%s)
(
  rc=0
  tools/fuzz.sh smoke build-asan >build-asan/smoke.out 2>&1 || rc=$?
  echo "$rc" >build-asan/smoke.rc
) &
fuzz_pid=$!
# Only what these tests run is built: the programs and the hk command
# (their fixture builds plugins with it).
tsan_tests="threadpool registry calls loader opt plugins arrays reduce rows types"
targets="hk_cli"
for t in $tsan_tests; do targets="$targets test_$t"; done
suite "clang, ThreadSanitizer (threaded tests)" build-tsan \
  "^test_($(echo "$tsan_tests" | tr ' ' '|'))$" \
  -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug -DHK_SANITIZE=thread \
  -DHK_CUDA=OFF
targets=""
unset HK_TEST_JIT_ONLY HK_TEST_SMALL
wait "$fuzz_pid" || true
echo "==== libFuzzer targets: seed corpora + fixed-seed fuzzing (build-asan)"
cat build-asan/smoke.out 2>/dev/null || true
fuzz_rc=$(cat build-asan/smoke.rc 2>/dev/null || echo 1)
echo "  done $(($(date +%s) - t0)) s after they started (beside the suite above)"
if [ "$fuzz_rc" -eq 77 ]; then
  echo "  skipped libFuzzer targets (clang or libFuzzer missing)"
elif [ "$fuzz_rc" -ne 0 ]; then
  echo "==== libFuzzer targets: FAILED"
  status=1
fi

# The Python step: what the suites said of the Python module's tests.
echo "==== Python module (import hk): pytest and pip install, in the suites"
for d in build-test build-asan; do
  log="$d/Testing/Temporary/LastTest.log"
  [ -f "$log" ] || continue
  awk -v d="$d" '/^[0-9]+\/[0-9]+ Test: python/{t=$3}
    t && /^Test (Passed|Failed)|^SKIPPED: /{print "  " d " " t ": " $0; t=""}' \
    "$log"
done

if [ "$status" -eq 0 ]; then
  echo "==== all test suites passed"
else
  echo "==== SOME TEST SUITES FAILED"
fi
exit "$status"
