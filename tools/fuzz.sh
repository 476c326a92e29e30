#!/bin/sh
# fuzz.sh TARGET SECONDS — fuzz one libFuzzer target of tests/fuzz (kernel,
# npy, elf, body, arrays, or all of them one after the other) for SECONDS
# each.
#
# Configures and builds a clang build tree with HK_FUZZ=ON (build-fuzz/,
# AddressSanitizer + UBSan + libFuzzer's coverage), copies the target's
# seed corpus (tests/fuzz/corpus/TARGET) to build-fuzz/corpus/TARGET, where
# new inputs accumulate between runs, and runs the target on it. Crashes,
# leaks and timeouts are written to build-fuzz/crashes/TARGET/; the last
# lines printed are libFuzzer's final stats (executions, coverage).
# Extra arguments after SECONDS go to libFuzzer (e.g. -jobs=2).
#
# fuzz.sh smoke [TREE] — the short, deterministic step of tools/test.sh:
# builds the same tree (or takes the targets TREE built: tools/test.sh's
# AddressSanitizer tree, HK_FUZZ_TARGETS), replays every target over every
# file of its seed corpus, then fuzzes each from a scratch copy of it with
# a fixed seed (-seed=1, a fixed number of runs, at most a few seconds).
# Exits 77 (skipped) when clang or its libFuzzer runtime is missing.
set -eu
cd "$(dirname "$0")/.."
tree=""
if [ "${1:-}" = smoke ]; then
  tree=${2:-}
  set -- smoke 0
fi
if [ $# -lt 2 ]; then
  echo "usage: tools/fuzz.sh kernel|npy|elf|body|arrays|all SECONDS [LIBFUZZER-ARGS...]" >&2
  exit 2
fi
target=$1
secs=$2
shift 2
case $target in
  all|smoke) targets="kernel npy elf body arrays" ;;
  kernel|npy|elf|body|arrays) targets=$target ;;
  *) echo "fuzz.sh: unknown target '$target' (kernel, npy, elf, body, arrays, all)" >&2; exit 2 ;;
esac
skip=1
[ "$target" = smoke ] && skip=77
if [ -n "$tree" ] && [ ! -x "$tree/tests/fuzz/fuzz_kernel" ]; then
  echo "fuzz.sh: skipped: $tree has no fuzz targets (clang's libFuzzer missing?)"
  exit 77
fi
if [ -n "$tree" ]; then
  dir=$tree
else
  command -v clang >/dev/null || {
    echo "fuzz.sh: skipped: clang not found (libFuzzer is clang's)"; exit $skip; }
  probe=$(mktemp -d)
  printf 'int LLVMFuzzerTestOneInput(const char *d, long n);\nint LLVMFuzzerTestOneInput(const char *d, long n) { (void)d; (void)n; return 0; }\n' >"$probe/p.c"
  if ! clang -fsanitize=fuzzer,address,undefined -o "$probe/p" "$probe/p.c" \
      >/dev/null 2>&1; then
    rm -rf "$probe"
    echo "fuzz.sh: skipped: clang cannot link -fsanitize=fuzzer (no libclang_rt.fuzzer)"
    exit $skip
  fi
  rm -rf "$probe"

  dir=build-fuzz
  mkdir -p "$dir"
  if ! cmake -S . -B "$dir" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug \
      -DCMAKE_C_FLAGS_DEBUG="-g -O1" -DHK_FUZZ=ON -DHK_TESTS=OFF -DHK_CUDA=OFF \
      -DHK_STDLIB_ISA=OFF \
      -DHK_WERROR=ON >"$dir/configure.log" 2>&1; then
    cat "$dir/configure.log"; exit 1
  fi
  if ! cmake --build "$dir" -j "$(nproc 2>/dev/null || echo 2)" --target hk_fuzz \
      >"$dir/build.log" 2>&1; then
    tail -30 "$dir/build.log"; exit 1
  fi
fi

status=0
if [ "$target" = smoke ]; then
  for t in $targets; do
    bin=$dir/tests/fuzz/fuzz_$t
    log=$dir/smoke_$t.log
    scratch=$dir/smoke/$t
    rm -rf "$scratch"
    mkdir -p "$scratch" "$dir/crashes/$t"
    cp tests/fuzz/corpus/$t/* "$scratch"/
    n=$(ls tests/fuzz/corpus/$t | wc -l)
    # Every seed once, then 20000 fixed-seed mutations (5 s at most).
    if "$bin" -artifact_prefix="$dir/crashes/$t/" tests/fuzz/corpus/$t/* \
          >"$log" 2>&1 &&
        "$bin" -seed=1 -runs=20000 -max_total_time=5 -timeout=10 \
          -print_final_stats=1 -artifact_prefix="$dir/crashes/$t/" \
          "$scratch" >>"$log" 2>&1; then
      echo "  fuzz_$t: $n seeds replayed, $(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}') fixed-seed runs: ok"
    else
      status=1
      echo "  fuzz_$t: FAILED (log: $log, input: $dir/crashes/$t/)"
      grep -E "ERROR|SUMMARY|runtime error|Test unit written" "$log" | head -10
    fi
  done
  exit "$status"
fi
for t in $targets; do
  corpus=$dir/corpus/$t
  crashes=$dir/crashes/$t
  mkdir -p "$corpus" "$crashes"
  cp -n tests/fuzz/corpus/$t/* "$corpus"/ 2>/dev/null || true
  echo "==== fuzz_$t: $secs s on $corpus (crashes: $crashes/)"
  log=$dir/fuzz_$t.log
  if "$dir/tests/fuzz/fuzz_$t" -max_total_time="$secs" -print_final_stats=1 \
      -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$crashes/" "$@" \
      "$corpus" >"$log" 2>&1; then
    :
  else
    status=1
    echo "==== fuzz_$t FAILED: see $log and $crashes/"
    grep -E "ERROR|SUMMARY|Test unit written" "$log" | head -10
  fi
  # The last status line (cov:, ft:, corp:, exec/s) and the final stats.
  grep -E "^#[0-9]+" "$log" | tail -1
  grep -E "^stat::" "$log" || true
done
exit "$status"
