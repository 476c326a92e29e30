#!/bin/sh
# plugins_test.sh HK SOURCE_DIR — the example plugins (plugins/*.json) run
# and give the right answers, on tier jit and on tier opt, and as prebuilt
# plugins (hk build, with its x86-64-v3 copy and without it). Inputs are
# made with hk itself; the expected values
# are worked out by hand in the comments.
set -u
HK=$1
SRC=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export HK_CACHE_DIR="$T/cache"
P="$SRC/plugins"
fails=0
checks=0

# expect OUTPUT CMD...: the command succeeds and prints exactly OUTPUT.
expect() {
  want=$1
  shift
  checks=$((checks + 1))
  got=$("$@" 2>"$T/err")
  rc=$?
  if [ $rc -ne 0 ] || [ "$got" != "$want" ]; then
    echo "FAIL: $*"
    echo "  expected: $want"
    echo "  got:      $got (exit $rc)"
    sed 's/^/  stderr: /' "$T/err" | head -5
    fails=$((fails + 1))
  fi
}

mk() { "$HK" run "$@" >/dev/null || { echo "cannot make input: $*"; exit 1; }; }
mk arange_f32 start=0 step=1 --n 5 --out "out=$T/x5.npy"          # 0 1 2 3 4
mk fill_f32 value=1 --n 5 --out "out=$T/ones5.npy"
mk arange_f32 start=-3 step=1.5 --n 5 --out "out=$T/c5.npy"       # -3 -1.5 0 1.5 3
mk arange_i32 start=-5 step=3 --n 5 --out "out=$T/i5.npy"         # -5 -2 1 4 7
mk arange_f32 start=0 step=1 --n 4 --out "out=$T/p4.npy"          # 0 1 2 3
mk fill_f32 value=1 --n 4 --out "out=$T/t4.npy"
mk arange_f64 start=0 step=1 --n 6 --out "out=$T/a6.npy"          # [[0 1 2] [3 4 5]]
mk arange_f64 start=0 step=0.5 --n 10 --out "out=$T/h10.npy"      # 0 0.5 .. 4.5
mk fill_f64 value=1 --n 3 --out "out=$T/ones3.npy"
mk arange_i64 start=1 step=1 --n 5 --out "out=$T/l5.npy"          # 1 2 3 4 5
mk fill_f32 value=0 --n 5 --out "out=$T/zeros5.npy"
mk fill_f32 value=25 --n 2 --out "out=$T/big2.npy"

tiers="jit"
if command -v "${HK_CC:-cc}" >/dev/null 2>&1; then
  tiers="jit opt"
else
  echo "note: no system compiler: tier opt and hk build are not checked"
fi
for tier in $tiers; do
  run() { "$HK" run "$@" --plugins "$P" --tier "$tier"; }
  # y = 2 x + 1
  expect '{"y": [1, 3, 5, 7, 9]}' run saxpy_f32 alpha=2 "x=$T/x5.npy" "y=$T/ones5.npy"
  # [-3 -1.5 0 1.5 3] into [-1, 2]
  expect '{"out": [-1, -1, 0, 1.5, 2]}' run clamp_f32 "x=$T/c5.npy" lo=-1 hi=2
  expect '{"out": [-3, -2, 1, 4, 5]}' run clamp_i32 "x=$T/i5.npy" lo=-3 hi=5
  # log(1 + e^x) for x = 0 .. 4 (float32 of the exact values), and x past 20
  expect '{"out": [0.693147182, 1.31326163, 2.12692809, 3.04858732, 4.01814985]}' run softplus_f32 "x=$T/x5.npy"
  expect '{"out": [25, 25]}' run softplus_f32 "x=$T/big2.npy"
  # r = [-1 0 1 2], delta 1: 0.5 + 0 + 0.5 + (2 - 0.5) = 2.5, / 4
  expect '{"out": [0.625]}' run huber_loss_f32 "pred=$T/p4.npy" "target=$T/t4.npy" delta=1
  # [[0 1 2] [3 4 5]] . [1 1 1]
  expect '{"y": [3, 12]}' run matvec_f64 "A=$T/a6.npy" "x=$T/ones3.npy" rows=2 cols=3
  expect '{"out": [1, 3, 6, 10, 15]}' run cumsum_i64 "x=$T/l5.npy"
  # 3 bins over [0, 4.5]: [0, 1.5) 3, [1.5, 3) 3, [3, 4.5] 4 (4.5 in the
  # last); the same counts from 4 parts (3, 3, 3, 1 elements) and from 1
  for parts in 4 1; do
    expect '' run histogram_parts "x=$T/h10.npy" lo=0 hi=4.5 B=3 P=$parts \
      --out "parts=$T/parts.npy" -q
    expect '{"counts": [3, 3, 4]}' run histogram_merge "parts=$T/parts.npy" B=3 P=$parts
  done
  # an empty range is widened by 0.5 each way, as NumPy's: [0.5, 1.5] in
  # 3 bins holds 0.5, 1 and 1.5 (1.5 in the last); no bins count nothing
  expect '' run histogram_parts "x=$T/h10.npy" lo=1 hi=1 B=3 P=2 \
    --out "parts=$T/parts.npy" -q
  expect '{"counts": [1, 1, 1]}' run histogram_merge "parts=$T/parts.npy" B=3 P=2
  expect '' run histogram_parts "x=$T/h10.npy" lo=0 hi=4.5 B=0 P=2 \
    --out "parts=$T/parts.npy" -q
  # one row [0 1 2 3 4] (a flat call): mean 2, variance 2, rstd 1/sqrt(2)
  expect '{"y": [-1.41421354, -0.707106769, 0, 0.707106769, 1.41421354], "mean": [2], "rstd": [0.707106769]}' \
    run layernorm_rows_f32 "x=$T/x5.npy" "weight=$T/ones5.npy" "bias=$T/zeros5.npy" eps=0
done

# Errors a plugin's description catches: x must have cols elements.
checks=$((checks + 1))
if "$HK" run matvec_f64 --plugins "$P" --tier jit "A=$T/a6.npy" "x=$T/ones5.npy" rows=2 cols=3 2>"$T/err"; then
  echo "FAIL: matvec with a short x was accepted"; fails=$((fails + 1))
fi

# Prebuilt: hk build, then load the .so from a folder of its own.
if [ "$tiers" = "jit opt" ]; then
  mkdir -m 700 "$T/so"
  for f in saxpy matvec layernorm; do
    checks=$((checks + 1))
    "$HK" build "$P/$f.json" -o "$T/so/$f.so" ||
      { echo "FAIL: hk build $f"; fails=$((fails + 1)); }
  done
  expect '{"y": [1, 3, 5, 7, 9]}' "$HK" run saxpy_f32 --plugins "$T/so" alpha=2 "x=$T/x5.npy" "y=$T/ones5.npy"
  expect '{"y": [3, 12]}' "$HK" run matvec_f64 --plugins "$T/so" "A=$T/a6.npy" "x=$T/ones3.npy" rows=2 cols=3
  expect '{"y": [-1.41421354, -0.707106769, 0, 0.707106769, 1.41421354], "mean": [2], "rstd": [0.707106769]}' \
    "$HK" run layernorm_rows_f32 --plugins "$T/so" "x=$T/x5.npy" "weight=$T/ones5.npy" "bias=$T/zeros5.npy" eps=0
  checks=$((checks + 1))
  "$HK" list --plugins "$T/so" | grep -q "^saxpy_f32 .* so  *so " ||
    { echo "FAIL: hk list does not show saxpy_f32 as origin so, tier so"; fails=$((fails + 1)); }
  # On x86-64 a portable plugin also holds its kernels' x86-64-v3 copy
  # (core/build.c); a compiler that cannot build the copy leaves the
  # baseline one, with a note, and the plugin still loads and runs.
  if [ "$(uname -m)" = x86_64 ]; then
    checks=$((checks + 1))
    grep -q "hk_range__saxpy_f32__v3" "$T/so/saxpy.so" ||
      { echo "FAIL: hk build's saxpy.so has no x86-64-v3 copy"; fails=$((fails + 1)); }
    cat >"$T/nov3cc" <<EOF2
#!/bin/sh
for a in "\$@"; do case "\$a" in *kernel_2.c) echo "kernel_2.c: error: no AVX2 here" >&2; exit 1;; esac; done
exec ${HK_CC:-cc} "\$@"
EOF2
    chmod +x "$T/nov3cc"
    mkdir -m 700 "$T/so1"
    checks=$((checks + 1))
    if HK_CC="$T/nov3cc" "$HK" build "$P/saxpy.json" -o "$T/so1/saxpy.so" 2>"$T/err"; then
      grep -q "x86-64-v3 copy of the kernels did not compile" "$T/err" ||
        { echo "FAIL: no note when the x86-64-v3 copy does not compile"; fails=$((fails + 1)); }
      ! grep -q "hk_range__saxpy_f32__v3" "$T/so1/saxpy.so" ||
        { echo "FAIL: the copy is there though it did not compile"; fails=$((fails + 1)); }
    else
      echo "FAIL: hk build failed when only the x86-64-v3 copy could not compile"
      sed 's/^/  stderr: /' "$T/err" | head -5
      fails=$((fails + 1))
    fi
    expect '{"y": [1, 3, 5, 7, 9]}' "$HK" run saxpy_f32 --plugins "$T/so1" alpha=2 "x=$T/x5.npy" "y=$T/ones5.npy"
  fi
fi

if [ $fails -ne 0 ]; then
  echo "$fails of $checks checks failed"
  exit 1
fi
echo "$checks checks passed"
