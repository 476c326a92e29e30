#!/bin/sh
# cli_numpy_check.sh HK — hk run against NumPy on random data: results, dtypes
# and shapes of --out files, and the JSON printed on stdout. Skipped (77)
# when NumPy is not installed.
set -eu
HK=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
PY=${HK_NUMPY_PYTHON:-/usr/bin/python3}
if ! "$PY" -c 'import numpy' 2>/dev/null; then
  echo "SKIPPED: NumPy not available for $PY (Debian: python3-numpy)"
  exit 77
fi
HK_SOURCE_DIR=${HK_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
export HK_SOURCE_DIR
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export HK_CACHE_DIR="$T/cache"
cd "$T"
"$PY" - "$HK" <<'PY'
import json, os, subprocess, sys
import numpy as np

hk = sys.argv[1]
rng = np.random.default_rng(7)
fails = 0

def run(*args):
    p = subprocess.run([hk, "run", *args], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"hk run {' '.join(args)} failed: {p.stderr}")
    return p.stdout

def check(name, got, want, rtol=0.0, atol=0.0):
    global fails
    ok = got.shape == want.shape and got.dtype == want.dtype and (
        np.array_equal(got, want, equal_nan=True) if rtol == 0 and atol == 0
        else np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True))
    if not ok:
        fails += 1
        err = np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))) \
            if got.shape == want.shape else None
        print(f"FAIL {name}: shape {got.shape} vs {want.shape}, dtype "
              f"{got.dtype} vs {want.dtype}, max abs err {err}")

for dt, sfx in ((np.float32, "f32"), (np.float64, "f64")):
    a = rng.standard_normal((37, 29)).astype(dt)      # 2-D: shape kept
    b = rng.standard_normal((37, 29)).astype(dt)
    np.save("a.npy", a); np.save("b.npy", b)
    for op, ref in (("add", a + b), ("sub", a - b), ("mul", a * b),
                    ("div", a / b), ("maximum", np.maximum(a, b)),
                    ("minimum", np.minimum(a, b))):
        run(f"{op}_{sfx}", "x=a.npy", "y=b.npy", "--out", "out=o.npy")
        check(f"{op}_{sfx}", np.load("o.npy"), ref)
    for op, ref, tol in (("neg", -a, 0), ("abs", np.abs(a), 0),
                         ("relu", np.where(a < 0, dt(0), a), 0),
                         ("exp", np.exp(a), 4e-7), ("tanh", np.tanh(a), 4e-7),
                         ("sigmoid", 1 / (1 + np.exp(-a)), 4e-7),
                         ("sqrt", np.sqrt(np.abs(a)), 0),
                         ("log", np.log(np.abs(a) + 1), 4e-7)):
        x = np.abs(a) + 1 if op == "log" else np.abs(a) if op == "sqrt" else a
        np.save("x.npy", x.astype(dt))
        run(f"{op}_{sfx}", "x=x.npy", "--out", "out=o.npy")
        check(f"{op}_{sfx}", np.load("o.npy"), ref.astype(dt), rtol=tol)
    run(f"scale_{sfx}", "x=a.npy", "alpha=0.25", "--out", "out=o.npy")
    check(f"scale_{sfx}", np.load("o.npy"), (a * dt(0.25)).astype(dt))
    run(f"axpy_{sfx}", "alpha=3", "x=a.npy", "y=b.npy", "--out", "y=o.npy")
    check(f"axpy_{sfx}", np.load("o.npy"), (dt(3) * a + b).astype(dt))
    # reductions: printed on stdout, compared with float64 NumPy
    flat = a.ravel()
    for op, ref in (("sum", flat.astype(np.float64).sum()),
                    ("mean", flat.astype(np.float64).mean()),
                    ("max", flat.max()), ("min", flat.min()),
                    ("norm2", np.sqrt((flat.astype(np.float64) ** 2).sum()))):
        got = json.loads(run(f"{op}_{sfx}", "x=a.npy"))["out"]
        if len(got) != 1 or not np.isclose(got[0], ref, rtol=1e-5 if sfx == "f32" else 1e-12):
            fails += 1
            print(f"FAIL {op}_{sfx}: {got} vs {ref}")
    got = json.loads(run(f"dot_{sfx}", "x=a.npy", "y=b.npy"))["out"][0]
    want = float(np.dot(a.ravel().astype(np.float64), b.ravel().astype(np.float64)))
    if not np.isclose(got, want, rtol=1e-4 if sfx == "f32" else 1e-12):
        fails += 1
        print(f"FAIL dot_{sfx}: {got} vs {want}")
    # rows kernels: along the last axis, every row in one call
    def softmax_ref(x):
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
    run(f"softmax_{sfx}", "x=a.npy", "--out", "y=o.npy")
    check(f"softmax_{sfx}", np.load("o.npy"), softmax_ref(a).astype(dt), rtol=2e-6)
    run(f"log_softmax_{sfx}", "x=a.npy", "--out", "y=o.npy")
    m = a.max(axis=-1, keepdims=True)
    lse = np.log(np.exp(a - m).sum(axis=-1, keepdims=True))
    check(f"log_softmax_{sfx}", np.load("o.npy"), (a - m - lse).astype(dt),
          rtol=2e-6, atol=2e-6)
    # a transposed (Fortran order) 3-D input: its contiguous copy's result
    t = np.asfortranarray(rng.standard_normal((4, 6, 33)).astype(dt))
    np.save("t.npy", t)
    run(f"softmax_{sfx}", "x=t.npy", "--out", "y=o.npy")
    check(f"softmax_{sfx} fortran 3-d", np.load("o.npy"), softmax_ref(t).astype(dt), rtol=2e-6)
    # --axis: rows along another axis; a one-a-row output without it
    for ax in (0, 1, -2):
        run(f"softmax_{sfx}", "x=t.npy", "--axis", str(ax), "--out", "y=o.npy")
        e = np.exp(t - t.max(axis=ax, keepdims=True))
        check(f"softmax_{sfx} axis {ax}", np.load("o.npy"),
              (e / e.sum(axis=ax, keepdims=True)).astype(dt), rtol=2e-6)
    w6 = np.ones(6, dt); b6 = np.zeros(6, dt); np.save("w6.npy", w6); np.save("b6.npy", b6)
    run(f"layernorm_{sfx}", "x=t.npy", "weight=w6.npy", "bias=b6.npy", "eps=1e-5",
        "--axis", "1", "--out", "y=o.npy", "--out", "mean=m.npy")
    check(f"layernorm_{sfx} axis 1 mean", np.load("m.npy"),
          t.astype(np.float64).mean(axis=1).astype(dt), rtol=1e-5, atol=1e-6)
    # one row (1-D): mean and rstd are 0-d
    w = rng.standard_normal(29).astype(dt); bb = rng.standard_normal(29).astype(dt)
    np.save("w.npy", w); np.save("bb.npy", bb)
    for x in (a, a[5]):
        np.save("x.npy", np.ascontiguousarray(x))
        run(f"layernorm_{sfx}", "x=x.npy", "weight=w.npy", "bias=bb.npy", "eps=1e-5",
            "--out", "y=o.npy", "--out", "mean=m.npy", "--out", "rstd=s.npy")
        x64 = x.astype(np.float64)
        mu = x64.mean(axis=-1); rs = 1 / np.sqrt(x64.var(axis=-1) + 1e-5)
        want = (x64 - mu[..., None]) * rs[..., None] * w + bb
        check(f"layernorm_{sfx} {x.shape}", np.load("o.npy"), want.astype(dt), rtol=1e-5, atol=1e-5)
        check(f"layernorm_{sfx} {x.shape} mean", np.load("m.npy"), np.asarray(mu).astype(dt), rtol=1e-5, atol=1e-6)
        check(f"layernorm_{sfx} {x.shape} rstd", np.load("s.npy"), np.asarray(rs).astype(dt), rtol=1e-5)
    p = subprocess.run([hk, "run", f"layernorm_{sfx}", "x=a.npy", "weight=a.npy",
                        "bias=bb.npy", "eps=1"], capture_output=True, text=True)
    if p.returncode != 1 or "parameter 'weight': the array's shape is (37, 29); with " \
            "parameter 'x' of shape (37, 29) (rows of 29) it must be (29,)" not in p.stderr:
        fails += 1
        print(f"FAIL layernorm_{sfx} with a 2-D weight: exit {p.returncode}: {p.stderr}")

for dt, sfx in ((np.int32, "i32"), (np.int64, "i64")):
    a = rng.integers(-1000, 1000, 1001).astype(dt)
    b = rng.integers(-1000, 1000, 1001).astype(dt)
    np.save("a.npy", a); np.save("b.npy", b)
    for op, ref in (("add", a + b), ("sub", a - b), ("mul", a * b)):
        run(f"{op}_{sfx}", "x=a.npy", "y=b.npy", "--out", "out=o.npy")
        check(f"{op}_{sfx}", np.load("o.npy"), ref)

# a 0-d input stays 0-d; a Fortran-ordered 1-D array is accepted
np.save("s.npy", np.array(2.5, dtype=np.float32))
run("neg_f32", "x=s.npy", "--out", "out=o.npy")
check("0-d", np.load("o.npy"), np.array(-2.5, dtype=np.float32))
np.save("f.npy", np.asfortranarray(np.arange(5, dtype=np.float32)))
run("neg_f32", "x=f.npy", "--out", "out=o.npy")
check("fortran 1-d", np.load("o.npy"), -np.arange(5, dtype=np.float32))
# a Fortran-ordered 2-D array gives what its C-order copy gives
f2 = np.asfortranarray(rng.standard_normal((3, 4)).astype(np.float32))
np.save("f2.npy", f2)
run("neg_f32", "x=f2.npy", "--out", "out=o.npy")
check("fortran 2-d", np.load("o.npy"), -f2)

# ---- arrays: broadcasting, strides, axis reductions, dtype dispatch ----
def fails_with(args, text):
    global fails
    p = subprocess.run([hk, "run", *args], capture_output=True, text=True)
    if p.returncode != 1 or text not in p.stderr:
        fails += 1
        print(f"FAIL hk run {' '.join(args)}: exit {p.returncode}, wanted 1 "
              f"with '{text}': {p.stderr}")

for sx, sy in (((3, 4), (4,)), ((4, 6, 8), (8,)), ((37, 1), (1, 29)),
               ((0, 4), (4,)), ((5, 1, 3), (1, 2, 1)), ((), (2, 3))):
    x = rng.standard_normal(sx).astype(np.float32)
    y = rng.standard_normal(sy).astype(np.float32)
    np.save("x.npy", x); np.save("y.npy", y)
    for op, ref in (("add", x + y), ("sub", x - y), ("mul", x * y)):
        run(op, "x=x.npy", "y=y.npy", "--out", "out=o.npy")
        check(f"{op} {sx} {sy}", np.load("o.npy"), ref)
# transposed (Fortran order) input broadcast against a row
x = np.asfortranarray(rng.standard_normal((50, 70)))
y = rng.standard_normal(70)
np.save("x.npy", x); np.save("y.npy", y)
run("add", "x=x.npy", "y=y.npy", "--out", "out=o.npy")
check("add fortran+row f64", np.load("o.npy"), x + y)
fails_with(["add", "x=x.npy", "y=x.npy", "--out", "out=o.npy", "--axis", "0"],
           "only reductions take axes (and rows kernels one, their rows')")
# axis reductions against NumPy, keepdims, negative and several axes
x = rng.standard_normal((6, 7, 8)).astype(np.float32)
np.save("x.npy", x)
# a whole reduction's result is 0-d, as NumPy's (check compares shapes),
# with or without --axis and for a 0-d input too
for extra in ([], ["--axis", "0,1,2"]):
    run("sum", "x=x.npy", *extra, "--out", "out=o.npy")
    check(f"sum whole {extra}", np.load("o.npy"),
          np.sum(x.astype(np.float64)).astype(np.float32), rtol=1e-5)
np.save("s0.npy", np.float32(2.5))
run("sum", "x=s0.npy", "--out", "out=o.npy")
check("sum of 0-d", np.load("o.npy"), np.array(2.5, np.float32))
for axes in ((0,), (1,), (2,), (-1,), (0, 2), (0, 1, 2), (-3, -2)):
    spec = ",".join(map(str, axes))
    for kd in (False, True):
        extra = ["--keepdims"] if kd else []
        for op, f in (("sum", np.sum), ("max", np.max), ("min", np.min),
                      ("mean", np.mean)):
            run(op, "x=x.npy", "--axis", spec, *extra, "--out", "out=o.npy")
            want = f(x.astype(np.float64), axis=axes, keepdims=kd).astype(np.float32)
            check(f"{op} axis={spec} keepdims={kd}", np.load("o.npy"), want,
                  rtol=1e-5, atol=1e-5)
# hk run says each output's shape on stderr, as Python writes a tuple
for axes, kd in (((0, 2), False), ((1,), True), ((0, 1, 2), False)):
    spec = ",".join(map(str, axes))
    p = subprocess.run([hk, "run", "sum", "x=x.npy", "--axis", spec,
                        *(["--keepdims"] if kd else []), "--out", "out=o.npy"],
                       capture_output=True, text=True)
    shape = x.sum(axis=axes, keepdims=kd).shape
    said = f"hk run: out: shape {shape}, f32, written to o.npy\n"
    if p.returncode != 0 or p.stderr != said:
        fails += 1
        print(f"FAIL: sum axis={spec} keepdims={kd} said {p.stderr!r}, "
              f"expected {said!r}")
# per-row max printed as nested lists (keepdims: shape (6, 7, 1))
out = json.loads(run("max_f32", "x=x.npy", "--axis", "-1", "--keepdims"))
check("max printed", np.array(out["out"], dtype=np.float32),
      x.max(axis=-1, keepdims=True))
# a 0-sized axis: sum is 0, max is -inf
z = np.zeros((3, 0), dtype=np.float32)
np.save("z.npy", z)
run("sum", "x=z.npy", "--axis", "1", "--out", "out=o.npy")
check("sum over empty axis", np.load("o.npy"), z.sum(axis=1))
fails_with(["sum", "x=x.npy", "--axis", "3"], "axis 3 is out of range")
fails_with(["sum", "x=x.npy", "--axis", "1,-2"], "given twice")
fails_with(["sum", "x=x.npy", "--axis", "x"], "--axis: expected axes")
# the instance from the files' dtypes; mixed dtypes are refused, naming one
a = rng.standard_normal(10).astype(np.float32)
np.save("a32.npy", a); np.save("a64.npy", a.astype(np.float64))
np.save("a16.npy", a.astype(np.int16))
run("neg", "x=a64.npy", "--out", "out=o.npy")
check("neg picks f64", np.load("o.npy"), -a.astype(np.float64))
fails_with(["add", "x=a32.npy", "y=a64.npy"],
           "no instance takes x=a32.npy (f32), y=a64.npy (f64) together")
fails_with(["neg", "x=a16.npy"], "x=a16.npy holds i16; no instance of neg takes it")
# a dtype hk has no type for is named as NumPy would, not just refused
np.save("abe.npy", a.astype(">f4")); np.save("ac.npy", a.astype(np.complex64))
fails_with(["neg", "x=abe.npy"],
           "x=abe.npy holds big-endian float32 ('>f4'), which is no hk type")
fails_with(["neg", "x=ac.npy"], "x=ac.npy holds complex64 ('<c8'), which is no hk type")

# ---- 16-bit floats and bools ----
h = rng.standard_normal((4, 5)).astype(np.float16)
np.save("h.npy", h)
run("gelu", "x=h.npy", "--out", "out=o.npy")          # gelu_f16, from the dtype
got = np.load("o.npy")
want = (0.5 * h.astype(np.float32) * (1 + np.tanh(np.float32(0.7978845608028654) *
        (h.astype(np.float32) + np.float32(0.044715) * h.astype(np.float32) ** 3)))).astype(np.float16)
check("gelu f16", got, want, rtol=2e-3, atol=2e-3)
run("add", "x=h.npy", "y=h.npy", "--out", "out=o.npy")
check("add f16", np.load("o.npy"), h + h)
run("sum", "x=h.npy", "--axis", "1", "--out", "out=o.npy")
check("sum f16 axis 1", np.load("o.npy"), h.astype(np.float32).sum(axis=1).astype(np.float16),
      rtol=2e-3, atol=2e-3)
b = rng.standard_normal(7) > 0
np.save("b.npy", b)
run("logical_not", "x=b.npy", "--out", "out=o.npy")
check("logical_not bool", np.load("o.npy"), ~b)
out = json.loads(run("isnan", "x=h.npy"))
check("isnan printed", np.array(out["out"]), np.isnan(h))
# bf16 as <u2 with --as bf16: the upper halves of float32s that are exact
f = np.array([0.0, 1.0, -2.5, 3.140625, 1e30], dtype=np.float32)
u = (f.view(np.uint32) >> 16).astype(np.uint16)
np.save("u.npy", u)
run("neg", "x=u.npy", "--as", "bf16", "--out", "out=o.npy")
back = (np.load("o.npy").astype(np.uint32) << 16).view(np.float32)
check("neg bf16 (--as bf16)", back, -((u.astype(np.uint32) << 16).view(np.float32)))
fails_with(["neg_bf16", "x=u.npy"], "has type bf16, but the file holds")
# by dtype: u16 has no instance of neg, bf16 has one (NumPy writes bf16
# data as <u2)
fails_with(["neg", "x=u.npy"], "if it holds bf16 bits, add --as bf16")
# a parameter the kernel does not have: said before the instances
fails_with(["sum", "y=u.npy"], "sum has no parameter 'y' (its parameters: x, out)")
fails_with(["neg", "x=u.npy", "--as", "f8"], "--as: only bf16")
out = json.loads(run("fill_f16", "value=0.1", "--n", "2"))
check("f16 scalar rounded once", np.array(out["out"], dtype=np.float16),
      np.full(2, 0.1, dtype=np.float16))

# the bias_add plugin: (B, T, C) += (C,), in place, the instance by dtype
src = os.environ.get("HK_SOURCE_DIR", "")
if src:
    acts = rng.standard_normal((2, 3, 8)).astype(np.float32)
    bias = rng.standard_normal(8).astype(np.float32)
    np.save("acts.npy", acts); np.save("bias.npy", bias)
    run("bias_add", "--plugins", os.path.join(src, "plugins"), "x=acts.npy",
        "bias=bias.npy", "--out", "x=acts.npy")
    check("bias_add plugin (B,T,C)+(C,)", np.load("acts.npy"), acts + bias)
    # raw kernels: the out (BT, OC) as its len BT * OC reads; every scalar
    # must be given (SPEC), a missing one said with the value the in
    # files' shapes give it
    inp = rng.standard_normal((6, 16)).astype(np.float32)
    w = rng.standard_normal((5, 16)).astype(np.float32)
    b = rng.standard_normal(5).astype(np.float32)
    np.save("inp.npy", inp); np.save("w.npy", w); np.save("b.npy", b)
    run("matmul_forward", "--plugins", os.path.join(src, "plugins"),
        "inp=inp.npy", "weight=w.npy", "bias=b.npy", "BT=6", "C=16", "OC=5",
        "--out", "out=mm.npy")
    check("matmul_forward plugin, out (BT, OC)", np.load("mm.npy"),
          inp @ w.T + b, rtol=1e-5, atol=1e-5)
    # the scalars agree with the counts, not the shapes (flat buffers)
    w2 = rng.standard_normal((10, 16)).astype(np.float32)
    np.save("w2.npy", w2)
    run("matmul_forward", "--plugins", os.path.join(src, "plugins"),
        "inp=inp.npy", "weight=w2.npy", "bias=b.npy", "BT=3", "C=32", "OC=5",
        "--out", "out=mm.npy")
    check("matmul_forward plugin, scalars given", np.load("mm.npy"),
          inp.reshape(3, 32) @ w2.reshape(5, 32).T + b, rtol=1e-5, atol=1e-5)
    # a file of more axes than arrays have (9): a raw kernel takes it flat
    np.save("x9.npy", np.arange(3, dtype=np.float32).reshape((1,) * 8 + (3,)))
    with open("raw9.json", "w") as f:
        f.write('{"schema_version": 1, "name": "raw9", "kind": "raw", '
                '"targets": ["cpu"], "params": [{"name": "x", "type": "f32", '
                '"role": "in"}, {"name": "y", "type": "f32", "role": "out"}],'
                ' "cpu": "for (size_t i = 0; i < n; i++) y[i] = x[i] * 2;"}')
    run("raw9.json", "x=x9.npy", "--out", "y=y9.npy", "--no-cache")
    check("raw kernel, 9 axes", np.load("y9.npy"),
          np.arange(3, dtype=np.float32).reshape((1,) * 8 + (3,)) * 2)
    p = subprocess.run([hk, "run", "matmul_forward", "--plugins",
                        os.path.join(src, "plugins"), "inp=inp.npy",
                        "weight=w.npy", "bias=b.npy", "BT=6", "C=16"],
                       capture_output=True, text=True)
    want = ("hk run: missing OC, a scalar of matmul_forward (i64): give "
            "OC=NUMBER (the in files' shapes give OC=5)\n")
    if p.returncode != 1 or p.stderr != want:
        fails += 1
        print(f"FAIL: matmul_forward without OC: exit {p.returncode}, "
              f"{p.stderr!r}")

# ---- every dtype, random shapes with 0- and 1-length axes ----
def rand_shape(nd):
    return tuple(int(rng.choice([0, 1, 1, 2, 3, 5])) for _ in range(nd))

def rand_array(shape, dt):
    if np.dtype(dt).kind == "f":
        return rng.standard_normal(shape).astype(dt)
    return rng.integers(-50, 50, shape).astype(dt)

for dt in (np.float32, np.float64, np.float16, np.int32, np.int64):
    for trial in range(6):
        nd = int(rng.integers(0, 4))
        sx = rand_shape(nd)
        # y: a suffix of x's shape, with some axes set to 1 (broadcast)
        sy = tuple(1 if rng.random() < 0.4 else d for d in sx[int(rng.integers(0, nd + 1)):])
        x, y = rand_array(sx, dt), rand_array(sy, dt)
        np.save("x.npy", x); np.save("y.npy", y)
        run("add", "x=x.npy", "y=y.npy", "--out", "out=o.npy")
        check(f"add {np.dtype(dt).name} {sx}+{sy}", np.load("o.npy"), x + y)
        if nd == 0:
            continue
        axes = tuple(sorted({int(a) for a in rng.integers(-nd, nd, int(rng.integers(1, nd + 1)))}))
        if len({a % nd for a in axes}) != len(axes):
            continue
        spec = ",".join(map(str, axes))
        kd = bool(rng.integers(0, 2))
        extra = ["--keepdims"] if kd else []
        run("sum", "x=x.npy", "--axis", spec, *extra, "--out", "out=o.npy")
        if np.dtype(dt).kind == "i":  # NumPy sums signed ints into int64, as hk
            want = x.sum(axis=axes, keepdims=kd)
            check(f"sum {np.dtype(dt).name} {sx} axis={spec}", np.load("o.npy"), want)
        else:
            want = x.astype(np.float64).sum(axis=axes, keepdims=kd).astype(dt)
            tol = 1e-2 if dt == np.float16 else 1e-5
            check(f"sum {np.dtype(dt).name} {sx} axis={spec}", np.load("o.npy"), want,
                  rtol=tol, atol=tol)

# --backend cuda: the same array calls on the GPU where there is one
x = rand_array((37, 50), np.float32)
np.save("x.npy", x)
np.save("y.npy", rand_array((50,), np.float32))
gpu = subprocess.run([hk, "run", "neg", "x=x.npy", "--backend", "cuda"],
                     capture_output=True, text=True)
if gpu.returncode != 0:
    why = gpu.stderr.strip().splitlines()[-1] if gpu.stderr.strip() else "?"
    print(f"note: GPU checks skipped ({why})")
else:
    y = np.load("y.npy")
    run("add", "x=x.npy", "y=y.npy", "--backend", "cuda", "--out", "out=o.npy")
    check("cuda add (37,50)+(50,)", np.load("o.npy"), x + y)
    np.save("f.npy", np.asfortranarray(x))
    run("mul", "x=f.npy", "y=x.npy", "--backend", "cuda", "--out", "out=o.npy")
    check("cuda mul fortran * C", np.load("o.npy"), x * x)
    run("sum", "x=f.npy", "--axis", "0", "--backend", "cuda", "--out", "out=o.npy")
    check("cuda sum axis 0", np.load("o.npy"),
          x.astype(np.float64).sum(0).astype(np.float32), rtol=1e-5, atol=1e-5)
    run("argmax", "x=x.npy", "--axis", "-1", "--keepdims", "--backend", "cuda",
        "--out", "out=o.npy")
    check("cuda argmax axis -1 keepdims", np.load("o.npy"),
          x.argmax(-1).reshape(37, 1).astype(np.int64))
    run("softmax", "x=f.npy", "--backend", "cuda", "--out", "y=o.npy")
    e = np.exp(x - x.max(-1, keepdims=True))
    check("cuda softmax fortran rows", np.load("o.npy"), e / e.sum(-1, keepdims=True),
          rtol=2e-6, atol=1e-8)
    print("hk run --backend cuda matches NumPy")

# an axis of a 0-d input (NumPy: AxisError) says that it is 0-d
np.save("zero_d.npy", np.float32(3))
fails_with(["sum_f32", "x=zero_d.npy", "--axis", "0"], "the input is 0-d")

if fails:
    raise SystemExit(f"{fails} comparisons with NumPy failed")
print("hk run matches NumPy")
PY
