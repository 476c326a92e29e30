#!/bin/sh
# demo.sh — the README's main job: install what is missing, build, and show
# hk working: the stdlib compiled from kernel files, stdlib and plugin
# kernels run on .npy files (on the GPU too, where there is one), a located
# error in a bad kernel file, and the inline-vs-dynamic table.
set -eu
cd "$(dirname "$0")/.."
tools/setup.sh

JOBS=$(nproc 2>/dev/null || echo 2)
echo "== building hk (build/)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$JOBS" >build/build.log 2>&1 || { tail -30 build/build.log; exit 1; }
HK=build/hk
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

say() { printf '\n$ %s\n' "$*"; }

echo
echo "== the stdlib: kernel files in stdlib_kernels/, generated into libhk"
say hk list
$HK list | head -6
echo "... $($HK list | tail -n +2 | wc -l) kernels in all"
say 'hk check stdlib_kernels/*.json'
$HK check stdlib_kernels/*.json && echo "(silent: all valid)"

echo
echo "== running kernels on .npy files (inputs made by hk itself)"
say hk run arange_f32 start=0 step=0.5 --n 8 --out out=x.npy
$HK run arange_f32 start=0 step=0.5 --n 8 --out out="$tmp/x.npy"
say hk run fill_f32 value=2 --n 8 --out out=y.npy
$HK run fill_f32 value=2 --n 8 --out out="$tmp/y.npy"
say hk run add_f32 x=x.npy y=y.npy
$HK run add_f32 x="$tmp/x.npy" y="$tmp/y.npy"
say hk run gelu_f32 x=x.npy
$HK run gelu_f32 x="$tmp/x.npy"
say hk run sum_f32 x=x.npy
$HK run sum_f32 x="$tmp/x.npy"
say hk run softmax_f32 x=x.npy    "# a rows kernel run flat: one row of 8"
$HK run softmax_f32 x="$tmp/x.npy"

echo
echo "== plugin kernels: kernel files dropped into a folder (plugins/), compiled"
echo "   at run time (libtcc at once, the system compiler in the background,"
echo "   cached on disk for the next run)"
say hk list --plugins plugins '| grep json'
$HK list --plugins plugins | awk 'NR == 1 || $4 == "json"' | cut -c1-110
say hk run saxpy_f32 --plugins plugins alpha=2 x=x.npy y=y.npy
$HK run saxpy_f32 --plugins plugins alpha=2 x="$tmp/x.npy" y="$tmp/y.npy"
say hk run huber_loss_f32 --plugins plugins pred=x.npy target=y.npy delta=1
$HK run huber_loss_f32 --plugins plugins pred="$tmp/x.npy" target="$tmp/y.npy" delta=1
say hk run clamp_f32 --plugins plugins x=x.npy lo=1 hi=3 --tier jit
$HK run clamp_f32 --plugins plugins x="$tmp/x.npy" lo=1 hi=3 --tier jit

echo
echo "== the GPU: the same kernels with --backend cuda (where there is one)"
say hk run add_f32 x=x.npy y=y.npy --backend cuda
if ! $HK run add_f32 x="$tmp/x.npy" y="$tmp/y.npy" --backend cuda 2>"$tmp/gpu.err"; then
  sed 's/^/  /' "$tmp/gpu.err"
  echo "  (no GPU here: every kernel runs on the CPU; tools/gpu_check.sh on a GPU machine)"
else
  say hk run saxpy_f32 --plugins plugins --backend cuda alpha=2 x=x.npy y=y.npy
  $HK run saxpy_f32 --plugins plugins --backend cuda alpha=2 x="$tmp/x.npy" y="$tmp/y.npy"
fi

echo
echo "== a malformed kernel file gets located errors (and exit status 1)"
cat >"$tmp/bad.json" <<'JSON'
{
  "schema_version": 1,
  "name": "saxpy",
  "kind": "elementwise",
  "params": [
    {"name": "alpha", "type": "f23", "role": "scalar"},
    {"name": "x", "type": "f32", "role": "in"},
    {"name": "y", "type": "f32", "role": "inout"}
  ],
  "body": "y = alpha * x + y; printf(\"hi\");"
}
JSON
say hk check bad.json
$HK check "$tmp/bad.json" 2>&1 | sed "s|$tmp/||" || true

echo
echo "== inline against dynamic: the same kernel called every way (hk bench --quick)"
echo "   loop: hand-written C; inline: hk_add_f32...; registry: the same through"
echo "   hk_call; jit/opt: a plugin kernel file on libtcc / the system compiler;"
echo "   naive: lookup + marshalling + dlsym per call; full run: hk bench"
$HK bench --quick --ops add,saxpy,sum,empty --sizes 1000,1048576 \
  --variants loop,inline,registry,jit,opt,naive --no-numpy --no-extras \
  2>"$tmp/bench.err" || { cat "$tmp/bench.err" >&2; exit 1; }
