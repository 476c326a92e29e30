#!/bin/sh
# bench_smoke.sh HK — hk bench works as an instrument: a tiny run produces a
# table, one JSON record per case with every field, and a plot. Nothing here
# looks at the timings (benchmarks never assert them).
set -u
HK=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export HK_CACHE_DIR="$T/cache"
dir=$(dirname "$HK")
# Every mode's --help: its own usage on stdout, nothing on stderr, exit 0.
for m in arrays math gpt2; do
  "$HK" bench --$m --help >"$T/hout" 2>"$T/herr"
  rc=$?
  [ "$rc" -eq 0 ] && [ ! -s "$T/herr" ] && grep -q "^usage: hk bench --$m" "$T/hout" || {
    echo "FAIL: hk bench --$m --help exited $rc"; cat "$T/herr" "$T/hout"; exit 1; }
done
# hk bench --arrays (plain C, always built): one untimed pass checks every
# variant's output and prints every group and the targets block.
"$HK" bench --arrays --smoke --no-numpy --json "$T/a.json" >"$T/aout" 2>"$T/aerr" || {
  echo "FAIL: hk bench --arrays exited $?"; cat "$T/aerr" "$T/aout"; exit 1; }
for g in "call cost" "broadcast add" "strided input" "axis reduction" \
         "softmax over rows" "layernorm over rows" "gelu, 1M" "targets (issue 9)"; do
  grep -q "$g" "$T/aout" || { echo "FAIL: hk bench --arrays printed no '$g'"; exit 1; }
done
grep -q '"group"' "$T/a.json" || { echo "FAIL: hk bench --arrays --json wrote no record"; exit 1; }
# hk bench --gpt2 (plain C): small odd shapes, one untimed pass: every
# GPT-2 kernel file loads in both fp modes and agrees with llm.c's loops.
"$HK" bench --gpt2 --smoke --json "$T/g.json" >"$T/gout" 2>"$T/gerr" || {
  echo "FAIL: hk bench --gpt2 exited $?"; cat "$T/gerr" "$T/gout"; exit 1; }
grep -q "not loaded" "$T/gout" && { echo "FAIL: hk bench --gpt2: fast copies not loaded"; cat "$T/gout"; exit 1; }
for g in matmul_forward attention_forward layernorm_forward \
         layernorm_backward_dinp layernorm_backward_dweight softmax_forward \
         gelu_forward gelu_backward adamw "targets (issue 10, GPT-2 layer)"; do
  grep -q "^$g" "$T/gout" || { echo "FAIL: hk bench --gpt2 printed no '$g'"; exit 1; }
done
n=$(grep -c '"hk, fp fast"' "$T/g.json")
[ "$n" -eq 9 ] || { echo "FAIL: hk bench --gpt2: $n fast-mode records, expected 9"; exit 1; }
# --isolated: every variant's repetition runs in a child process (the
# bench itself with --variant K), whose time the parent reads back.
"$HK" bench --gpt2 --smoke --isolated --only layernorm_forward \
  >"$T/iout" 2>"$T/ierr" || {
  echo "FAIL: hk bench --gpt2 --isolated exited $?"; cat "$T/ierr" "$T/iout"; exit 1; }
grep -q "^layernorm_forward, .*isolated processes" "$T/iout" &&
  grep -q "^  hk, fp fast " "$T/iout" &&
  grep -q "layernorm_forward: hk (best mode) / C, isolated" "$T/iout" || {
  echo "FAIL: hk bench --gpt2 --isolated: no table of the three variants"; cat "$T/iout"; exit 1; }
if [ ! -x "$dir/hk-bench" ]; then
  echo "SKIPPED: hk-bench was not built (Google Benchmark, libbenchmark-dev, missing)"
  exit 77
fi
"$HK" bench --help >"$T/hout" 2>"$T/herr" && [ ! -s "$T/herr" ] || {
  echo "FAIL: hk bench --help failed"; cat "$T/herr"; exit 1; }
for w in --arrays --math --gpt2 loop inline registry jit opt naive inline_mt \
         loop_mt numpy; do
  grep -q -- " $w\b" "$T/hout" || { echo "FAIL: hk bench --help names no '$w'"; exit 1; }
done
# One repetition has no Google Benchmark aggregates: its run is the figure.
"$HK" bench --ops add --sizes 100 --variants inline --min-time 0.001 \
  --repetitions 1 --no-extras --no-numpy --json "$T/r1.json" >"$T/out" 2>"$T/err" || {
  echo "FAIL: hk bench --repetitions 1 exited $?"; cat "$T/err"; exit 1; }
grep -q '^ *100 *[0-9.]* (1.00)$' "$T/out" &&
  grep -q '"variant": "inline", "median_ns": [0-9.]*, "min_ns"' "$T/r1.json" || {
  echo "FAIL: hk bench --repetitions 1 measured nothing"; cat "$T/out" "$T/r1.json"; exit 1; }
plot=""
command -v gnuplot >/dev/null 2>&1 && plot="--plot $T/r.png"
# shellcheck disable=SC2086
"$HK" bench --ops add,sum,softmax,empty --sizes 100,3072 \
  --variants loop,inline,registry,jit,opt,naive --min-time 0.001 \
  --repetitions 2 --no-extras --json "$T/r.json" $plot >"$T/out" 2>"$T/err" || {
  echo "FAIL: hk bench exited $?"; cat "$T/err"; exit 1; }
fail=0
grep -q "^add " "$T/out" || { echo "FAIL: no table"; fail=1; }
grep -q "^targets:" "$T/out" || { echo "FAIL: no targets summary"; fail=1; }
grep -q "registry / inline" "$T/out" || { echo "FAIL: no registry target line"; fail=1; }
# 3 ops x 2 sizes + empty once = 7 groups, x 6 variants = 42 records
n=$(grep -c '"median_ns"' "$T/r.json")
[ "$n" -eq 42 ] || { echo "FAIL: $n records, expected 42"; fail=1; }
for field in '"op"' '"n"' '"variant"' '"median_ns"' '"min_ns"' '"max_ns"' '"cpu"' '"cores"'; do
  c=$(grep -c "$field" "$T/r.json")
  [ "$c" -ge 42 ] || { echo "FAIL: $field in only $c records"; fail=1; }
done
for v in loop inline registry jit opt naive; do
  grep -q "\"variant\": \"$v\"" "$T/r.json" || { echo "FAIL: no $v records"; fail=1; }
done
if [ -n "$plot" ]; then
  [ -s "$T/r.png" ] && head -c 8 "$T/r.png" | grep -q PNG || { echo "FAIL: no PNG"; fail=1; }
fi
[ "$fail" -eq 0 ] && echo "hk bench: table, $n JSON records${plot:+ and a plot}"
exit $fail
