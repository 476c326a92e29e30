"""User kernels: Context, Kernel.from_json/from_file, the CuPy-like sugar,
tiers, list_kernels, threads."""
import json
import os
import subprocess
import threading
import time

import numpy as np
import pytest

import hk
from conftest import ROOT

SAXPY = {
    "schema_version": 1, "name": "saxpy2", "kind": "elementwise",
    "types": {"T": ["f32", "f64"]},
    "params": [{"name": "alpha", "type": "T", "role": "scalar"},
               {"name": "x", "type": "T", "role": "in"},
               {"name": "y", "type": "T", "role": "inout"}],
    "body": "y = alpha * x + y;"}


def test_context_kernel_in_place(plugins):
    ctx = hk.Context(plugins=[plugins])
    k = ctx.kernel("saxpy")
    assert k.tier in ("jit", "opt")
    x = np.arange(1000, dtype=np.float32)
    y = np.ones(1000, np.float32)
    addr = y.ctypes.data
    assert k(2.0, x, y) is y and y.ctypes.data == addr
    np.testing.assert_array_equal(y, 2 * x + 1)
    y64 = np.ones(3)
    k(0.5, np.arange(3.0), y64)
    np.testing.assert_array_equal(y64, [1, 1.5, 2])
    k(alpha=1.0, x=x, y=y)
    np.testing.assert_array_equal(y, 3 * x + 1)
    ctx.wait()
    k(2.0, x, y)
    assert k.tier in ("opt", "jit")  # jit when no system compiler
    assert {i["name"] for i in k.instances} == {"saxpy_f32", "saxpy_f64"}
    ctx.close()


def test_opt_tier_when_ready():
    ctx = hk.Context(plugins=[])
    k = hk.Kernel.from_json(json.dumps(SAXPY), context=ctx)
    try:
        k.wait_opt()
    except hk.UnsupportedError:
        pytest.skip("no system compiler: tier opt is off")
    assert k.tier == "opt"


def test_from_file_and_reduction(plugins, tmp_path):
    k = hk.Kernel.from_file(plugins / "huber.json")
    p = np.linspace(-3, 3, 101)
    t = np.zeros(101)
    r = p - t
    ref = np.where(abs(r) <= 1, 0.5 * r * r, abs(r) - 0.5).mean()
    assert k(p, t, 1.0) == pytest.approx(ref)
    f = tmp_path / "two.json"
    two = dict(SAXPY)
    f.write_text(json.dumps({"schema_version": 1, "kernels": [
        {k_: v for k_, v in two.items() if k_ != "schema_version"},
        {k_: v for k_, v in dict(two, name="saxpy3").items()
         if k_ != "schema_version"}]}))
    a, b = hk.Kernel.from_file(f)
    assert (a.name, b.name) == ("saxpy2", "saxpy3")


def test_elementwise_kernel_sugar():
    k = hk.ElementwiseKernel("T x, T y", "T z", "z = x * x + y",
                             "squared_sum")
    x = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(k(x, x), x * x + x)
    z = np.empty(5, np.float32)
    assert k(x, x, z) is z
    s = hk.ElementwiseKernel("scalar float64 alpha, float64 x",
                             "float64 x", "x = alpha * x", "scale_inplace")
    v = np.arange(4.0)
    s(3.0, v)
    np.testing.assert_array_equal(v, [0, 3, 6, 9])
    # errors are located in the caller's strings, not in the kernel file
    # the sugar writes
    with pytest.raises(hk.KernelError) as e:
        hk.ElementwiseKernel("T x", "T z", "  z = printf(x);", "bad")
    assert e.value.field == "operation"
    assert (e.value.file, e.value.line, e.value.column) == (
        "<ElementwiseKernel bad>", 1, 7)
    assert "calls 'printf'" in e.value.message
    assert "      z = printf(x);\n          ^" in str(e.value)
    with pytest.raises(hk.KernelError) as e:
        hk.ElementwiseKernel("T x", "T z", 'z = x;\nz = "a\\tb" + nope;',
                             "bad")
    assert (e.value.field, e.value.line) == ("operation", 2)
    with pytest.raises(hk.KernelError) as e:
        hk.ElementwiseKernel("T x, T acc", "T z", "z = x", "bad")
    assert (e.value.field, e.value.line, e.value.column) == (
        "in_params", 1, 8)
    assert '"acc" is reserved' in e.value.message
    # a stdlib instance's name would find that instance, not this kernel
    with pytest.raises(hk.KernelError, match="'add_f32' is the name of a "
                       "stdlib kernel"):
        hk.ElementwiseKernel("T x", "T y", "y = x * 100;", "add_f32")
    # the sugar's own checks: located too (KernelError is a ValueError)
    with pytest.raises(hk.KernelError, match="unknown type 'float33'") as e:
        hk.ElementwiseKernel("T y,  float33 x", "T z", "z = x;")
    assert (e.value.field, e.value.line, e.value.column) == (
        "in_params", 1, 7)
    assert "    T y,  float33 x\n          ^" in str(e.value)
    with pytest.raises(hk.KernelError, match="no out param") as e:
        hk.ElementwiseKernel("T x", "", "x + 1;")
    assert (e.value.field, e.value.column) == ("out_params", 1)
    with pytest.raises(hk.KernelError, match="NUL") as e:
        hk.ElementwiseKernel("T x", "T z", "z = x;\nz = x\0;")
    assert (e.value.field, e.value.line, e.value.column) == (
        "operation", 2, 6)


def test_reduction_kernel_sugar():
    l2 = hk.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)",
                            "0", "l2norm")
    x = np.arange(12.0).reshape(3, 4)
    np.testing.assert_allclose(l2(x, axis=-1), np.sqrt((x * x).sum(-1)))
    assert l2(x) == pytest.approx(np.sqrt((x * x).sum()))
    # CuPy's reduce_type: float32 summed in float64 (the kernel's acc)
    s64 = hk.ReductionKernel("float32 x", "float32 y", "x", "a + b", "y = a",
                             "0", "sum_in_f64", reduce_type="float64")
    big = np.full(1 << 20, 0.1, np.float32)
    big[0] = 1 << 24  # float32 partial sums round away the 0.1s' digits
    want = np.float32(big.astype(np.float64).sum())
    assert s64(big) == want
    f32 = hk.ReductionKernel("float32 x", "float32 y", "x", "a + b", "y = a",
                             "0", "sum_in_f32", reduce_type="float32")
    assert f32(big) != want
    with pytest.raises(hk.KernelError) as e:
        hk.ReductionKernel("T x", "T y", "x * q", "a + b", "y = a", "0", "r")
    assert (e.value.field, e.value.line, e.value.column) == ("map_expr", 1, 5)
    with pytest.raises(hk.KernelError) as e:
        hk.ReductionKernel("T x", "T y", "x", "a + c", "y = a", "0", "r")
    assert (e.value.field, e.value.column) == ("reduce_expr", 5)
    assert e.value.file == "<ReductionKernel r>"
    # CuPy's "y = f(a)" form, which the sugar rewrites (a -> acc): located
    # in what the caller wrote, on its second line here
    with pytest.raises(hk.KernelError) as e:
        hk.ReductionKernel("T x", "T y", "x", "a + b", "  y = a +\n  qq",
                           "0", "r")
    assert (e.value.field, e.value.line, e.value.column) == (
        "post_map_expr", 2, 3)
    with pytest.raises(hk.KernelError, match="reduce_type: unknown type") \
            as e:
        hk.ReductionKernel("float32 x", "float32 y", "x", "a + b", "y = a",
                           "0", "bad", reduce_type="float128")
    assert e.value.field == "reduce_type"
    with pytest.raises(hk.KernelError, match="exactly one out param") as e:
        hk.ReductionKernel("T x", "T y, T z", "x", "a + b", "", "0", "r")
    assert (e.value.field, e.value.column) == ("out_params", 6)
    with pytest.raises(hk.KernelError, match="neutral value") as e:
        hk.ReductionKernel("T x", "T y", "x", "a + b")
    assert e.value.field == "identity"


def test_sugar_as_cupy_users_write_it():
    x = np.arange(4, dtype=np.float32)
    # numbers, NumPy types and dtypes where CuPy takes them
    s = hk.ReductionKernel("T x", "T y", "x", "a + b", "y = a", 0, "s0",
                           reduce_type=np.float64)
    assert s(x) == 6
    for t in (np.float32, "float32", [np.dtype("float32")]):
        k = hk.ElementwiseKernel("T x", "T y", "y = x * 2", "tw",
                                 types={"T": t})
        np.testing.assert_array_equal(k(x), x * 2)
    # a last line ending in a comment, without its ';'
    k = hk.ElementwiseKernel("T x", "T y", "y = x * 2 // twice", "cm")
    np.testing.assert_array_equal(k(x), x * 2)
    with pytest.raises(hk.KernelError, match="'U' is no placeholder") as e:
        hk.ElementwiseKernel("T x", "T y", "y = x", "tu", types={"U": "f32"})
    assert e.value.field == "types"
    # a stdlib kernel's name: located at the name argument
    with pytest.raises(hk.KernelError, match="relu_f32.*is a stdlib") as e:
        hk.ElementwiseKernel("T x", "T y", "y = x", "relu")
    assert (e.value.field, e.value.line, e.value.column) == ("name", 1, 1)
    # CuPy's post_map_expr is "y = f(a)"; a bare a or statements are not
    with pytest.raises(hk.KernelError, match="'a' is the reduced value") as e:
        hk.ReductionKernel("T x", "T y", "x", "a + b", "sqrt(a)", "0", "p")
    assert (e.value.field, e.value.column) == ("post_map_expr", 6)
    with pytest.raises(hk.KernelError, match="one expression") as e:
        hk.ReductionKernel("T x", "T y", "x", "a + b", "T t = a; y = t", "0",
                           "p")
    assert (e.value.field, e.value.column) == ("post_map_expr", 8)
    # max is fmax here
    with pytest.raises(hk.KernelError, match="here: fmax"):
        hk.ElementwiseKernel("T x", "T y", "y = max(x, 0)", "mx")


def test_sugar_out_params_read_before_written():
    # CuPy's y += x accumulates into the array passed in; hk's out starts
    # at 0: refused, located, rather than a silently different answer
    with pytest.raises(hk.KernelError, match="reads out param 'y'") as e:
        hk.ElementwiseKernel("T x", "T y", "z_ = 1.0;\n  y += x", "acc1")
    assert (e.value.field, e.value.line, e.value.column) == (
        "operation", 2, 3)
    # assigned from itself: read first
    with pytest.raises(hk.KernelError, match="reads out param 'y'") as e:
        hk.ElementwiseKernel("T x", "T y", "y = 2 * y + x", "acc4")
    assert (e.value.field, e.value.column) == ("operation", 9)
    # assigned first, or inout: fine
    k = hk.ElementwiseKernel("T x", "T y", "y = x; y += 1 // y += 2",
                             "acc2")
    np.testing.assert_array_equal(k(np.zeros(2)), np.ones(2))
    k = hk.ElementwiseKernel("T x, T y", "T y", "y += x", "acc3")
    y = np.ones(3)
    k(np.ones(3), y)
    np.testing.assert_array_equal(y, np.full(3, 2.0))


def test_sugar_preamble():
    pre = ("#define SCALE 3\n"
           "__device__ float sq(float v) { return v * v; }  /* { */\n"
           "__device__ inline float cube(float v) {\n"
           "    return sq(v) * v * SCALE;\n"
           "}\n")
    k = hk.ElementwiseKernel("float32 x", "float32 y", "y = cube(x) + sq(x)",
                             "pre1", preamble=pre)
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(k(x), x ** 3 * 3 + x * x)
    r = hk.ReductionKernel("T x", "T y", "sq(x)", "a + b", "y = a", "0",
                           "pre2", preamble="double sq(double v) "
                           "{ return v * v; }")
    assert r(np.arange(4.0)) == 14
    # errors in a helper: located in the preamble
    with pytest.raises(hk.KernelError, match="undefined_q") as e:
        hk.ElementwiseKernel("float32 x", "float32 y", "y = f(x)", "pre3",
                             preamble="__device__ float f(float v) {\n"
                             "  return v + undefined_q;\n}")
    assert (e.value.field, e.value.line, e.value.column) == (
        "preamble", 2, 14)
    with pytest.raises(hk.KernelError, match="templates") as e:
        hk.ElementwiseKernel("float32 x", "float32 y", "y = x", "pre4",
                             preamble="template <typename T> T f(T v) "
                             "{ return v; }")
    assert (e.value.field, e.value.column) == ("preamble", 1)


def test_sugar_names_in_one_context():
    ctx = hk.Context(plugins=[])
    x = np.ones(2, np.float32)
    k1 = hk.ElementwiseKernel("T x", "T y", "y = x * 2", context=ctx)
    # the same definition: the same kernel; another: refused, k1 unchanged
    k2 = hk.ElementwiseKernel("T x", "T y", "y = x * 2", context=ctx)
    np.testing.assert_array_equal(k2(x), x * 2)
    with pytest.raises(hk.KernelError, match="already the name of another "
                       "kernel made in this context") as e:
        hk.ElementwiseKernel("T x", "T y", "y = x * 3", context=ctx)
    assert e.value.field == "name"
    np.testing.assert_array_equal(k1(x), x * 2)


def test_list_kernels_is_hk_list_json():
    cli = os.environ.get("HK_CLI")
    if not cli:
        pytest.skip("HK_CLI (the hk command) not set")
    env = dict(os.environ, HK_PLUGIN_PATH="")
    env.pop("LD_PRELOAD", None)  # the sanitizer build's hk has its own
    printed = json.loads(subprocess.run([cli, "list", "--json"], env=env,
                                        check=True, capture_output=True,
                                        text=True).stdout)
    assert hk.list_kernels(plugins=[]) == printed


def test_threads_share_a_context(plugins):
    ctx = hk.Context(plugins=[plugins])
    k = ctx.kernel("saxpy")
    errors = []

    def work(seed):
        try:
            rng = np.random.default_rng(seed)
            x = rng.standard_normal(50000)
            for _ in range(20):
                y = np.zeros(50000)
                k(2.0, x, y)
                np.testing.assert_array_equal(y, 2 * x)
                np.testing.assert_array_equal(hk.add(x, y), 3 * x)
        except Exception as e:  # pragma: no cover
            errors.append(e)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors
    ctx.close()


def test_close_while_another_thread_calls():
    """close() waits for the call another thread runs without the GIL,
    and refuses new ones: the caller's next call is a ContextClosedError,
    not a crash."""
    ctx = hk.Context(plugins=[])
    k = hk.Kernel.from_json(json.dumps(SAXPY), context=ctx)
    x = np.ones(1 << 20)
    y = np.zeros(1 << 20)
    ended = []

    def caller():
        try:
            while True:
                k(1.0, x, y)
        except hk.ContextClosedError as e:
            ended.append(e)

    t = threading.Thread(target=caller)
    t.start()
    while not y.any():  # the caller is under way
        time.sleep(0.001)
    ctx.close()
    t.join()
    assert len(ended) == 1 and ctx.closed


def test_reload_switches_a_kernel_in_place(tmp_path):
    d = tmp_path / "plug"
    d.mkdir(mode=0o700)
    f = d / "scale.json"
    desc = {"schema_version": 1, "name": "scale", "kind": "elementwise",
            "params": [{"name": "x", "type": "f64", "role": "in"},
                       {"name": "y", "type": "f64", "role": "out"}],
            "body": "y = 2 * x;"}
    f.write_text(json.dumps(desc))
    ctx = hk.Context(plugins=[d], tier="jit")
    k = ctx.kernel("scale")
    x = np.arange(3.0)
    np.testing.assert_array_equal(k(x), 2 * x)
    f.write_text(json.dumps(dict(desc, body="y = 3 * x;")))
    (d / "neg2.json").write_text(json.dumps(dict(desc, name="neg2",
                                                 body="y = -x;")))
    ctx.reload()
    np.testing.assert_array_equal(k(x), 3 * x)       # the same handle
    np.testing.assert_array_equal(ctx.kernel("neg2")(x), -x)
    desc["params"][0]["type"] = desc["params"][1]["type"] = "f32"
    f.write_text(json.dumps(desc))                   # parameters changed
    ctx.reload()
    assert k(x.astype(np.float32)).dtype == np.float32


def test_raw_kernel_out_from_len():
    k = hk.Kernel.from_file(ROOT / "plugins" / "matvec.json")
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = k(a, np.ones(3, np.float32), 2, 3)     # y's len: rows
    np.testing.assert_array_equal(y, a.sum(axis=1))
    # an empty matrix is contiguous whatever its strides (NumPy says so too)
    e = np.zeros((3, 0), np.float32).T
    assert e.flags.c_contiguous
    assert k(e, np.ones(3, np.float32), 0, 3).shape == (0,)


def test_raw_kernel_scalars_and_shapes_from_lens():
    k = hk.Kernel.from_file(ROOT / "plugins" / "matvec.json")
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = np.ones(3, np.float32)
    # rows and cols from A's shape (its len: rows * cols) and x's
    np.testing.assert_array_equal(k(a, x), a.sum(axis=1))
    np.testing.assert_array_equal(k(A=a, x=x, rows=2), a.sum(axis=1))
    with pytest.raises(hk.ArgumentError,
                       match=r"give A with one axis per factor of its len, "
                             r"rows \* cols \(2 axes; it has 1\)"):
        k(a.ravel(), x)
    with pytest.raises(hk.ArgumentError,
                       match=r"'cols' is 3 by axis 1 of A \(2, 3\).* but 4 "
                             r"by axis 0 of x \(4,\)"):
        k(a, np.ones(4, np.float32))
    # a matmul's out is (BT, OC), its len BT * OC; every scalar inferred
    ctx = hk.Context(plugins=[ROOT / "plugins"], tier="jit")
    m = ctx.kernel("matmul_forward")
    rng = np.random.default_rng(1)
    i = rng.standard_normal((8, 16)).astype(np.float32)
    w = rng.standard_normal((5, 16)).astype(np.float32)
    b = rng.standard_normal(5).astype(np.float32)
    o = m(inp=i, weight=w, bias=b)
    assert o.shape == (8, 5)
    np.testing.assert_allclose(o, i @ w.T + b, rtol=1e-5, atol=1e-5)
    ctx.close()


def test_plugins_may_be_one_folder(plugins):
    for one in (str(plugins), plugins):
        ctx = hk.Context(plugins=one)
        assert not ctx.problems
        assert ctx.kernel("saxpy").name == "saxpy"
        ctx.close()
    names = {k["name"] for k in hk.list_kernels(plugins=str(plugins))}
    assert {"saxpy_f32", "huber_loss_f64"} <= names


def test_from_file_takes_what_libhk_takes(tmp_path):
    tmp_path.chmod(0o700)
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf" + (ROOT / "plugins" / "saxpy.json")
                    .read_bytes())
    assert hk.Kernel.from_file(bom).name == "saxpy"
    assert hk.Kernel.from_json(bom.read_text("utf-8")).name == "saxpy"
    cli = os.environ.get("HK_CLI")
    if not cli:
        pytest.skip("HK_CLI (the hk command) not set")
    so = tmp_path / "saxpy.so"
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)  # the sanitizer build's hk has its own
    subprocess.run([cli, "build", str(ROOT / "plugins" / "saxpy.json"), "-o",
                    str(so)], env=env, check=True, capture_output=True)
    k = hk.Kernel.from_file(so)
    assert (k.name, k.tier) == ("saxpy", "so")
    y = np.ones(3, np.float32)
    k(2.0, np.ones(3, np.float32), y)
    np.testing.assert_array_equal(y, [3, 3, 3])
