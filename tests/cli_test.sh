#!/bin/sh
# cli_test.sh HK SOURCE_DIR — the hk command end to end (SPEC §3): exit
# codes, messages on stderr, JSON on stdout, .npy files from --out, and that
# a failing run leaves existing files alone. Inputs are made with hk itself
# (arange, fill), so no NumPy is needed; cli_numpy_check.sh compares with
# NumPy where it is installed.
set -u
HK=$1
SRC=$2
T=$(mktemp -d)
export HK_CACHE_DIR="$T/cache" # never the user's cache
trap 'rm -rf "$T"' EXIT
fails=0
checks=0

# run EXPECTED_RC CMD...: runs the command, keeps stdout/stderr in $T/out,
# $T/err, and checks the exit status.
run() {
  want=$1
  shift
  "$@" >"$T/out" 2>"$T/err"
  got=$?
  checks=$((checks + 1))
  if [ "$got" -ne "$want" ]; then
    echo "FAIL: exit $got, expected $want: $*"
    sed 's/^/  stderr: /' "$T/err" | head -5
    fails=$((fails + 1))
  fi
}
# err_has TEXT / err_is TEXT / out_is TEXT / out_has TEXT / err_empty /
# out_empty
err_has() {
  checks=$((checks + 1))
  grep -qF -- "$1" "$T/err" || {
    echo "FAIL: stderr lacks '$1':"; sed 's/^/  /' "$T/err" | head -5
    fails=$((fails + 1)); }
}
out_has() {
  checks=$((checks + 1))
  grep -qF -- "$1" "$T/out" || {
    echo "FAIL: stdout lacks '$1':"; sed 's/^/  /' "$T/out" | head -5
    fails=$((fails + 1)); }
}
out_is() {
  checks=$((checks + 1))
  [ "$(cat "$T/out")" = "$1" ] || {
    echo "FAIL: stdout is '$(cat "$T/out")', expected '$1'"
    fails=$((fails + 1)); }
}
err_is() {
  checks=$((checks + 1))
  [ "$(cat "$T/err")" = "$1" ] || {
    echo "FAIL: stderr is '$(cat "$T/err")', expected '$1'"
    fails=$((fails + 1)); }
}
err_empty() {
  checks=$((checks + 1))
  [ ! -s "$T/err" ] || { echo "FAIL: stderr not empty:"; cat "$T/err"; fails=$((fails + 1)); }
}
out_empty() {
  checks=$((checks + 1))
  [ ! -s "$T/out" ] || { echo "FAIL: stdout not empty:"; head -5 "$T/out"; fails=$((fails + 1)); }
}

# ---- the command itself --------------------------------------------------
run 1 "$HK"
err_has "usage: hk COMMAND"
run 0 "$HK" --help
out_has "Commands:"
run 0 "$HK" --version
out_has "hk "
run 1 "$HK" frobnicate
err_has "unknown command 'frobnicate'"
for c in check gen list run build cache; do
  run 0 "$HK" "$c" --help
  out_has "usage: hk $c"
done

# ---- hk check ---------------------------------------------------------------
run 0 "$HK" check "$SRC"/stdlib_kernels/*.json
out_empty
err_empty
run 0 "$HK" check "$SRC/stdlib_kernels"
out_empty
run 1 "$HK" check
err_has "no kernel file or folder given"
run 1 "$HK" check --frob x.json
err_has "unknown option '--frob'"
run 1 "$HK" check "$T/nope.json"
err_has "$T/nope.json: error: cannot read"
# a folder without kernel files holds none that is invalid (SPEC: prints
# nothing, exit 0); an object file is not a kernel file
mkdir -p "$T/nojson"
run 0 "$HK" check "$T/nojson"
err_empty
printf '\177ELF\002\001\001' >"$T/obj.so"
run 1 "$HK" check "$T/obj.so"
err_has "$T/obj.so: error: an object file (a prebuilt plugin?): hk check checks kernel files (.json)"
# a neighbour read in an elementwise body: the compiler's words, and what
# to do instead (tcc here; hk build's gcc says "subscripted value")
printf '%s\n' '{"schema_version": 1, "name": "nb", "kind": "elementwise",' \
  ' "params": [{"name": "x", "type": "f32", "role": "in"},' \
  '            {"name": "y", "type": "f32", "role": "out"}],' \
  ' "body": "y = x[i] + x[i + 1];"}' >"$T/nb.json"
run 1 "$HK" check "$T/nb.json"
err_has "nb.json:4:11: error: body: pointer expected (tcc); in elementwise and reduction code a buffer parameter is its element at i (x, not x[i]): reading other elements needs a rows, grid or raw kernel"
run 1 "$HK" build "$T/nb.json" -o "$T/nb.so" --native
err_has "in elementwise and reduction code a buffer parameter is its element at i"

cat >"$T/bad.json" <<'EOF'
{
  "schema_version": 1,
  "name": "k",
  "kind": "elementwise",
  "params": [
    {"name": "x", "type": "f32", "role": "in"},
    {"name": "y", "type": "float", "role": "out"}
  ],
  "body": "y = x;"
}
EOF
run 1 "$HK" check "$T/bad.json"
err_has "$T/bad.json:7:27: error: params[1].type: unknown type \"float\""
out_empty

mkdir "$T/dir"
cat >"$T/dir/good.json" <<'EOF'
{"schema_version": 1, "name": "twice", "doc": "out = 2 x", "kind": "elementwise",
 "params": [{"name": "x", "type": "f32", "role": "in", "doc": "halved"},
            {"name": "out", "type": "f32", "role": "out"}],
 "body": "out = 2 * x;"}
EOF
cp "$T/bad.json" "$T/dir/bad.json"
printf 'not json' >"$T/dir/notes.txt" # ignored: not a .json file
run 1 "$HK" check "$T/dir"
err_has "bad.json:7:27: error:"
cp "$T/dir/good.json" "$T/again.json"
run 1 "$HK" check "$T/dir/good.json" "$T/again.json"
err_has "kernel \"twice\" is also defined in $T/dir/good.json:1:31"

# ---- hk gen -----------------------------------------------------------------
run 0 "$HK" gen "$T/dir/good.json"
out_has "void hk_range__twice(void *const *hk_args"
out_has "out = 2 * x;"
run 0 "$HK" gen "$T/dir/good.json" --target cuda
out_has "extern \"C\" __global__ void hk_cuda__twice("
run 0 "$HK" gen "$T/dir/good.json" -o "$T/gen.c"
out_empty
checks=$((checks + 1))
grep -q "hk_range__twice" "$T/gen.c" || { echo "FAIL: -o did not write"; fails=$((fails + 1)); }
run 1 "$HK" gen "$T/bad.json"
err_has "error: params[1].type"
run 1 "$HK" gen "$T/dir/good.json" --target gpu
err_has "unknown target 'gpu'"
run 1 "$HK" gen
err_has "no kernel file given"
cat >"$T/rawcpu.json" <<'EOF'
{"schema_version": 1, "name": "rev", "kind": "raw",
 "params": [{"name": "x", "type": "f64", "role": "in"},
            {"name": "y", "type": "f64", "role": "out"}],
 "cpu": "for (size_t i = 0; i < n; i++) y[i] = x[n - 1 - i];"}
EOF
run 1 "$HK" gen "$T/rawcpu.json" --target cuda
err_has "no kernel in this file targets cuda"

# ---- hk list ------------------------------------------------------------------
run 0 "$HK" list
out_has "add_f32"
out_has "stdlib"
out_has "x:f32:in y:f32:in out:f32:out"
# a rows kernel's row modes, which its arrays' shapes follow
out_has "weight:f32:in:shared bias:f32:in:shared y:f32:out mean:f32:out:one"
run 0 "$HK" list --json
out_has "\"name\": \"softmax_f32\""
out_has "\"name\": \"layernorm_f32\", \"kind\": \"rows\""
out_has "{\"name\": \"mean\", \"type\": \"f32\", \"role\": \"out\", \"row\": \"one\", \"doc\": \"each row's mean\"}"
mkdir "$T/plug"
cp "$T/dir/good.json" "$T/plug/"
run 0 "$HK" list --plugins "$T/plug"
out_has "twice"
out_has "json"
cp "$T/bad.json" "$T/plug/zbad.json"
run 1 "$HK" list --plugins "$T/plug"
out_has "twice"
err_has "zbad.json:7:27: error:"
HK_PLUGIN_PATH="$T/plug" run 1 "$HK" list
out_has "twice"
run 1 "$HK" list --plugins
err_has "--plugins needs a folder"
# A parameter whose name, type or role is refused, before the scalar that a
# len names, once crashed the validator (a NULL name read by the len
# checker): every such file is reported where it is wrong, and the process
# goes on (hk check, hk run, hk list, and a run from the folder).
mkdir "$T/refused"
cp "$SRC"/tests/plugin_fixtures/refused_params/*.json "$T/refused/"
run 0 "$HK" run arange_f32 start=0 step=0.5 --n 6 --out "out=$T/rx.npy"
for f in "$T"/refused/*.json; do
  b=$(basename "$f")
  case $b in ok_*) continue ;; esac
  run 1 "$HK" check "$f"
  err_has "$b:"
  err_has ": error: params["
  run 1 "$HK" run "$f" "x=$T/rx.npy" N=6 --tier jit --no-cache
  err_has "$b:"
done
run 1 "$HK" check "$SRC/tests/plugin_fixtures/refused_params/name_reserved.json"
err_has "name_reserved.json:7:14: error: params[0].name: \"a\" is reserved"
run 1 "$HK" list --plugins "$T/refused"
out_has "ok_len"
for b in name_reserved.json:7:14 name_keyword.json:7:14 name_hk.json:7:14 \
  name_not_identifier.json:7:14 name_duplicate.json:8:14 \
  type_refused.json:8:27 role_refused.json:8:42; do
  err_has "$b: error: params["
done
run 0 "$HK" run ok_len --plugins "$T/refused" "x=$T/rx.npy" N=6 --tier jit --no-cache
out_is '{"x": [1, 1.5, 2, 2.5, 3, 3.5]}'
err_has "name_reserved.json:7:14: error:"

# ---- hk run: results ------------------------------------------------------------
run 0 "$HK" run arange_f32 start=0 step=0.5 --n 6 --out "out=$T/x.npy"
out_empty
# each output's shape, dtype and where it went, on stderr; -q: nothing
err_is "hk run: out: shape (6,), f32, written to $T/x.npy"
run 0 "$HK" run fill_f32 value=2 --n 6 --out "out=$T/y.npy" -q
out_empty
err_empty
run 0 "$HK" run add_f32 "x=$T/x.npy" "y=$T/y.npy"
out_is '{"out": [2, 2.5, 3, 3.5, 4, 4.5]}'
err_is "hk run: out: shape (6,), f32, printed on stdout"
# a stdlib kernel by name, no plugin folder: no cache folder is made
run 0 env HK_CACHE_DIR="$T/nocache" HK_PLUGIN_PATH= "$HK" run add_f32 "x=$T/x.npy" "y=$T/y.npy"
checks=$((checks + 1))
[ ! -e "$T/nocache" ] || { echo "FAIL: hk run of a stdlib kernel made the cache folder"; fails=$((fails + 1)); }
run 0 "$HK" run mul_f32 "x=$T/x.npy" "y=$T/y.npy" --out "out=$T/m.npy"
out_empty
run 0 "$HK" run scale_f32 "x=$T/m.npy" alpha=1
out_is '{"out": [0, 1, 2, 3, 4, 5]}'
run 0 "$HK" run sum_f32 "x=$T/x.npy"
out_is '{"out": [7.5]}'
run 0 "$HK" run sum_f32 "x=$T/x.npy" --out "out=$T/s.npy"
run 0 "$HK" run scale_f32 "x=$T/s.npy" alpha=2
out_is '{"out": [15]}'
# a rows kernel called flat: one row of n = 6
run 0 "$HK" run softmax_f32 "x=$T/x.npy"
out_has '{"y": [0.0339902'
run 0 "$HK" run layernorm_f32 "x=$T/x.npy" "weight=$T/x.npy" "bias=$T/x.npy" eps=1e-5
out_has '"mean": [1.25], "rstd": [1.171072'
run 0 "$HK" run axpy_f32 alpha=2 "x=$T/x.npy" "y=$T/y.npy"
out_is '{"y": [2, 3, 4, 5, 6, 7]}'
run 0 "$HK" run arange_i32 start=-3 step=2 --n 4
out_is '{"out": [-3, -1, 1, 3]}'
run 0 "$HK" run arange_i64 start=9007199254740993 step=1 --n 2
out_is '{"out": [9007199254740993, 9007199254740994]}'
run 0 "$HK" run fill_f32 value=0 --n 2 --out "out=$T/z.npy"
run 0 "$HK" run div_f32 "x=$T/z.npy" "y=$T/z.npy"
out_is '{"out": [NaN, NaN]}'
run 0 "$HK" run log_f32 "x=$T/z.npy"
out_is '{"out": [-Infinity, -Infinity]}'
run 0 "$HK" run fill_f64 value=0.1 --n 1
out_is '{"out": [0.10000000000000001]}'
run 0 "$HK" run sum_f32 "x=$T/x.npy" --threads 2
out_is '{"out": [7.5]}'
run 0 "$HK" run add_f32 "x=$T/x.npy" "y=$T/y.npy" --backend cpu --tier inline
run 0 "$HK" run add_f32 "x=$T/x.npy" "y=$T/y.npy" --backend auto --tier auto
# n = 0 works end to end
run 0 "$HK" run arange_f32 start=0 step=1 --n 0 --out "out=$T/e.npy"
run 0 "$HK" run sum_f32 "x=$T/e.npy"
out_is '{"out": [0]}'

# ---- hk run: errors (exit 1, a message, nothing written) ----------------------------
run 1 "$HK" run
err_has "no kernel given"
run 1 "$HK" run nosuch_f32
err_has "no kernel named 'nosuch_f32'"
run 1 "$HK" run ad_f32 "x=$T/x.npy"
err_has "did you mean 'add_f32'"
run 1 "$HK" run add_f32 "x=$T/x.npy" "y=$T/y.npy" "z=$T/y.npy"
err_has "add_f32 has no parameter 'z' (its parameters: x, y, out)"
run 1 "$HK" run add_f32 "x=$T/x.npy"
err_has "missing y, an in buffer of add_f32 (f32): give y=FILE.npy"
run 1 "$HK" run add_f32 "x=$T/x.npy" "x=$T/y.npy" "y=$T/y.npy"
err_has "x is given twice"
run 1 "$HK" run add_f32 "x=$T/x.npy" "y=$T/y.npy" "out=$T/y.npy"
err_has "out is an out buffer of add_f32"
run 1 "$HK" run add_f32 "x=$T/x.npy" "y=$T/y.npy" --out "x=$T/o.npy"
err_has "x is an in buffer, not an output"
run 1 "$HK" run add_f32 "x=$T/x.npy" "y=$T/y.npy" --out "out"
err_has "--out expects PARAM=FILE.npy"
run 1 "$HK" run add_f32 "x=$T/x.npy" "y=$T/y.npy" junk
err_has "unexpected argument 'junk'"
run 1 "$HK" run add_f32 "x=$T/x.npy" "y=$T/y.npy" --frob
err_has "unknown option '--frob'"
run 0 "$HK" run arange_f64 start=0 step=1 --n 6 --out "out=$T/d.npy"
run 1 "$HK" run add_f32 "x=$T/d.npy" "y=$T/y.npy"
err_has "parameter x of add_f32 has type f32, but the file holds float64 ('<f8')"
run 0 "$HK" run arange_f32 start=0 step=1 --n 5 --out "out=$T/five.npy"
run 1 "$HK" run add_f32 "x=$T/x.npy" "y=$T/five.npy"
err_has "shapes do not broadcast: parameter 'x' (6,) and parameter 'y' (5,)"
# a placeholder no file decides: the instances that fit, and what is open
run 1 "$HK" run cast "x=$T/x.npy"
err_has "cast: the files' dtypes fit 4 instances (cast_f32_bf16, cast_f32_bool, cast_f32_f16, cast_f32_f32): no file gives the type of out; name the instance"
# a kernel whose code crashes: one line naming it and the likely cause,
# exit 1 (its author's error), not a bare signal
if [ -z "${HK_TEST_SANITIZE:-}" ]; then
  cat >"$T/idiv.json" <<'EOF'
{"schema_version": 1, "name": "idiv", "kind": "elementwise",
 "params": [{"name": "x", "type": "i32", "role": "in"},
            {"name": "y", "type": "i32", "role": "in"},
            {"name": "q", "type": "i32", "role": "out"}],
 "body": "q = x / y;"}
EOF
  run 0 "$HK" run arange_i32 start=0 step=1 --n 3 --out "out=$T/i3.npy"
  run 1 "$HK" run "$T/idiv.json" "x=$T/i3.npy" "y=$T/i3.npy" --tier jit --no-cache
  err_is "hk run: idiv ($T/idiv.json, tier jit) crashed: SIGFPE, an integer division by zero (or INT_MIN / -1)"
  # on the pool's threads too (they blocked every signal: a fault there
  # killed hk with no word): 100,000 elements in tasks, the zero last
  run 0 "$HK" run arange_i32 start=99999 step=-1 --n 100000 --out "out=$T/rev.npy"
  run 1 env HK_PAR_MIN=1 "$HK" run "$T/idiv.json" "x=$T/rev.npy" "y=$T/rev.npy" \
    --tier jit --no-cache --threads 4
  err_is "hk run: idiv ($T/idiv.json, tier jit) crashed: SIGFPE, an integer division by zero (or INT_MIN / -1)"
fi
# a kernel that writes a little past its out buffer: said, exit 1, nothing
# written (it corrupted the heap: "written to", then glibc's abort, 134)
cat >"$T/past.json" <<'EOF'
{"schema_version": 1, "name": "past", "kind": "raw",
 "params": [{"name": "x", "type": "f32", "role": "in"},
            {"name": "y", "type": "f32", "role": "out", "len": "n"}],
 "cpu": "for (size_t j = 0; j < n; j++) y[j + 8] = x[j];", "targets": ["cpu"]}
EOF
run 0 "$HK" run arange_f32 start=0 step=1 --n 1000 --out "out=$T/x1000.npy"
run 1 "$HK" run "$T/past.json" "x=$T/x1000.npy" --out "y=$T/past.npy" --tier jit --no-cache
err_is "hk run: past wrote past the end of out buffer y (1000 elements)"
checks=$((checks + 1))
[ -e "$T/past.npy" ] && { echo "FAIL: --out written after a write past the end"; fails=$((fails + 1)); }
run 1 "$HK" run "$T/past.json" "x=$T/x1000.npy" --tier jit --no-cache
out_empty
# a number for a placeholder's in buffer decides no type
run 1 "$HK" run scale x=0.1 alpha=1
err_has "scale: the files' dtypes fit 4 instances (scale_bf16, scale_f16, scale_f32, scale_f64): no file gives the type of x, alpha, out; name the instance"
# a number for an in buffer is a 0-d array of its type (broadcast)
run 0 "$HK" run arange_f32 start=0 step=1 --n 3 --out "out=$T/a3.npy"
run 0 "$HK" run add_f32 "x=$T/a3.npy" y=2.5
out_is '{"out": [2.5, 3.5, 4.5]}'
run 1 "$HK" run add_f32 "x=$T/a3.npy" y=1e40
err_has "y=1e40: the value is too large for f32 (y is an f32 in buffer, given a value)"
# ... but not for an inout buffer, which is updated in place: said so,
# not "1.5: cannot open"
run 1 "$HK" run axpy_f32 alpha=2 "x=$T/x.npy" y=1.5
err_is "hk run: y=1.5: y is an inout buffer of axpy_f32, which needs a .npy file (a number is taken only for in buffers)"
run 1 "$HK" run softmax_f32 "x=$T/x.npy" rows=2
err_has "softmax_f32 has no parameter 'rows'"
run 1 "$HK" run scale_f32 "x=$T/x.npy" alpha=abc
err_has "alpha=abc: the value is not a number"
# a space before a number as after it (strtod skipped the one before)
run 1 "$HK" run scale_f32 "x=$T/x.npy" "alpha= 2"
err_has "alpha= 2: the value begins with a space"
run 1 "$HK" run scale_f32 "x=$T/x.npy" "alpha=2 "
err_has "alpha=2 : the value is not a number"
run 1 "$HK" run scale_f32 "x=$T/x.npy" alpha=1e39
err_has "too large for f32"
# beyond a double too: still named by the scalar's own type
run 1 "$HK" run scale_f32 "x=$T/x.npy" alpha=1e400
err_has "alpha=1e400: the value is too large for f32 (alpha is an f32 scalar)"
run 1 "$HK" run fill_i32 value=3000000000 --n 1
err_has "out of range"
run 1 "$HK" run fill_i32 value=1.5 --n 1
err_has "is not an integer"
run 1 "$HK" run fill_f32 value=1
err_has "has no in/inout buffer to take n from: give --n N"
run 1 "$HK" run add_f32 "x=$T/x.npy" "y=$T/y.npy" --n 7
err_has "n is the element count of x (6)"
# --backend cuda: the GPU's result where there is one, else exit 1 with
# the reason; the same for a plugin kernel file (NVRTC) and a reduction.
"$HK" run add_f32 "x=$T/x.npy" "y=$T/y.npy" >"$T/cpu.json" 2>/dev/null
"$HK" run sum_f32 "x=$T/x.npy" >"$T/cpu_sum.json" 2>/dev/null
if "$HK" run add_f32 "x=$T/x.npy" "y=$T/y.npy" --backend cuda >"$T/out" 2>"$T/err"; then
  checks=$((checks + 1))
  cmp -s "$T/out" "$T/cpu.json" || { echo "FAIL: add_f32 on the GPU differs from the CPU"; fails=$((fails + 1)); }
  run 0 "$HK" run sum_f32 "x=$T/x.npy" --backend cuda
  out_is "$(cat "$T/cpu_sum.json")"
else
  err_has "--backend cuda: no CUDA device: "
  run 1 "$HK" run sum_f32 "x=$T/x.npy" --backend cuda
  err_has "no CUDA device"
fi
run 1 "$HK" run add_f32 "x=$T/x.npy" "y=$T/y.npy" --backend gpu
err_has "unknown backend 'gpu'"
run 1 "$HK" run add_f32 "x=$T/x.npy" "y=$T/y.npy" --tier jit
err_has "stdlib kernel"
run 1 "$HK" run add_f32 "x=$T/x.npy" "y=$T/y.npy" --tier fast
err_has "unknown tier 'fast'"
run 1 "$HK" run add_f32 "x=$T/x.npy" "y=$T/y.npy" --threads 257
err_has "--threads: expected a number from 0 (every CPU, as without it) to 256, got '257'"
run 0 "$HK" run sum_f32 "x=$T/x.npy" --threads 0
printf 'garbage, not an array' >"$T/garbage.npy"
run 1 "$HK" run add_f32 "x=$T/garbage.npy" "y=$T/y.npy"
err_has "garbage.npy"
run 1 "$HK" run add_f32 "x=$T/missing.npy" "y=$T/y.npy"
err_has "missing.npy"
# a kernel file runs directly (tier jit: no waiting for the system compiler)
run 0 "$HK" run "$T/dir/good.json" "x=$T/x.npy" --tier jit --no-cache
out_is '{"out": [0, 1, 2, 3, 4, 5]}'
cat >"$T/two.json" <<'EOF2'
{"schema_version": 1, "kernels": [
 {"name": "inc", "kind": "elementwise", "types": {"T": ["f32", "f64"]},
  "params": [{"name": "x", "type": "T", "role": "in"},
             {"name": "out", "type": "T", "role": "out"}],
  "body": "out = x + 1;"}]}
EOF2
# the instances of one kernel: picked by the files' dtypes
"$HK" run arange_i32 start=0 step=1 --n 6 --out "out=$T/i.npy" >/dev/null
run 0 "$HK" run "$T/two.json" "x=$T/x.npy" --tier jit --no-cache
out_is '{"out": [1, 1.5, 2, 2.5, 3, 3.5]}'
run 0 "$HK" run "$T/two.json:inc" "x=$T/x.npy" --tier jit --no-cache
out_is '{"out": [1, 1.5, 2, 2.5, 3, 3.5]}'
run 1 "$HK" run "$T/two.json" "x=$T/i.npy" --tier jit --no-cache
err_has "holds i32; no instance of inc takes it for x (instances: inc_f32, inc_f64"
cat >"$T/pair.json" <<'EOF2'
{"schema_version": 1, "kernels": [
 {"name": "inc", "kind": "elementwise",
  "params": [{"name": "x", "type": "f32", "role": "in"},
             {"name": "out", "type": "f32", "role": "out"}],
  "body": "out = x + 1;"},
 {"name": "dec", "kind": "elementwise",
  "params": [{"name": "x", "type": "f32", "role": "in"},
             {"name": "out", "type": "f32", "role": "out"}],
  "body": "out = x - 1;"}]}
EOF2
run 1 "$HK" run "$T/pair.json" "x=$T/x.npy" --tier jit --no-cache
err_has "defines 2 kernels (dec, inc): name one as"
run 0 "$HK" run "$T/two.json:inc_f32" "x=$T/x.npy" --tier jit --no-cache
out_is '{"out": [1, 1.5, 2, 2.5, 3, 3.5]}'
run 1 "$HK" run "$T/two.json:inc_i32" "x=$T/x.npy" --tier jit --no-cache
err_has "defines no kernel named 'inc_i32' (it defines: inc_f32, inc_f64)"
run 1 "$HK" run "$T/bad.json" "x=$T/x.npy" --tier jit --no-cache
err_has "bad.json:7:27: error: params[1].type"
run 1 "$HK" run "$T/dir/good.json" "x=$T/x.npy" --tier inline
err_has "--tier inline: twice is a plugin kernel"
# An empty or blank raw body is legal (schemas/README.md): a kernel that
# does nothing. Its C compiles cleanly, and it runs, leaving x as it was, at
# tier jit, and at tier opt and as a prebuilt plugin (tier so) where there
# is a system compiler.
cat >"$T/nop.json" <<'EOF2'
{"schema_version": 1, "kernels": [
 {"name": "nop", "kind": "raw", "cpu": "",
  "params": [{"name": "x", "type": "f32", "role": "inout"}]},
 {"name": "nop_blank", "kind": "raw", "cpu": ["  ", "\t"], "cuda": " \n",
  "params": [{"name": "x", "type": "f32", "role": "inout", "len": "m * 2"},
             {"name": "m", "type": "i64", "role": "scalar"}]}]}
EOF2
run 0 "$HK" check "$T/nop.json"
err_empty
run 0 "$HK" gen "$T/nop.json" -o "$T/nop.c"
run 0 "$HK" gen "$T/nop.json" --target cuda
out_has "extern \"C\" __global__ void hk_cuda__nop_blank(float *x, int64_t hk_s_m, size_t n)"
for cc in gcc clang; do
  command -v $cc >/dev/null || continue
  run 0 $cc -std=c11 -pedantic-errors -Wall -Wextra -Werror -fPIC -c "$T/nop.c" -o "$T/nop.o"
  err_empty
done
nop_tiers=jit
command -v "${HK_CC:-cc}" >/dev/null 2>&1 && nop_tiers="jit opt"
for tier in $nop_tiers; do
  run 0 "$HK" run "$T/nop.json:nop" "x=$T/x.npy" --tier $tier --no-cache
  out_is '{"x": [0, 0.5, 1, 1.5, 2, 2.5]}'
  run 0 "$HK" run "$T/nop.json:nop_blank" "x=$T/x.npy" m=3 --tier $tier --no-cache
  out_is '{"x": [0, 0.5, 1, 1.5, 2, 2.5]}'
done
if [ "$nop_tiers" = "jit opt" ]; then
  mkdir -m 700 "$T/nopso"
  run 0 "$HK" build "$T/nop.json" -o "$T/nopso/nop.so"
  run 0 "$HK" run nop --plugins "$T/nopso" "x=$T/x.npy"
  out_is '{"x": [0, 0.5, 1, 1.5, 2, 2.5]}'
  run 0 "$HK" list --plugins "$T/nopso"
  checks=$((checks + 1))
  grep -q "^nop .* so  *so " "$T/out" ||
    { echo "FAIL: hk list does not show nop as origin so, tier so"; fails=$((fails + 1)); }
fi
# A failing run never destroys an existing output file, and a write into a
# missing folder fails cleanly.
cp "$T/x.npy" "$T/keep.npy"
run 1 "$HK" run add_f32 "x=$T/x.npy" --out "out=$T/keep.npy"
checks=$((checks + 1))
cmp -s "$T/x.npy" "$T/keep.npy" || { echo "FAIL: keep.npy was changed"; fails=$((fails + 1)); }
run 1 "$HK" run add_f32 "x=$T/x.npy" "y=$T/y.npy" --out "out=$T/no/such/dir/o.npy"
err_has "--out out:"
checks=$((checks + 1))
[ ! -e "$T/no" ] || { echo "FAIL: a folder was created"; fails=$((fails + 1)); }

# ---- option syntax: getopt_long in every subcommand --------------------------
# --opt=value beside --opt value, short options with the value attached,
# options before, between or after the operands, unique prefixes, "--"
# ending the options, and usage errors (exit 1, "Try 'hk CMD --help'").
run 0 "$HK" run sum_f32 "x=$T/x.npy" --threads=2
out_is '{"out": [7.5]}'
run 0 "$HK" run --threads 2 sum_f32 "x=$T/x.npy"
out_is '{"out": [7.5]}'
run 0 "$HK" run arange_f32 --n=3 start=1 step=1
out_is '{"out": [1, 2, 3]}'
run 0 "$HK" run --n 3 arange_f32 start=1 --out=out="$T/o3.npy" step=1
run 0 "$HK" run sum_f32 "x=$T/o3.npy" --backend=cpu --tier=inline --no-cache
out_is '{"out": [6]}'
run 0 "$HK" run sum_f32 "x=$T/o3.npy" --thr 1 --back cpu
out_is '{"out": [6]}'
mkdir "$T/plug2"
cp "$T/dir/good.json" "$T/plug2/"
run 0 "$HK" run twice "x=$T/o3.npy" --plugins="$T/plug2" --tier=jit --no-cache
out_is '{"out": [2, 4, 6]}'
run 0 "$HK" list --plugins="$T/plug2" --json
out_has '"name": "twice"'
out_has '"params": [{"name": "x", "type": "f32", "role": "in", "doc": "halved"}, {"name": "out", "type": "f32", "role": "out"}]'
run 0 "$HK" list --json --plugins "$T/plug2" --allow-unsafe-plugins
out_has '"name": "twice"'
# a plugin file that failed: no guess at another kernel's name
mkdir "$T/plug3"
sed 's/"kind"/"knd"/' "$T/dir/good.json" >"$T/plug3/twice.json"
run 1 "$HK" run twice "x=$T/o3.npy" --plugins="$T/plug3" --tier=jit --no-cache
err_has "twice.json:"
err_has "no kernel named 'twice' is loaded (the plugin folders or files that failed above may define it)"
# tier opt asked for on a machine without the compiler: its failure, exit
# 2 (as hk build's), each file saying why
run 2 env HK_CC=/nonexistent/cc "$HK" run twice "x=$T/o3.npy" \
  --plugins="$T/plug2" --tier opt --no-cache
err_has "tier opt failed: no system compiler: '/nonexistent/cc' was not found (HK_CC)"
# tier auto without the cache runs jit alone: no opt build beside it
# (hk run waited for one, up to its time limit, to keep nothing)
printf '#!/bin/sh\ntouch "%s/cc-ran"\nexit 1\n' "$T" >"$T/markcc"
chmod +x "$T/markcc"
run 0 env HK_CC="$T/markcc" "$HK" run "$T/dir/good.json" "x=$T/x.npy" --no-cache -q
checks=$((checks + 1))
[ ! -e "$T/cc-ran" ] || { echo "FAIL: hk run --no-cache (tier auto) ran the compiler"; fails=$((fails + 1)); }
# a pipe is read once: picking the instance by its dtype and loading it
# (the load found the pipe drained)
run 0 sh -c "cat '$T/x.npy' | '$HK' run abs x=/dev/stdin -q"
out_has '{"out": [0, 0.5, 1, 1.5, 2, 2.5]}'
# a raw kernel without an in buffer: n is --n, and its outputs are shaped
# by it (their len's factors, or n elements flat)
cat >"$T/rfill.json" <<'EOF2'
{"schema_version": 1, "name": "rfill", "kind": "raw", "targets": ["cpu"],
 "params": [{"name": "v", "type": "f32", "role": "scalar"},
            {"name": "y", "type": "f32", "role": "out"},
            {"name": "z", "type": "f32", "role": "out", "len": "n * 2"}],
 "cpu": ["for (size_t i = 0; i < n; i++) y[i] = v;",
         "for (size_t i = 0; i < 2 * n; i++) z[i] = (float)i;"]}
EOF2
run 0 "$HK" run "$T/rfill.json" v=2 --n 3 --no-cache
out_is '{"y": [2, 2, 2], "z": [[0, 1], [2, 3], [4, 5]]}'
err_has "hk run: z: shape (3, 2), f32, printed on stdout"
run 1 "$HK" run "$T/rfill.json" v=2 --no-cache
err_has "rfill has no in/inout buffer to take n from: give --n N"
# a grid kernel whose code and lens do not use n needs no --n
cat >"$T/iota2.json" <<'EOF2'
{"schema_version": 1, "name": "iota2", "kind": "grid", "targets": ["cpu"],
 "params": [{"name": "out", "type": "i64", "role": "out", "len": "R * C"},
            {"name": "R", "type": "i64", "role": "scalar"},
            {"name": "C", "type": "i64", "role": "scalar"}],
 "grid": {"r": "R", "c": "C"},
 "body": "out[r * C + c] = r * 100 + c;"}
EOF2
run 0 "$HK" run "$T/iota2.json" R=2 C=3 --no-cache
out_is '{"out": [[0, 1, 2], [100, 101, 102]]}'
# a plugin kernel named exp (f32) beside the stdlib's exp_f32, exp_f64:
# f64 data picks exp_f64, as hk_kernel_select does; f32 data the plugin
mkdir -p "$T/shadow"
cat >"$T/shadow/exp.json" <<'EOF2'
{"schema_version": 1, "name": "exp", "kind": "elementwise",
 "params": [{"name": "x", "type": "f32", "role": "in"},
            {"name": "out", "type": "f32", "role": "out"}],
 "body": "out = x * 2;"}
EOF2
run 0 "$HK" run exp --plugins "$T/shadow" "x=$T/d.npy" --no-cache -q
out_has '{"out": [1, 2.7182818284590451, 7.3890560989306504'
run 0 "$HK" run exp --plugins "$T/shadow" "x=$T/x.npy" --tier jit --no-cache -q
out_is '{"out": [0, 1, 2, 3, 4, 5]}'
# both at once: the pipe, read to try the kernel named exp and then to
# pick the instance, is read once
run 0 sh -c "cat '$T/d.npy' | '$HK' run exp --plugins '$T/shadow' x=/dev/stdin --no-cache -q"
out_has '{"out": [1, 2.7182818284590451, 7.3890560989306504'
# hk list shows a doc's control characters as '?': an escape sequence,
# a tab (they reached the terminal, and broke the table)
mkdir -p "$T/ctl"
printf '{"schema_version": 1, "name": "ctl", "kind": "elementwise", "doc": "a\\u001b[31mb\\tc",\n "params": [{"name": "x", "type": "f32", "role": "in"}, {"name": "y", "type": "f32", "role": "out"}], "body": "y = x;"}\n' >"$T/ctl/ctl.json"
run 0 "$HK" list --plugins "$T/ctl"
out_has "a?[31mb?c"
checks=$((checks + 1))
if grep -q "$(printf '\033')" "$T/out"; then echo "FAIL: hk list printed an escape character"; fails=$((fails + 1)); fi
run 0 "$HK" gen --target=cuda "$T/dir/good.json"
out_has "extern \"C\" __global__ void hk_cuda__twice("
run 0 "$HK" gen -o"$T/gen2.c" "$T/dir/good.json" --target cpu
out_empty
checks=$((checks + 1))
cmp -s "$T/gen.c" "$T/gen2.c" || { echo "FAIL: gen -oFILE differs from -o FILE"; fails=$((fails + 1)); }
run 0 "$HK" cache --cache-dir="$T/c2" list
out_has "0 entries in $T/c2"
run 0 "$HK" cache list --cache-dir "$T/c2"
out_has "0 entries in $T/c2"
run 0 "$HK" cache clear --cache-dir="$T/c2"
out_has "removed 0 files from $T/c2"
# "--": a file whose name starts with '-' (a kernel file run by name too)
mkdir "$T/dash"
cp "$T/dir/good.json" "$T/dash/-x.json"
in_dash() { (cd "$T/dash" && "$@"); }
run 1 in_dash "$HK" check -x.json
err_has "unknown option '-x'"
run 0 in_dash "$HK" check -- -x.json
out_empty
err_empty
run 1 "$HK" check -- --help
err_has "--help: error: cannot read"
run 0 in_dash "$HK" gen --target cpu -- -x.json
out_has "out = 2 * x;"
run 0 in_dash "$HK" run --tier jit --no-cache -- -x.json "x=$T/o3.npy"
out_is '{"out": [2, 4, 6]}'
run 1 "$HK" run sum_f32 -- "x=$T/o3.npy" --n
err_has "unexpected argument '--n' (parameters are given as PARAM=VALUE)"
if command -v "${HK_CC:-cc}" >/dev/null 2>&1; then
  mkdir "$T/so"
  run 0 in_dash "$HK" build -o"$T/so/-x.so" -- -x.json
  run 0 "$HK" list --plugins "$T/so"
  out_has "twice"
fi
# unknown options, one per subcommand
for c in check gen list build cache run bench; do
  run 1 "$HK" "$c" --frob=1 x
  err_has "hk $c: unknown option '--frob=1'"
  err_has "Try 'hk $c --help'."
done
run 1 "$HK" gen -q "$T/dir/good.json"
err_has "unknown option '-q'"
run 1 "$HK" run sum_f32 "x=$T/x.npy" --t 2
err_has "ambiguous option '--t' (--tier, --threads)"
run 1 "$HK" list --json=yes
err_has "--json takes no value"
run 1 "$HK" build "$T/dir/good.json" -o "$T/n.so" --native=1
err_has "--native takes no value"
# a missing value, as each option words it
run 1 "$HK" gen "$T/dir/good.json" -o
err_has "-o needs a value"
run 1 "$HK" gen "$T/dir/good.json" --target
err_has "--target needs a value"
run 1 "$HK" build "$T/dir/good.json" -o
err_has "-o needs a file"
run 1 "$HK" cache list --cache-dir
err_has "--cache-dir needs a folder"
run 1 "$HK" run sum_f32 "x=$T/x.npy" --out
err_has "--out needs PARAM=FILE.npy"
run 1 "$HK" run sum_f32 "x=$T/x.npy" --plugins
err_has "--plugins needs a folder"
for o in backend tier n threads; do
  run 1 "$HK" run sum_f32 "x=$T/x.npy" "--$o"
  err_has "--$o needs a value"
done
run 1 "$HK" bench --min-time
err_has "--min-time needs a value"
if [ -x "$(dirname "$HK")/hk-bench" ]; then # handed on as --opt value
  run 0 "$HK" bench --ops=add --sizes=100 --variants=loop,inline \
    --min-time=0.001 --repetitions=1 --no-extras
  out_has "add "
fi
run 1 "$HK" bench extra
err_has "unexpected argument 'extra'"
# an option that takes one value, given twice: refused (the last one was
# kept without a word: build -o a.so -o b.so wrote only b.so)
run 1 "$HK" build "$T/dir/good.json" -o "$T/twice1.so" -o "$T/twice2.so"
err_has "hk build: -o is given twice"
err_has "Try 'hk build --help'."
checks=$((checks + 1))
if [ -e "$T/twice1.so" ] || [ -e "$T/twice2.so" ]; then
  echo "FAIL: hk build -o given twice wrote a file"
  fails=$((fails + 1))
fi
run 1 "$HK" gen "$T/dir/good.json" -o "$T/twice1.c" -o"$T/twice2.c"
err_has "hk gen: -o is given twice"
run 1 "$HK" gen "$T/dir/good.json" --target cpu --target=cuda
err_has "hk gen: --target is given twice"
run 1 "$HK" run sum_f32 "x=$T/x.npy" --n 6 --n=6
err_has "hk run: --n is given twice"
run 1 "$HK" run sum_f32 "x=$T/x.npy" --tier inline --tier=auto
err_has "hk run: --tier is given twice"
run 1 "$HK" run sum_f32 "x=$T/x.npy" --backend cpu --back cpu
err_has "hk run: --backend is given twice"
run 1 "$HK" run sum_f32 "x=$T/x.npy" --threads 1 --threads 2
err_has "hk run: --threads is given twice"
run 1 "$HK" cache list --cache-dir "$T/c2" --cache-dir="$T/c3"
err_has "hk cache: --cache-dir is given twice"
run 1 "$HK" check --cuda --arch sm_80 --arch=sm_90 "$T/dir/good.json"
err_has "hk check: --arch is given twice"
run 1 "$HK" bench --ops add --ops=mul
err_has "hk bench: --ops is given twice"
# the repeatable ones stay so, and a flag twice changes nothing
mkdir "$T/plug4"
run 0 "$HK" list --plugins "$T/plug2" --plugins "$T/plug4" --json --json
out_has '"name": "twice"'
run 0 "$HK" run minmax_f32 "x=$T/o3.npy" --out "lo=$T/lo3.npy" --out "hi=$T/hi3.npy" -q -q
err_empty
# the operand errors are unchanged
run 1 "$HK" gen "$T/dir/good.json" "$T/again.json"
err_has "one kernel file at a time"
run 1 "$HK" build a.json b.json -o "$T/n.so"
err_has "one kernel file at a time"
run 1 "$HK" cache list clear
err_has "unexpected argument 'clear'"
run 1 "$HK" list extra
err_has "unexpected argument 'extra'"

# ---- kernel code cannot change what it reads ------------------------------
# (tcc took `s = s + 1` on a scalar: the value then changed from element to
# element, per thread; gcc refuses it)
for body in 'y = s; s = s + 1;' 'y = x; x = 1;' 's += 1; y = x;' 'y = x; ++x;'; do
  cat >"$T/ro.json" <<EOF2
{"schema_version": 1, "name": "ro", "kind": "elementwise",
 "params": [{"name": "x", "type": "f32", "role": "in"},
            {"name": "s", "type": "f32", "role": "scalar"},
            {"name": "y", "type": "f32", "role": "out"}],
 "body": "$body"}
EOF2
  run 1 "$HK" check "$T/ro.json"
  err_has "ro.json:5:"
  err_has "assignment of read-only location"
done
# each instance compiles the same body: its error is reported once
cat >"$T/ro2.json" <<'EOF2'
{"schema_version": 1, "name": "ro2", "kind": "elementwise",
 "types": {"T": ["f32", "f64", "i32"]},
 "params": [{"name": "x", "type": "T", "role": "in"},
            {"name": "y", "type": "T", "role": "out"}],
 "body": "x = 1; y = x;"}
EOF2
run 1 "$HK" check "$T/ro2.json"
checks=$((checks + 1))
[ "$(grep -c "read-only location" "$T/err")" -eq 1 ] || {
  echo "FAIL: the instances' same error is not reported once:"
  cat "$T/err"; fails=$((fails + 1)); }
# a raw body's scalars are its own variables, as a C function's parameters
cat >"$T/rawmut.json" <<'EOF2'
{"schema_version": 1, "name": "rawmut", "kind": "raw",
 "params": [{"name": "x", "type": "f32", "role": "inout", "len": "m"},
            {"name": "m", "type": "i64", "role": "scalar"}],
 "cpu": "while (m > 0) { m = m - 1; x[m] = (float)m; }"}
EOF2
run 0 "$HK" check "$T/rawmut.json"
# a stdlib kernel's name is refused by every load, so by check too (but
# in the stdlib's own files)
cat >"$T/stdname.json" <<'EOF2'
{"schema_version": 1, "name": "add_f32", "kind": "elementwise",
 "params": [{"name": "x", "type": "f32", "role": "in"},
            {"name": "y", "type": "f32", "role": "out"}],
 "body": "y = x;"}
EOF2
run 1 "$HK" check "$T/stdname.json"
err_has "stdname.json:1:31: error: name: \"add_f32\" is a stdlib kernel"
# a len that divides by a known zero fails every call: an error in check
sed 's|"len": "m"|"len": "m / (2 - 2)"|' "$T/rawmut.json" >"$T/divz.json"
run 1 "$HK" check "$T/divz.json"
err_has "divz.json:2:69:"
err_has "len: divides by zero"
# and one that is negative whatever the scalars
sed 's|"len": "m"|"len": "2 - 3"|' "$T/rawmut.json" >"$T/negl.json"
run 1 "$HK" check "$T/negl.json"
err_has "len: is -1 whatever the scalars and n: a length or an extent cannot be negative"
# helpers (and rows and grid bodies) run for many elements at once: no
# state that outlives a call, but constant tables
for decl in 'static float c = 0;' '_Thread_local float c = 0;' 'static const float c = 2;'; do
  cat >"$T/hs.json" <<EOF2
{"schema_version": 1, "name": "hs", "kind": "elementwise",
 "params": [{"name": "x", "type": "f32", "role": "in"},
            {"name": "y", "type": "f32", "role": "out"}],
 "helpers": [{"name": "f", "returns": "float", "params": "float v",
              "body": "$decl return v * c;"}],
 "body": "y = f(x);"}
EOF2
  case $decl in
    'static const'*) run 0 "$HK" check "$T/hs.json" ;;
    *) run 1 "$HK" check "$T/hs.json"
       err_has "hs.json:5:"
       err_has "variables are not allowed here" ;;
  esac
done

# ---- small things a user meets ------------------------------------------
# suggestions: typos of a kernel or of its name without the type; nothing
# for names too short to be a typo of anything
run 1 "$HK" run softmx
err_has "did you mean 'softmax'"
run 1 "$HK" run sx
err_has "no kernel named 'sx' (hk list shows them all)"
# a whole reduction's inout result, written as (1,), is read back as its
# 0-d value: two runs accumulate
run 0 "$HK" run arange_f32 start=0 step=1 --n 6 --out "out=$T/six.npy"
run 0 "$HK" run fill_f32 value=1 --n 1 --out "out=$T/acc0.npy"
run 0 "$HK" run bias_grad_f32 --plugins "$SRC/plugins" "dout=$T/six.npy" \
  "dbias=$T/acc0.npy" --out "dbias=$T/acc1.npy"
run 0 "$HK" run bias_grad_f32 --plugins "$SRC/plugins" "dout=$T/six.npy" \
  "dbias=$T/acc1.npy"
out_is '{"dbias": [31]}'
# a size no machine holds is the user's error
run 1 "$HK" run fill_f32 value=1 --n 99999999999999999
err_has "more than this machine's memory"
# a file named twice is checked once
run 0 "$HK" check "$T/dir/good.json" "$T/dir/./good.json"
# listing into a full disk fails; listing a cache that is not there makes
# nothing
if [ -c /dev/full ]; then
  "$HK" list >/dev/full 2>"$T/err"
  got=$?
  checks=$((checks + 1))
  [ $got -eq 2 ] || { echo "FAIL: hk list >/dev/full: exit $got"; fails=$((fails + 1)); }
  err_has "cannot write to standard output"
  for a in --help --version; do
    "$HK" $a >/dev/full 2>"$T/err"
    got=$?
    checks=$((checks + 1))
    [ $got -eq 2 ] || { echo "FAIL: hk $a >/dev/full: exit $got"; fails=$((fails + 1)); }
    err_is "hk: cannot write to standard output"
  done
fi
run 0 "$HK" cache list --cache-dir "$T/no/cache/here"
out_has "no cache there"
checks=$((checks + 1))
[ ! -e "$T/no" ] || { echo "FAIL: hk cache list made the folder"; fails=$((fails + 1)); }

# ---- outputs that are not plain files -----------------------------------
mkdir -p "$T/outs"
# a symbolic link: the file it names is replaced, the link stays
run 0 "$HK" run arange_f32 start=0 step=1 --n 6 --out "out=$T/outs/real.npy"
ln -s real.npy "$T/outs/link.npy"
run 0 "$HK" run fill_f32 value=7 --n 3 --out "out=$T/outs/link.npy"
checks=$((checks + 1))
[ -L "$T/outs/link.npy" ] || { echo "FAIL: --out replaced a link by a file"; fails=$((fails + 1)); }
run 0 "$HK" run sum_f32 "x=$T/outs/real.npy"
out_is '{"out": [21]}'
# a FIFO (and so /dev/stdout) is written, not replaced by a file
mkfifo "$T/outs/fifo"
cat "$T/outs/fifo" >"$T/outs/from_fifo.npy" &
reader=$!
run 0 "$HK" gen "$T/dir/good.json" -o "$T/outs/fifo"
wait $reader
checks=$((checks + 1))
[ -p "$T/outs/fifo" ] && grep -q "hk_range__" "$T/outs/from_fifo.npy" ||
  { echo "FAIL: hk gen -o FIFO"; fails=$((fails + 1)); }
run 0 "$HK" run fill_f32 value=3 --n 2 --out "out=/dev/stdout"
out_has "NUMPY"
run 1 "$HK" run fill_f32 value=3 --n 2 --out "out=$T/outs"
err_has "it is a folder"
# the kernel file is never the output
cp "$T/dir/good.json" "$T/outs/self.json"
run 1 "$HK" gen "$T/outs/self.json" -o "$T/outs/./self.json"
err_has "is the kernel file itself"
run 1 "$HK" build "$T/outs/self.json" -o "$T/outs/self.json"
err_has "is the kernel file itself"
# nor hk run's --out: the kernel file run, or a plugin file of its folders
run 1 "$HK" run "$T/outs/self.json" "x=$T/o3.npy" --out "out=$T/outs/./self.json" \
  --tier jit --no-cache
err_is "hk run: --out out=$T/outs/./self.json is the kernel file itself; it would be overwritten"
mkdir "$T/outs/plug"
cp "$T/dir/good.json" "$T/outs/plug/twice.json"
ln -s plug/twice.json "$T/outs/plug.npy"
run 1 "$HK" run twice "x=$T/o3.npy" --plugins "$T/outs/plug" \
  --out "out=$T/outs/plug.npy" --tier jit --no-cache
err_is "hk run: --out out=$T/outs/plug.npy is $T/outs/plug/twice.json, a plugin file of --plugins $T/outs/plug; it would be overwritten"
run 1 env HK_PLUGIN_PATH="$T/outs/plug" "$HK" run twice "x=$T/o3.npy" \
  --out "out=$T/outs/plug/twice.json" --tier jit --no-cache
err_has "a plugin file of HK_PLUGIN_PATH's folder $T/outs/plug; it would be overwritten"
checks=$((checks + 1))
cmp -s "$T/dir/good.json" "$T/outs/self.json" &&
  cmp -s "$T/dir/good.json" "$T/outs/plug/twice.json" ||
  { echo "FAIL: the kernel file was changed"; fails=$((fails + 1)); }
# two outputs to one file: refused (the second rename dropped the first
# output without a word), whether the file exists or not
run 1 "$HK" run minmax_f32 "x=$T/x.npy" --out "lo=$T/outs/one.npy" \
  --out "hi=$T/outs/./one.npy"
err_is "hk run: --out lo=$T/outs/one.npy and --out hi=$T/outs/./one.npy are one file: one output would replace the other (give each its own file)"
checks=$((checks + 1))
[ -e "$T/outs/one.npy" ] && { echo "FAIL: two outputs to one file wrote it"; fails=$((fails + 1)); }
cp "$T/outs/real.npy" "$T/outs/one.npy"
cp "$T/outs/real.npy" "$T/outs/orig.npy"
run 1 "$HK" run minmax_f32 "x=$T/x.npy" --out "lo=$T/outs/link.npy" \
  --out "hi=$T/outs/real.npy"
err_has "--out lo=$T/outs/link.npy and --out hi=$T/outs/real.npy are one file"
run 1 "$HK" run minmax_f32 "x=$T/x.npy" --out "hi=$T/outs/one.npy" \
  --out "lo=$T/outs/../outs/one.npy"
err_has "--out lo=$T/outs/../outs/one.npy and --out hi=$T/outs/one.npy are one file"
checks=$((checks + 1))
cmp -s "$T/outs/orig.npy" "$T/outs/one.npy" &&
  cmp -s "$T/outs/orig.npy" "$T/outs/real.npy" ||
  { echo "FAIL: two outputs to one file changed it"; fails=$((fails + 1)); }
# several --out: one that cannot be written leaves every other alone
cp "$T/outs/real.npy" "$T/outs/keep.npy"
run 1 "$HK" run minmax_f32 "x=$T/x.npy" --out "lo=$T/outs/keep.npy" \
  --out "hi=$T/no/such/dir/hi.npy"
err_has "no --out file was changed"
cmp -s "$T/outs/real.npy" "$T/outs/keep.npy" ||
  { echo "FAIL: a failing run changed another --out file"; fails=$((fails + 1)); }
checks=$((checks + 2))
ls -a "$T/outs" | grep -q "tmp-" && { echo "FAIL: a temporary file was left"; fails=$((fails + 1)); }
# an existing file the caller may not write is refused, as `echo > FILE`
# refuses it, not replaced (the rename beside it needs only the folder's
# permission): a 0444 file, or as root (who writes any file) root's 0644
# file in a folder everyone may write, written by nobody
mkdir "$T/outs/ro"
chmod 777 "$T/outs/ro"
cp "$T/outs/real.npy" "$T/outs/ro/ro.npy"
as_caller=
if [ "$(id -u)" -ne 0 ]; then
  chmod 444 "$T/outs/ro/ro.npy"
elif command -v setpriv >/dev/null 2>&1 && id nobody >/dev/null 2>&1; then
  chmod 711 "$T" # for nobody to reach the folder and the inputs
  as_caller="setpriv --reuid=$(id -u nobody) --regid=$(id -g nobody) --clear-groups"
  $as_caller "$HK" --version >/dev/null 2>&1 || as_caller=skip
else
  as_caller=skip
fi
if [ "$as_caller" = skip ]; then
  echo "SKIP: an unwritable --out file (as root this needs setpriv and a user nobody who can run $HK)"
else
  run 1 $as_caller "$HK" run fill_f32 value=7 --n 3 --out "out=$T/outs/ro/ro.npy"
  err_is "hk run: --out out: $T/outs/ro/ro.npy: cannot write: Permission denied (nothing was changed)"
  checks=$((checks + 2))
  cmp -s "$T/outs/real.npy" "$T/outs/ro/ro.npy" ||
    { echo "FAIL: an unwritable --out file was replaced"; fails=$((fails + 1)); }
  ls -a "$T/outs/ro" | grep -q "tmp-" && { echo "FAIL: a temporary file was left"; fails=$((fails + 1)); }
  # hk gen -o and hk build -o write their outputs the same way
  run 1 $as_caller "$HK" gen "$T/dir/good.json" -o "$T/outs/ro/ro.npy"
  err_has "ro.npy: error: cannot write: Permission denied (nothing was changed)"
  checks=$((checks + 1))
  cmp -s "$T/outs/real.npy" "$T/outs/ro/ro.npy" ||
    { echo "FAIL: an unwritable -o file was replaced"; fails=$((fails + 1)); }
fi
chmod 700 "$T"

# ---- found by trying hk as a new user ---------------------------------------
# a grid's extent is the user's scalar: a negative one is the user's error
cat >"$T/gneg.json" <<'EOF2'
{"schema_version": 1, "name": "gneg", "kind": "grid",
 "params": [{"name": "out", "type": "f32", "role": "out", "len": "1"},
            {"name": "K", "type": "i64", "role": "scalar"}],
 "grid": {"k": "K"}, "body": "if (k == 0) out[0] = 1.0f;"}
EOF2
run 1 "$HK" run "$T/gneg.json" K=-1 --n 1
err_has "gneg: the index space's extents, (-1, 1, 1)"
err_has "hold a negative one"
# a helper named where would hide hk's where() from the kernels after it
cat >"$T/where.json" <<'EOF2'
{"schema_version": 1, "kernels": [
 {"name": "k1", "kind": "elementwise",
  "helpers": [{"name": "where", "returns": "float", "params": "float v", "body": "return v * 2;"}],
  "params": [{"name": "x", "type": "f32", "role": "in"}, {"name": "y", "type": "f32", "role": "out"}],
  "body": "y = where(x);"},
 {"name": "k2", "kind": "elementwise",
  "params": [{"name": "x", "type": "f32", "role": "in"}, {"name": "y", "type": "f32", "role": "out"}],
  "body": "y = where(x > 2, x, -x);"}]}
EOF2
run 1 "$HK" check "$T/where.json"
err_is "$T/where.json:3:24: error: kernels[0].helpers[0].name: \"where\" is hk's where(c, a, b), which kernel code may call; choose another name"
# a FIFO named like a kernel file is refused, not waited on for a writer
mkdir -p "$T/fifodir"
mkfifo "$T/fifodir/f.json"
run 1 timeout 60 "$HK" check "$T/fifodir/f.json"
err_has "f.json: error: cannot read: not a regular file"
run 1 timeout 60 "$HK" list --plugins "$T/fifodir"
err_has "f.json: error: cannot read: not a regular file"
rm -rf "$T/fifodir"
# a len's cast must not change its value: (uint8_t)n of 300 is an error,
# not C's 44
cat >"$T/lcast.json" <<'EOF2'
{"schema_version": 1, "name": "lcast", "kind": "raw", "targets": ["cpu"],
 "params": [{"name": "x", "type": "f32", "role": "in"},
            {"name": "y", "type": "f32", "role": "out", "len": "(uint8_t)n"}],
 "cpu": "for (size_t i = 0; i < (uint8_t)n; i++) y[i] = x[i];"}
EOF2
run 0 "$HK" run fill_f32 value=1 --n 300 --out "out=$T/x300.npy"
run 1 "$HK" run "$T/lcast.json" "x=$T/x300.npy"
err_has "the length of y, (uint8_t)n, is negative, too large, divides by zero or does not fit one of its casts"
run 0 "$HK" run "$T/lcast.json" "x=$T/six.npy"
out_is '{"y": [0, 1, 2, 3, 4, 5]}'
# gen and build refuse what check refuses: a body that does not compile,
# a stdlib kernel's name (nothing written)
cat >"$T/nosemi.json" <<'EOF2'
{"schema_version": 1, "name": "nosemi", "kind": "elementwise",
 "params": [{"name": "x", "type": "f32", "role": "in"},
            {"name": "y", "type": "f32", "role": "out"}],
 "body": "y = x"}
EOF2
run 1 "$HK" gen "$T/nosemi.json" -o "$T/nosemi.c"
err_has "nosemi.json:4:11: error: body: ';' expected"
run 1 "$HK" build "$T/stdname.json" -o "$T/stdname.so"
err_is "$T/stdname.json:1:31: error: name: \"add_f32\" is a stdlib kernel; a user kernel cannot take its name (a plugin folder refuses this file)"
checks=$((checks + 1))
[ ! -e "$T/nosemi.c" ] && [ ! -e "$T/stdname.so" ] ||
  { echo "FAIL: gen or build wrote output for an invalid file"; fails=$((fails + 1)); }
# one folder given under two spellings is loaded once, not clashing with
# itself
mkdir -p "$T/pl2"
cp "$SRC/plugins/saxpy.json" "$T/pl2/"
run 0 "$HK" list --plugins "$T/pl2" --plugins "$T/pl2/./" --plugins "$T/pl2/"
out_has "saxpy"
# a kernel file whose name holds ':' is run by its path (FILE:NAME when
# no such file)
cp "$SRC/plugins/saxpy.json" "$T/a:b.json"
run 0 "$HK" run "$T/a:b.json" alpha=2 "x=$T/six.npy" "y=$T/six.npy"
out_is '{"y": [0, 3, 6, 9, 12, 15]}'
run 0 "$HK" run "$T/a:b.json:saxpy" alpha=2 "x=$T/six.npy" "y=$T/six.npy"
out_is '{"y": [0, 3, 6, 9, 12, 15]}'

# every kernel of a file has its problems said, the accumulator's size
# too (an earlier kernel's error kept later kernels from being checked)
cat >"$T/twoacc.json" <<'EOF2'
{"schema_version": 1, "kernels": [
 {"name": "big1", "kind": "reduction",
  "params": [{"name": "x", "type": "f32", "role": "in"}, {"name": "o", "type": "f64", "role": "out"}],
  "acc": {"p": "f64", "q": "f64", "r": "f64", "s": "f64", "t": "i8"},
  "identity": {"p": "0", "q": "0", "r": "0", "s": "0", "t": "0"},
  "map": {"p": "x", "q": "x", "r": "x", "s": "x", "t": "0"},
  "combine": "a = b;", "finalize": "o = acc.p;"},
 {"name": "big2", "kind": "reduction",
  "params": [{"name": "x", "type": "f32", "role": "in"}, {"name": "o", "type": "f64", "role": "out"}],
  "acc": {"p": "f64", "q": "f64", "r": "f64", "s": "f64", "t": "i8"},
  "identity": {"p": "0", "q": "0", "r": "0", "s": "0", "t": "0"},
  "map": {"p": "x", "q": "x", "r": "x", "s": "x", "t": "0"},
  "combine": "a = b;", "finalize": "o = acc.p;"}]}
EOF2
run 1 "$HK" check "$T/twoacc.json"
err_has "twoacc.json:4:10: error: kernels[0].acc: the accumulator takes 40 bytes; at most 32"
err_has "twoacc.json:10:10: error: kernels[1].acc: the accumulator takes 40 bytes; at most 32"

# a prebuilt plugin holds CPU code only: its kernels list target cpu,
# whatever the file's targets
if command -v "${HK_CC:-cc}" >/dev/null 2>&1; then
  mkdir -m 700 "$T/saxso"
  run 0 "$HK" build "$SRC/plugins/saxpy.json" -o "$T/saxso/saxpy.so"
  run 0 "$HK" list --plugins "$T/saxso"
  checks=$((checks + 1))
  grep -q "^saxpy_f32  *elementwise  *cpu  *so  *so " "$T/out" ||
    { echo "FAIL: hk list: a prebuilt saxpy_f32 is not target cpu, origin so"; fails=$((fails + 1)); }
fi

# the environment variables libhk reads: the library ignores a value it
# cannot use; the commands that would use it refuse it, naming it and
# what it expects (HK_THREADS and HK_PAR_MIN where kernels run, HK_JOBS
# where they compile); --threads N sets the count instead
for v in abc 0 257 -1 " 2"; do
  run 1 env HK_THREADS="$v" "$HK" run fill_f32 value=1 --n 2
  err_has "hk run: HK_THREADS='$v': expected a whole number from 1 to 256 (unset it to use every CPU)"
done
run 0 env HK_THREADS=abc "$HK" run fill_f32 value=1 --n 2 --threads 2 -q
run 0 env HK_THREADS=abc "$HK" list
run 0 env HK_THREADS=abc HK_JOBS=x HK_PAR_MIN=x "$HK" cache --cache-dir="$T/c2" list
run 1 env HK_JOBS=1x "$HK" check "$SRC/plugins/saxpy.json"
err_has "hk check: HK_JOBS='1x': expected a whole number from 1 to 256"
run 1 env HK_PAR_MIN=100,x "$HK" run fill_f32 value=1 --n 2
err_has "hk run: HK_PAR_MIN='100,x': expected N or CHEAP,HEAVY"
run 0 env HK_THREADS=2 HK_JOBS=256 HK_PAR_MIN=100,50 "$HK" check "$SRC/plugins/saxpy.json"
run 0 env HK_THREADS= HK_PAR_MIN= "$HK" check "$SRC/plugins/saxpy.json"

# hk check --cuda: what CUDA C++ alone refuses (an implicit void *
# conversion, valid C) is found by NVRTC, located in the kernel file; a
# clean file passes; --arch needs --cuda and a real name
cat >"$T/voidrow.json" <<'EOF'
{"schema_version": 1, "name": "voidrow", "kind": "rows",
 "params": [{"name": "x", "type": "f32", "role": "in"},
            {"name": "y", "type": "f32", "role": "out"}],
 "body": ["float *t = (void *)y;",
          "t[0] = x[0];"]}
EOF
run 0 "$HK" check "$T/voidrow.json"
run 1 "$HK" check --arch sm_80 "$T/voidrow.json"
err_has "hk check: --arch is for --cuda"
run 1 "$HK" check --cuda --arch 80 "$T/voidrow.json"
err_has "hk check: --arch 80: expected compute_ or sm_ and the compute capability's digits"
"$HK" check --cuda "$SRC/plugins/saxpy.json" >"$T/out" 2>"$T/err"
got=$?
if [ "$got" -eq 2 ]; then
  echo "NOTE: hk check --cuda not checked: $(cat "$T/err")"
else
  checks=$((checks + 1))
  if [ "$got" -ne 0 ]; then
    echo "FAIL: hk check --cuda saxpy.json: exit $got"
    sed 's/^/  stderr: /' "$T/err" | head -5
    fails=$((fails + 1))
  fi
  run 1 "$HK" check --cuda --arch sm_10 "$T/voidrow.json"
  err_has "hk check: --arch sm_10: NVRTC"
  err_has "does not compile for it"
  run 1 "$HK" check --cuda --arch sm_90 "$T/voidrow.json"
  err_has "voidrow.json:4:23: error: body: a value of type \"void *\" cannot be used to initialize an entity of type \"float *\" (NVRTC)"
fi

# A signal during hk build (SIGTERM here: a background job of a script
# ignores SIGINT): the compilers, process groups of their own that the
# terminal's signal would not reach, are killed, their build folders
# removed, and hk ends by the signal (128 + 15); nothing is written.
if command -v cc >/dev/null 2>&1; then
  mkdir "$T/intr"
  TMPDIR="$T/intr" "$HK" build "$SRC/stdlib_kernels/reductions.json" \
    -o "$T/intr.so" >"$T/out" 2>"$T/err" &
  pid=$!
  i=0 # until a compiler runs (its build folder is there): at most 30 s
  while [ $i -lt 300 ] && [ -z "$(ls -A "$T/intr")" ]; do
    sleep 0.1
    i=$((i + 1))
  done
  sleep 0.5
  kill -TERM $pid
  wait $pid
  got=$?
  checks=$((checks + 3))
  if [ "$got" -ne 143 ]; then
    echo "FAIL: hk build after SIGTERM: exit $got, expected 143"
    fails=$((fails + 1))
  fi
  i=0 # the killed compilers may take a moment to go
  while [ $i -lt 50 ] && pgrep -f "$T/intr/" >/dev/null 2>&1; do
    sleep 0.1
    i=$((i + 1))
  done
  if pgrep -f "$T/intr/" >/dev/null 2>&1 || [ -n "$(ls -A "$T/intr")" ]; then
    echo "FAIL: hk build after SIGTERM left compilers or files behind:"
    pgrep -af "$T/intr/" | cut -c1-200
    ls -A "$T/intr"
    fails=$((fails + 1))
  fi
  if [ -e "$T/intr.so" ]; then
    echo "FAIL: hk build after SIGTERM wrote its output"
    fails=$((fails + 1))
  fi
  err_is "hk build: interrupted"
fi

if [ "$fails" -ne 0 ]; then
  echo "$fails of $checks checks failed"
  exit 1
fi
echo "$checks checks passed"
